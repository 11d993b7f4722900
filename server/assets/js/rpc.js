// The connection to `ecsdb serve`: JSON-RPC 2.0 over one WebSocket (see docs/protocol.md).
// It authenticates with the token from the URL fragment, reconnects by itself with a capped
// backoff, re-subscribes live watches after a reconnect, and reports its state as events.

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

const REQUEST_TIMEOUT_MS = 30000;
const MAX_BACKOFF_MS = 5000;

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
    this.socket = null;
    this.nextId = 1;
    this.pending = new Map(); // id -> {resolve, reject, timer}
    this.waiting = []; // calls made while not connected: [send, reject]
    this.subscriptions = new Map(); // client id -> {text, params, onReset, onChange}
    this.attempt = 0;
    this.closedByUs = false;
  }

  start() {
    this.closedByUs = false;
    this.open();
  }

  /** Changes the token (from the page's form) and reconnects with it. */
  setToken(token) {
    this.token = token;
    this.attempt = 0;
    if (this.socket) this.socket.close();
    else this.open();
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.dispatchEvent(new CustomEvent('state', { detail: { state } }));
  }

  open() {
    let socket;
    try {
      socket = new WebSocket(this.url);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    let authed = false;
    socket.onopen = () => {
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'auth', params: { token: this.token } }));
    };
    socket.onmessage = (event) => {
      if (typeof event.data !== 'string') return;
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      if (!authed) {
        if (message.id === 0 && message.result) {
          authed = true;
          this.attempt = 0;
          this.setState('connected');
          this.flushWaiting();
          this.resubscribe();
          this.dispatchEvent(new Event('open'));
        } else if (message.id === 0 && message.error) {
          this.setState('unauthorized');
        }
        return;
      }
      this.receive(message);
    };
    socket.onclose = (event) => {
      if (this.socket === socket) this.socket = null;
      this.failPending(new RpcError(-1, 'connection lost'));
      if (event.code === 4401 || this.state === 'unauthorized') {
        this.setState('unauthorized');
        // A wrong token stays wrong: try again slowly, or at once after setToken().
        if (!this.closedByUs) this.reconnectTimer = setTimeout(() => this.open(), 10000);
        return;
      }
      if (!this.closedByUs) this.scheduleReconnect();
    };
    socket.onerror = () => {};
  }

  scheduleReconnect() {
    this.setState(this.attempt === 0 && this.state === 'connecting' ? 'connecting' : 'reconnecting');
    const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** this.attempt) * (0.75 + Math.random() * 0.5);
    this.attempt += 1;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => this.open(), delay);
  }

  receive(message) {
    if (Array.isArray(message)) {
      message.forEach((m) => this.receive(m));
      return;
    }
    if (message.method === 'changed' && message.params) {
      const sub = this.subscriptions.get(message.params.id);
      if (sub) sub.onChange(message.params);
      return;
    }
    const entry = this.pending.get(message.id);
    if (!entry) return;
    this.pending.delete(message.id);
    clearTimeout(entry.timer);
    if (message.error) {
      const { code, message: text, data } = message.error;
      entry.reject(new RpcError(code, text, data));
    } else {
      entry.resolve(message.result);
    }
  }

  flushWaiting() {
    const waiting = this.waiting;
    this.waiting = [];
    waiting.forEach(([send]) => send());
  }

  failPending(error) {
    for (const entry of this.pending.values()) {
      clearTimeout(entry.timer);
      entry.reject(error);
    }
    this.pending.clear();
  }

  /** Calls `method` with named `params`; resolves with the result or rejects with an RpcError. */
  call(method, params = {}) {
    return new Promise((resolve, reject) => {
      const send = () => {
        const id = this.nextId++;
        const timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new RpcError(-2, `${method}: no answer in ${REQUEST_TIMEOUT_MS / 1000} s`));
        }, REQUEST_TIMEOUT_MS);
        this.pending.set(id, { resolve, reject, timer });
        this.socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      };
      if (this.state === 'connected' && this.socket && this.socket.readyState === WebSocket.OPEN) send();
      else this.waiting.push([send, reject]);
    });
  }

  /**
   * Subscribes to `text`. `onReset(result)` gets the whole result now and again after every
   * reconnect; `onChange(params)` gets each `changed` notification.
   */
  async subscribe(id, text, params, onReset, onChange) {
    const sub = { text, params, onReset, onChange };
    this.subscriptions.set(id, sub);
    try {
      const result = await this.call('subscribe', { id, text, params });
      sub.live = true;
      if (this.subscriptions.get(id) === sub) onReset(result);
      return result;
    } catch (error) {
      if (this.subscriptions.get(id) === sub) this.subscriptions.delete(id);
      throw error;
    }
  }

  async unsubscribe(id) {
    if (!this.subscriptions.delete(id)) return;
    if (this.state === 'connected') await this.call('unsubscribe', { id }).catch(() => {});
  }

  resubscribe() {
    for (const [id, sub] of this.subscriptions) {
      // One still waiting for its first answer is sent by flushWaiting().
      if (!sub.live) continue;
      this.call('subscribe', { id, text: sub.text, params: sub.params })
        .then((result) => {
          if (this.subscriptions.get(id) === sub) sub.onReset(result);
        })
        .catch(() => this.subscriptions.delete(id));
    }
  }
}

function defaultSocketUrl() {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}/ws`;
}
