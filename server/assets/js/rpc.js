// The connection to `ecsdb serve`: JSON-RPC 2.0 over one WebSocket (see docs/protocol.md).
// The socket itself lives in a worker (rpc-worker.js), which authenticates with the token from
// the URL fragment, reconnects by itself with a capped backoff, re-subscribes live watches after
// a reconnect and parses every message, so big notifications never stall typing. This class is
// the page's side: calls as promises, watches as frames of the rows in sight, state as events.

/** A JSON-RPC error answer: `code`, `message` and the server's `data` (kind, line, column, hint). */
export class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data ?? null;
  }
}

/** Error codes of the protocol the page reacts to. */
export const CODES = { unauthorized: -32001, readOnly: -32003, limit: -32004, statement: -32000 };

/** Reads `token` from a fragment like `#token=abc` (other `&`-separated keys are ignored). */
export function tokenFromHash(hash) {
  const params = new URLSearchParams(String(hash || '').replace(/^#/, ''));
  return params.get('token') || '';
}

/**
 * One logical connection. Events (`EventTarget`):
 * - `state`: `detail = {state}` with state `connecting | connected | reconnecting | unauthorized`;
 * - `open`: after each successful auth (first connect and every reconnect).
 */
export class Connection extends EventTarget {
  constructor(token, url = defaultSocketUrl()) {
    super();
    this.token = token;
    this.url = url;
    this.state = 'connecting';
    this.nextRef = 1;
    this.pending = new Map(); // ref -> {resolve, reject}
    this.watches = new Map(); // subscription id -> onFrame
    this.worker = new Worker(new URL('./rpc-worker.js', import.meta.url), { type: 'module' });
    this.worker.onmessage = (event) => this.receive(event.data);
  }

  start() {
    this.worker.postMessage({ op: 'start', url: this.url, token: this.token });
  }

  /** Changes the token (from the page's form) and reconnects with it. */
  setToken(token) {
    this.token = token;
    this.worker.postMessage({ op: 'token', url: this.url, token });
  }

  /** Closes the socket as a dropped connection would (the tests' way to check reconnects). */
  drop() {
    this.worker.postMessage({ op: 'drop' });
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.dispatchEvent(new CustomEvent('state', { detail: { state } }));
  }

  receive(message) {
    if (message.op === 'frame') {
      this.watches.get(message.id)?.(message);
    } else if (message.op === 'reply') {
      const entry = this.pending.get(message.ref);
      if (!entry) return;
      this.pending.delete(message.ref);
      if (message.error) entry.reject(new RpcError(message.error.code, message.error.message, message.error.data));
      else entry.resolve(message.result);
    } else if (message.op === 'state') {
      this.setState(message.state);
    } else if (message.op === 'open') {
      this.dispatchEvent(new Event('open'));
    }
  }

  /** Posts `message` with a fresh `ref`; resolves with the reply's result or rejects with an RpcError. */
  ask(message) {
    return new Promise((resolve, reject) => {
      const ref = this.nextRef++;
      this.pending.set(ref, { resolve, reject });
      this.worker.postMessage({ ...message, ref });
    });
  }

  /** Calls `method` with named `params` (sent once connected; 30 s to answer after that). */
  call(method, params = {}) {
    return this.ask({ op: 'call', method, params });
  }

  /**
   * Subscribes to `text`; resolves with `{tick, columns, total}`. The rows come to
   * `onFrame({columns, total, tick, updates, first, rows: [{key, row, seq, age}]})`: the rows
   * from `first` that the last `viewport()` asked for, after the first answer, after every
   * reconnect and after changes. The next frame waits for `ack(id)`.
   */
  async subscribe(id, text, params, onFrame) {
    this.watches.set(id, onFrame);
    try {
      return await this.ask({ op: 'subscribe', id, text, params });
    } catch (error) {
      if (this.watches.get(id) === onFrame) this.watches.delete(id);
      throw error;
    }
  }

  /** Which rows of watch `id` the page shows. */
  viewport(id, first, count) {
    this.worker.postMessage({ op: 'viewport', id, first, count });
  }

  /** The page has drawn watch `id`'s last frame: the next one may come. */
  ack(id) {
    this.worker.postMessage({ op: 'ack', id });
  }

  unsubscribe(id) {
    this.watches.delete(id);
    this.worker.postMessage({ op: 'unsubscribe', id });
  }

  /** perf.js: the worker applies `messages` (notification texts) to watch `id` at `hz`. */
  simulate(id, onFrame, options) {
    if (onFrame) this.watches.set(id, onFrame);
    else this.watches.delete(id);
    this.worker.postMessage({ op: 'simulate', id, ...options });
  }
}

function defaultSocketUrl() {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}/ws`;
}
