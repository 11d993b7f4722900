// The WebSocket side of the connection, run in a dedicated worker (started by rpc.js) so that
// the page's main thread never parses a message. A 10,000-row watch at 10 Hz is about 5 MB of
// JSON a second: here it is parsed and merged into each watch's rows, and the page only gets
// answers to its own calls and, for a watch, the rows in sight (one frame at a time).
//
// Messages from the page (`op`): start, token, call, subscribe, unsubscribe, viewport, ack,
// drop, simulate. Messages to the page: state, open, reply, frame.
//
// Messages are read and written by json.js, so integers beyond 2^53 reach the page as BigInt
// (structured clone carries them) and the page's BigInt parameters go out with every digit.

import { parseJson, stringifyJson, sameJson } from './json.js';

const REQUEST_TIMEOUT_MS = 30000;
const MAX_BACKOFF_MS = 5000;
/** Rows sent before the page has said how many it shows (about a screenful). */
const DEFAULT_VIEW = 64;

let url = '';
let token = '';
let socket = null;
let authed = false;
let state = 'connecting';
let attempt = 0;
let reconnectTimer = null;
let nextId = 1;
/** Requests by JSON-RPC id: `{ref}` for the page's calls, `{sub}` for subscribes; `sent` once on the wire. */
const requests = new Map();
/** Subscriptions by their client id. */
const subs = new Map();

const post = (message) => self.postMessage(message);

function setState(next) {
  if (state === next) return;
  state = next;
  post({ op: 'state', state });
}

function open() {
  clearTimeout(reconnectTimer);
  authed = false;
  let ws;
  try {
    ws = new WebSocket(url);
  } catch {
    scheduleReconnect();
    return;
  }
  socket = ws;
  ws.onopen = () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'auth', params: { token } }));
  ws.onmessage = (event) => {
    if (typeof event.data !== 'string') return;
    let message;
    try {
      message = parseJson(event.data);
    } catch {
      return;
    }
    if (socket !== ws) return;
    if (authed) receive(message);
    else if (message.id === 0 && message.result) authenticated();
    else if (message.id === 0 && message.error) setState('unauthorized');
  };
  ws.onclose = (event) => {
    if (socket !== ws) return;
    socket = null;
    authed = false;
    failSent({ code: -1, message: 'connection lost' });
    if (event.code === 4401 || state === 'unauthorized') {
      setState('unauthorized');
      // A wrong token stays wrong: try again slowly, or at once after a new token.
      reconnectTimer = setTimeout(open, 10000);
      return;
    }
    scheduleReconnect();
  };
  ws.onerror = () => {};
}

function authenticated() {
  authed = true;
  attempt = 0;
  setState('connected');
  // Calls made while disconnected go now; live watches are subscribed again.
  for (const [id, request] of requests) if (!request.sent) transmit(id, request);
  for (const sub of subs.values()) if (sub.live) request('subscribe', sub.subscribeParams(), { sub });
  post({ op: 'open' });
}

function scheduleReconnect() {
  setState(attempt === 0 && state === 'connecting' ? 'connecting' : 'reconnecting');
  const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** attempt) * (0.75 + Math.random() * 0.5);
  attempt += 1;
  clearTimeout(reconnectTimer);
  reconnectTimer = setTimeout(open, delay);
}

/** Sends a request now when authenticated, otherwise when the connection comes back. */
function request(method, params, target) {
  const id = nextId++;
  const entry = { ...target, method, text: stringifyJson({ jsonrpc: '2.0', id, method, params }), sent: false };
  requests.set(id, entry);
  if (authed && socket?.readyState === WebSocket.OPEN) transmit(id, entry);
}

function transmit(id, entry) {
  entry.sent = true;
  entry.timer = setTimeout(() => settle(id, { error: { code: -2, message: `${entry.method}: no answer in ${REQUEST_TIMEOUT_MS / 1000} s` } }), REQUEST_TIMEOUT_MS);
  socket.send(entry.text);
}

/** Requests already on a connection that closed will never be answered. */
function failSent(error) {
  for (const [id, entry] of requests) if (entry.sent) settle(id, { error });
}

function receive(message) {
  if (Array.isArray(message)) {
    message.forEach(receive);
    return;
  }
  if (message.method === 'changed' && message.params) {
    subs.get(message.params.id)?.change(message.params);
    return;
  }
  settle(message.id, message);
}

/** Ends request `id` with an answer `{result}` or `{error}`. */
function settle(id, answer) {
  const entry = requests.get(id);
  if (!entry) return;
  requests.delete(id);
  clearTimeout(entry.timer);
  const { sub, ref } = entry;
  if (sub && subs.get(sub.id) === sub) {
    // A live watch whose re-subscribe died with the connection is tried again on the next one.
    if (answer.error && !(sub.live && answer.error.code === -1)) subs.delete(sub.id);
    else if (!answer.error) sub.reset(answer.result);
  }
  if (ref === undefined) return;
  if (answer.error) post({ op: 'reply', ref, error: answer.error });
  // A subscribe's answer is the whole result: the page gets its size, the rows come as frames.
  else post({ op: 'reply', ref, result: sub ? sub.summary() : answer.result });
}

/**
 * One watch: its rows keyed by entity (by position when the first column is not `entity`), the
 * slice the page shows, and flow control (one frame in flight until the page acknowledges it).
 */
class Subscription {
  constructor(id, text, params) {
    this.id = id;
    this.text = text;
    this.params = params;
    this.live = false;
    this.columns = [];
    this.keyed = false;
    this.keys = []; // row order
    this.rows = new Map(); // key -> {row, changedAt, seq}
    this.seq = 0; // bumped on every put: the page redraws a row only when its seq changed
    this.tick = 0;
    this.updates = 0;
    this.work = 0; // ms spent parsing and merging notifications (reported for perf.js)
    this.first = 0;
    this.count = DEFAULT_VIEW;
    this.dirty = false;
    this.inFlight = false;
  }

  subscribeParams() {
    return { id: this.id, text: this.text, params: this.params };
  }

  summary() {
    return { tick: this.tick, columns: this.columns, total: this.keys.length };
  }

  /** The whole result (first answer, and again after a reconnect). */
  reset(result) {
    this.live = true;
    this.columns = result.columns || [];
    this.keyed = this.columns[0] === 'entity';
    this.rows = new Map();
    this.keys = [];
    (result.rows || []).forEach((row, i) => this.put(this.keyed ? row[0] : i, row, 0));
    this.tick = result.tick;
    this.inFlight = false;
    this.touch();
  }

  put(key, row, changedAt) {
    if (!this.rows.has(key)) this.keys.push(key);
    this.rows.set(key, { row, changedAt, seq: ++this.seq });
  }

  /** One `changed` notification: upserts and removals by entity, or a whole new result. */
  change(params) {
    const now = performance.now();
    this.tick = params.tick;
    this.updates += 1;
    if (params.rows) {
      // The whole new result: rows that did not change keep their entry (not redrawn, not flashed).
      const old = this.rows;
      this.rows = new Map();
      this.keys = [];
      params.rows.forEach((row, i) => {
        const key = this.keyed ? row[0] : i;
        const before = old.get(key);
        if (before && sameJson(before.row, row)) {
          this.keys.push(key);
          this.rows.set(key, before);
        } else {
          this.put(key, row, now);
        }
      });
    } else {
      for (const row of params.upserted || []) this.put(row[0], row, now);
      if (params.removed?.length) {
        const gone = new Set(params.removed);
        for (const key of gone) this.rows.delete(key);
        this.keys = this.keys.filter((k) => !gone.has(k));
      }
    }
    this.touch();
  }

  view(first, count) {
    this.first = first;
    this.count = count;
    this.touch();
  }

  touch() {
    this.dirty = true;
    this.push();
  }

  /** Sends the rows in sight when something changed and the page has drawn the last frame. */
  push() {
    if (!this.live || !this.dirty || this.inFlight || subs.get(this.id) !== this) return;
    this.dirty = false;
    this.inFlight = true;
    const now = performance.now();
    const first = Math.min(this.first, Math.max(0, this.keys.length - this.count));
    const rows = [];
    for (let i = first; i < Math.min(this.keys.length, first + this.count); i++) {
      const key = this.keys[i];
      const entry = this.rows.get(key);
      // The age rather than the time: the page's clock has another origin.
      rows.push({ key, row: entry.row, seq: entry.seq, age: entry.changedAt ? now - entry.changedAt : null });
    }
    post({ op: 'frame', id: this.id, columns: this.columns, total: this.keys.length, tick: this.tick, updates: this.updates, work: this.work, first, rows });
  }
}

/** perf.js: notifications made by the page (JSON texts), parsed and applied here at `hz`. */
let simulation = null;
function simulate({ id, result, messages, hz }) {
  clearInterval(simulation);
  if (!messages) return;
  const sub = new Subscription(id, '', {});
  subs.set(id, sub);
  sub.reset(result);
  if (!hz) return;
  let n = 0;
  simulation = setInterval(() => {
    const t0 = performance.now();
    receive(parseJson(messages[n++ % messages.length]));
    sub.work += performance.now() - t0;
  }, 1000 / hz);
}

const handlers = {
  start(m) {
    url = m.url;
    token = m.token;
    open();
  },
  // A new token from the page's form (maybe before any start): a fresh socket at once.
  token(m) {
    url = m.url;
    token = m.token;
    attempt = 0;
    const old = socket;
    socket = null; // its close must not schedule a reconnect of its own
    if (old) {
      old.close();
      failSent({ code: -1, message: 'connection lost' });
    }
    open();
  },
  call(m) {
    request(m.method, m.params, { ref: m.ref });
  },
  subscribe(m) {
    const sub = new Subscription(m.id, m.text, m.params);
    subs.set(m.id, sub);
    request('subscribe', sub.subscribeParams(), { ref: m.ref, sub });
  },
  unsubscribe(m) {
    if (subs.delete(m.id) && authed) request('unsubscribe', { id: m.id }, {});
  },
  viewport(m) {
    subs.get(m.id)?.view(m.first, m.count);
  },
  ack(m) {
    const sub = subs.get(m.id);
    if (!sub) return;
    sub.inFlight = false;
    sub.push();
  },
  // Tests: closes the socket as a dropped connection would.
  drop() {
    socket?.close();
  },
  simulate,
};

self.onmessage = (event) => handlers[event.data.op]?.(event.data);
