// The watch view: subscribes to a query and keeps its rows current. The rows themselves live in
// the connection's worker (rpc-worker.js), which parses and merges the notifications; this view
// tells it which rows are in sight and draws the frames it sends back, at most one per animation
// frame (a virtual table), so 10,000 rows changing ten times a second never block typing.

import { $, h, frameBatcher } from './dom.js';
import { setCell } from './values.js';
import { errorNodes } from './query.js';

const ROW_HEIGHT = 26; // px, as --row-h in style.css
const OVERSCAN = 8;
const FLASH_MS = 1200;

let nextWatchId = 1;

export class WatchView {
  constructor(app) {
    this.app = app;
    this.tick = 0;
    this.unacked = false;
    this.attach(null);
    this.scheduleRender = frameBatcher(() => this.render());
    this.scroll = $('watch-scroll');
    this.scroll.addEventListener('scroll', () => this.scheduleRender());
    new ResizeObserver(() => this.scheduleRender()).observe(this.scroll);
    $('watch-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.start($('watch-input').value.trim());
    });
    $('watch-stop').addEventListener('click', () => this.stop());
    // Rows are redrawn in place, so entity links are handled once, here.
    $('watch-table').addEventListener('click', (e) => {
      const link = e.target.closest('button.ent-link');
      if (link) this.app.openEntity(link.textContent);
    });
  }

  async start(text) {
    if (!text) return;
    this.stop();
    $('watch-error').hidden = true;
    const id = `watch-${nextWatchId++}`;
    this.attach(id);
    $('watch-status').textContent = 'subscribing…';
    try {
      await this.app.conn.subscribe(id, text, {}, (frame) => this.receive(frame));
      if (this.subId === id) $('watch-stop').disabled = false;
    } catch (error) {
      if (this.subId !== id) return;
      this.subId = null;
      $('watch-status').textContent = '';
      const box = $('watch-error');
      box.replaceChildren(...errorNodes(error, text));
      box.hidden = false;
    }
  }

  stop() {
    if (!this.subId) return;
    const id = this.subId;
    this.subId = null;
    $('watch-stop').disabled = true;
    $('watch-status').textContent = 'stopped';
    this.app.conn.unsubscribe(id);
  }

  /** Starts showing subscription `id` (its frames arrive through receive()). */
  attach(id) {
    this.subId = id;
    this.frame = null; // the last frame from the worker: rows from `first`
    this.columns = [];
    this.total = 0;
    this.updates = 0;
    this.view = { first: -1, count: 0 }; // the rows last asked for
    this.renderHead();
  }

  /** The number of rows the watch has (they are in the worker; this page holds a screenful). */
  get rowCount() {
    return this.total;
  }

  /** A frame from the worker: the watch's size and the rows in sight. */
  receive(frame) {
    if (frame.id !== this.subId) return;
    const now = performance.now();
    if (frame.columns.join('\u0000') !== this.columns.join('\u0000')) {
      this.columns = frame.columns;
      this.renderHead();
    }
    // The worker sends ages (its clock has another origin); flashes are timed on this one.
    for (const r of frame.rows) r.changedAt = r.age === null ? 0 : now - r.age;
    this.frame = frame;
    this.unacked = true;
    this.total = frame.total;
    this.tick = frame.tick;
    this.updates = frame.updates;
    this.status();
    this.scheduleRender();
  }

  status() {
    $('watch-status').textContent = `${this.total.toLocaleString('en-US')} rows · tick ${this.tick} · ${this.updates} update${this.updates === 1 ? '' : 's'}`;
  }

  renderHead() {
    const table = $('watch-table');
    table.tHead.replaceChildren(h('tr', {}, this.columns.map((c) => h('th', { scope: 'col' }, c))));
    table.tBodies[0].replaceChildren();
    this.headHeight = 0;
  }

  /**
   * Draws the last frame's rows, reusing the row elements: a row whose key and version did not
   * change is not touched. Asks the worker for other rows when the scroll moved, acknowledges
   * the frame, and keeps drawing while some rows are still flashing.
   */
  render() {
    // Hidden: no drawing and no acknowledgement, so the worker sends nothing until shown again.
    if ($('panel-watch').hidden) return;
    const table = $('watch-table');
    if (!this.headHeight) this.headHeight = table.tHead.offsetHeight;
    $('watch-spacer').style.height = `${(this.headHeight || ROW_HEIGHT) + this.total * ROW_HEIGHT}px`;
    const first = Math.max(0, Math.floor(this.scroll.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const count = Math.ceil(this.scroll.clientHeight / ROW_HEIGHT) + 2 * OVERSCAN;
    if (this.subId && (first !== this.view.first || count !== this.view.count)) {
      this.view = { first, count };
      this.app.conn.viewport(this.subId, first, count);
    }
    const frame = this.frame;
    const rows = frame ? frame.rows : [];
    table.style.transform = `translateY(${(frame ? frame.first : 0) * ROW_HEIGHT}px)`;
    const schema = this.app.schema;
    const types = this.columns.map((c) => (schema ? schema.columnType(c) : c === 'entity' ? 'entity' : undefined));
    const body = table.tBodies[0];
    while (body.rows.length < rows.length) body.append(document.createElement('tr'));
    while (body.rows.length > rows.length) body.lastElementChild.remove();
    const now = performance.now();
    let flashing = false;
    rows.forEach((entry, i) => {
      const tr = body.rows[i];
      if (tr.key !== entry.key || tr.seq !== entry.seq) {
        tr.key = entry.key;
        tr.seq = entry.seq;
        tr.dataset.key = String(entry.key);
        while (tr.cells.length < entry.row.length) tr.append(document.createElement('td'));
        while (tr.cells.length > entry.row.length) tr.lastElementChild.remove();
        entry.row.forEach((v, c) => setCell(tr.cells[c], v, types[c]));
      }
      const age = now - entry.changedAt;
      if (entry.changedAt && age < FLASH_MS) {
        flashing = true;
        tr.classList.add('changed');
        tr.style.background = `rgba(242, 184, 75, ${(0.4 * (1 - age / FLASH_MS)).toFixed(3)})`;
      } else if (tr.classList.contains('changed')) {
        tr.classList.remove('changed');
        tr.style.background = '';
      }
    });
    if (this.unacked && this.subId) {
      this.unacked = false;
      this.app.conn.ack(this.subId);
    }
    if (flashing) this.scheduleRender();
  }
}
