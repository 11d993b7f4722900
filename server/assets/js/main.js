// The inspector's entry point: connects, keeps the schema and stats fresh, and wires the
// views (query, entities, watch, stats) and the tabs together.

import { $, formatCount, formatBytes, formatMs } from './dom.js';
import { Connection, RpcError, CODES, tokenFromHash } from './rpc.js';
import { SchemaModel, renderSchema } from './schema.js';
import { Editor } from './editor.js';
import { QueryView } from './query.js';
import { EntityBrowser } from './entities.js';
import { WatchView } from './watch.js';
import { StatsView } from './stats.js';

const SCHEMA_EVERY_MS = 2000;
const STATS_EVERY_MS = 1000;
const TABS = ['query', 'entities', 'watch', 'stats'];

class App {
  constructor() {
    this.schema = null;
    this.stats = null;
    this.writable = null; // unknown until the server tells
    const token = tokenFromHash(location.hash);
    this.conn = new Connection(token);
    this.conn.addEventListener('state', () => this.renderConnection());
    this.conn.addEventListener('open', () => this.connected());

    this.editor = new Editor({ onRun: () => this.queryView.run(), getSchema: () => this.schema });
    this.queryView = new QueryView(this, this.editor);
    this.entities = new EntityBrowser(this);
    this.watch = new WatchView(this);
    this.statsView = new StatsView(this);
    this.setupTabs();
    $('schema-filter').addEventListener('input', () => this.renderSchema());
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const value = $('token-input').value.trim();
      if (!value) return;
      history.replaceState(null, '', `#token=${encodeURIComponent(value)}`);
      $('token-banner').hidden = true;
      this.conn.setToken(value);
    });

    if (!token) {
      $('token-banner').hidden = false;
      this.setConnText('no token', 'no-token');
    } else {
      this.conn.start();
    }
    setInterval(() => this.pollSchema(), SCHEMA_EVERY_MS);
    setInterval(() => this.pollStats(), STATS_EVERY_MS);
  }

  async connected() {
    await Promise.all([this.pollSchema(true), this.pollStats(true)]);
    await this.detectWritable();
  }

  /**
   * Whether `exec` is allowed. A server that reports `writable` in its schema answer is
   * believed; otherwise an `exec` of a statement that cannot parse tells without changing
   * anything: -32003 on a read-only server, a statement error on a writable one.
   */
  async detectWritable() {
    if (typeof this.schema?.raw?.writable === 'boolean') {
      this.setWritable(this.schema.raw.writable);
      return;
    }
    try {
      await this.conn.call('exec', { text: 'SELECT' });
      this.setWritable(true);
    } catch (error) {
      if (error instanceof RpcError && error.code === CODES.readOnly) this.setWritable(false);
      else if (error instanceof RpcError && error.code === CODES.statement) this.setWritable(true);
    }
  }

  setWritable(writable) {
    if (this.writable === writable) return;
    this.writable = writable;
    this.renderConnection();
    if (this.entities.viewData) this.entities.renderView(this.entities.viewData, null);
  }

  renderConnection() {
    const state = this.conn.state;
    const text = {
      connecting: 'connecting…',
      connected: 'connected',
      reconnecting: 'reconnecting…',
      unauthorized: 'token refused',
    }[state] || state;
    this.setConnText(text, state);
    if (state === 'unauthorized') $('token-banner').hidden = false;
  }

  setConnText(text, state) {
    $('conn').dataset.state = state;
    $('conn-text').textContent = text;
    const mode = $('conn-mode');
    const known = state === 'connected' && this.writable !== null;
    mode.hidden = !known;
    if (known) {
      mode.textContent = this.writable ? 'writable' : 'read-only';
      mode.classList.toggle('writable', this.writable);
      mode.title = this.writable ? 'This server accepts changes (exec).' : 'Start the server with --allow-writes to change the world.';
    }
  }

  async pollSchema(force = false) {
    if (this.conn.state !== 'connected' || (this.schemaBusy && !force) || (document.hidden && !force)) return;
    this.schemaBusy = true;
    try {
      const result = await this.conn.call('schema');
      this.schema = new SchemaModel(result);
      this.renderSchema();
      this.entities.schemaChanged(this.schema);
      this.editor.render();
    } catch {
      // The next poll tries again; connection trouble shows in the status.
    } finally {
      this.schemaBusy = false;
    }
  }

  async pollStats(force = false) {
    if (this.conn.state !== 'connected' || (this.statsBusy && !force)) return;
    this.statsBusy = true;
    try {
      const stats = await this.conn.call('stats');
      this.stats = stats;
      $('fact-tick').textContent = formatCount(stats.tick);
      $('fact-entities').textContent = formatCount(stats.entities);
      $('fact-tables').textContent = formatCount(stats.tables);
      $('fact-tickms').textContent = stats.tick_ms?.last === null || stats.tick_ms?.last === undefined ? '–' : formatMs(stats.tick_ms.last);
      $('fact-memory').textContent = formatBytes(stats.memory_bytes);
      this.statsView.add(stats);
    } catch {
      // As above.
    } finally {
      this.statsBusy = false;
    }
  }

  renderSchema() {
    if (!this.schema) return;
    renderSchema(this.schema, this.stats, $('schema-filter').value, {
      browse: (component) => {
        this.selectTab('entities');
        this.entities.browse(component);
      },
      query: (component) => {
        this.selectTab('query');
        const fields = this.schema.fieldsOf.get(component) || [];
        this.editor.text = `SELECT entity${fields.map((f) => `, ${component}.${f}`).join('')} FROM ${component}`;
        this.queryView.run();
      },
    });
  }

  /** After this page changed the world: fresh schema (counts) at once. */
  afterWrite() {
    this.pollSchema(true);
  }

  /** Shows entity `id` in the entity view. */
  openEntity(id) {
    this.selectTab('entities');
    this.entities.open(id);
  }

  setupTabs() {
    const list = document.querySelector('[role="tablist"]');
    for (const name of TABS) $(`tab-${name}`).addEventListener('click', () => this.selectTab(name));
    list.addEventListener('keydown', (e) => {
      const i = TABS.findIndex((n) => $(`tab-${n}`) === document.activeElement);
      if (i < 0) return;
      let next = null;
      if (e.key === 'ArrowRight') next = TABS[(i + 1) % TABS.length];
      if (e.key === 'ArrowLeft') next = TABS[(i - 1 + TABS.length) % TABS.length];
      if (e.key === 'Home') next = TABS[0];
      if (e.key === 'End') next = TABS[TABS.length - 1];
      if (next) {
        e.preventDefault();
        this.selectTab(next);
        $(`tab-${next}`).focus();
      }
    });
  }

  selectTab(name) {
    for (const n of TABS) {
      const selected = n === name;
      $(`tab-${n}`).setAttribute('aria-selected', String(selected));
      $(`tab-${n}`).tabIndex = selected ? 0 : -1;
      $(`panel-${n}`).hidden = !selected;
    }
    if (name === 'entities') this.entities.shown();
    if (name === 'stats') this.statsView.render();
    if (name === 'watch') this.watch.scheduleRender();
  }
}

window.inspector = new App();
