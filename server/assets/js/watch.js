// The watch view: subscribes to a query over the WebSocket and keeps its rows current.
// Notifications only touch a model (a Map keyed by entity, or the whole row list); the DOM is
// redrawn at most once per animation frame and only for the rows in sight (a virtual table),
// so 10,000 rows changing ten times a second never block typing.

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
    this.subId = null;
    this.columns = [];
    this.keys = []; // row order
    this.rows = new Map(); // key -> {row, changedAt}
    this.keyed = false;
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
    await this.stop();
    $('watch-error').hidden = true;
    const id = `watch-${nextWatchId++}`;
    this.subId = id;
    this.updates = 0;
    $('watch-status').textContent = 'subscribing…';
    try {
      await this.app.conn.subscribe(id, text, {}, (result) => this.reset(result), (change) => this.change(change));
      $('watch-stop').disabled = false;
    } catch (error) {
      if (this.subId === id) this.subId = null;
      $('watch-status').textContent = '';
      const box = $('watch-error');
      box.replaceChildren(...errorNodes(error, text));
      box.hidden = false;
    }
  }

  async stop() {
    if (!this.subId) return;
    const id = this.subId;
    this.subId = null;
    $('watch-stop').disabled = true;
    $('watch-status').textContent = 'stopped';
    await this.app.conn.unsubscribe(id);
  }

  /** The whole result (first answer, and again after a reconnect). */
  reset(result) {
    this.columns = result.columns || [];
    this.keyed = this.columns[0] === 'entity';
    this.rows = new Map();
    this.keys = [];
    (result.rows || []).forEach((row, i) => this.put(this.keyed ? row[0] : i, row, 0));
    this.tick = result.tick;
    this.renderHead();
    this.status();
    this.scheduleRender();
  }

  put(key, row, changedAt) {
    if (!this.rows.has(key)) this.keys.push(key);
    this.rows.set(key, { row, changedAt });
  }

  /** One `changed` notification: upserts and removals by entity, or a whole new result. */
  change(params) {
    const now = performance.now();
    this.tick = params.tick;
    this.updates += 1;
    if (params.rows) {
      // The whole new result: keep the rows that did not change unflashed.
      const old = this.rows;
      this.rows = new Map();
      this.keys = [];
      params.rows.forEach((row, i) => {
        const key = this.keyed ? row[0] : i;
        const before = old.get(key);
        const same = before && JSON.stringify(before.row) === JSON.stringify(row);
        this.put(key, row, same ? before.changedAt : now);
      });
    } else {
      for (const row of params.upserted || []) this.put(row[0], row, now);
      if (params.removed?.length) {
        const gone = new Set(params.removed);
        for (const key of gone) this.rows.delete(key);
        this.keys = this.keys.filter((k) => !gone.has(k));
      }
    }
    this.status();
    this.scheduleRender();
  }

  status() {
    $('watch-status').textContent = `${this.keys.length.toLocaleString('en-US')} rows · tick ${this.tick} · ${this.updates} update${this.updates === 1 ? '' : 's'}`;
  }

  renderHead() {
    const table = $('watch-table');
    table.tHead.replaceChildren(h('tr', {}, this.columns.map((c) => h('th', { scope: 'col' }, c))));
    table.tBodies[0].replaceChildren();
    this.headHeight = 0;
  }

  /**
   * Draws the rows in sight, reusing the row elements: a row whose entry did not change since
   * the last frame is not touched. Keeps drawing while some rows are still flashing.
   */
  render() {
    const table = $('watch-table');
    if (!this.headHeight) this.headHeight = table.tHead.offsetHeight;
    $('watch-spacer').style.height = `${(this.headHeight || ROW_HEIGHT) + this.keys.length * ROW_HEIGHT}px`;
    const top = this.scroll.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const count = Math.ceil(this.scroll.clientHeight / ROW_HEIGHT) + 2 * OVERSCAN;
    const last = Math.min(this.keys.length, first + count);
    table.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    const schema = this.app.schema;
    const types = this.columns.map((c) => (schema ? schema.columnType(c) : c === 'entity' ? 'entity' : undefined));
    const body = table.tBodies[0];
    while (body.rows.length < last - first) body.append(document.createElement('tr'));
    while (body.rows.length > Math.max(0, last - first)) body.lastElementChild.remove();
    const now = performance.now();
    let flashing = false;
    for (let i = first; i < last; i++) {
      const tr = body.rows[i - first];
      const entry = this.rows.get(this.keys[i]);
      if (tr.entry !== entry) {
        tr.entry = entry;
        tr.dataset.key = String(this.keys[i]);
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
    }
    if (flashing) this.scheduleRender();
  }
}
