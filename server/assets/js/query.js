// The query view: runs the editor's statement (read-only ones through `query`, a page at a
// time; everything else through `exec`), shows rows, errors with a caret, EXPLAIN plans, and
// downloads results.

import { $, h, toast } from './dom.js';
import { RpcError, CODES } from './rpc.js';
import { leadingKeyword, hasTopLevelLimit, isScript, stripTrailingSemicolon, withoutLeadingWord, NO_LANGUAGE } from './lexer.js';
import { valueCell, toCsv, download } from './values.js';
import { stringifyJson } from './json.js';

const PAGE_SIZE = 100;
/** The most rows a download asks for (it is an explicit request for more than a page). */
const DOWNLOAD_LIMIT = 100000;
/** Statements that only read, by their first keyword ('': a bare term list); `query` runs them. */
const READ_ONLY = new Set(['SELECT', 'EXPLAIN', 'SHOW', 'DESCRIBE', '']);

export class QueryView {
  constructor(app, editor) {
    this.app = app;
    this.editor = editor;
    this.page = 0;
    this.last = null; // {text, mode, columns, rows, hasMore, clientRows?}
    $('run-query').addEventListener('click', () => this.run());
    $('explain-query').addEventListener('click', () => this.explain());
    $('result-prev').addEventListener('click', () => this.showPage(this.page - 1));
    $('result-next').addEventListener('click', () => this.showPage(this.page + 1));
    $('download-json').addEventListener('click', () => this.download('json'));
    $('download-csv').addEventListener('click', () => this.download('csv'));
  }

  /** Runs the editor's text from its first page. */
  async run() {
    const text = this.editor.text.trim();
    if (!text) return;
    this.editor.remember(text);
    this.clearError();
    $('explain-view').hidden = true;
    const keyword = leadingKeyword(text, this.app.schema?.language ?? NO_LANGUAGE);
    if (isScript(text) || !READ_ONLY.has(keyword)) {
      await this.exec(text);
      return;
    }
    this.last = { text, keyword };
    await this.showPage(0);
  }

  /** Fetches and shows page `page` of the current read-only statement. */
  async showPage(page) {
    if (!this.last || page < 0) return;
    const { text, keyword } = this.last;
    const started = performance.now();
    this.setStatus('running…');
    try {
      let columns;
      let rows;
      let hasMore;
      let truncated = false;
      if (keyword === 'SELECT' && !hasTopLevelLimit(text)) {
        // Ask the server for just this page (one extra row tells whether there is another).
        const paged = `${stripTrailingSemicolon(text)}\nLIMIT ${PAGE_SIZE + 1} OFFSET ${page * PAGE_SIZE}`;
        const result = await this.queryWithOriginalErrors(paged, text, PAGE_SIZE + 1);
        columns = result.columns;
        rows = result.rows.slice(0, PAGE_SIZE);
        hasMore = result.rows.length > PAGE_SIZE;
        this.last.tick = result.tick;
      } else {
        // A bare term list, a statement with its own LIMIT, SHOW, DESCRIBE, EXPLAIN: cap the
        // answer with the protocol's `limit` and page through what came back.
        const want = keyword === '' ? (page + 1) * PAGE_SIZE + 1 : 10000;
        if (!this.last.cache || this.last.cache.want < want) {
          const result = await this.app.conn.call('query', { text, limit: want });
          this.last.cache = { want, result };
        }
        const { result } = this.last.cache;
        columns = result.columns;
        rows = result.rows.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);
        hasMore = result.rows.length > (page + 1) * PAGE_SIZE || (keyword === '' && result.truncated);
        truncated = keyword !== '' && result.truncated;
        this.last.tick = result.tick;
      }
      this.page = page;
      this.last.columns = columns;
      this.renderTable(columns, rows);
      if (keyword === 'EXPLAIN' && columns.length === 1) {
        $('explain-view').replaceChildren(h('h3', {}, `Plan at tick ${this.last.tick}`), planTree(this.last.cache.result.rows));
        $('explain-view').hidden = false;
      }
      const first = rows.length ? page * PAGE_SIZE + 1 : 0;
      const lastRow = page * PAGE_SIZE + rows.length;
      $('result-pager').hidden = !(hasMore || page > 0);
      $('result-prev').disabled = page === 0;
      $('result-next').disabled = !hasMore;
      $('result-range').textContent = rows.length ? `rows ${first}–${lastRow}${hasMore ? '' : ` of ${lastRow}`}` : 'no rows';
      const ms = performance.now() - started;
      this.setStatus(`${rows.length} row${rows.length === 1 ? '' : 's'} on this page · tick ${this.last.tick} · ${ms.toFixed(0)} ms${truncated ? ' · cut at 10,000 rows' : ''}`);
      $('download-json').disabled = $('download-csv').disabled = false;
    } catch (error) {
      this.showError(error, text);
    }
  }

  /**
   * Runs `paged` (the statement with LIMIT/OFFSET appended); when the statement is
   * incomplete the error would point into the appended text, so the original is run to
   * report the error where the person typed.
   */
  async queryWithOriginalErrors(paged, original, limit) {
    try {
      return await this.app.conn.call('query', { text: paged, limit });
    } catch (error) {
      const lines = original.split('\n').length;
      if (error instanceof RpcError && error.code === CODES.statement && (error.data?.line ?? 0) > lines) {
        return await this.app.conn.call('query', { text: original, limit });
      }
      throw error;
    }
  }

  async exec(text) {
    if (this.app.writable === false) {
      this.showError(new RpcError(CODES.readOnly, 'this server is read-only'), text);
      return;
    }
    this.setStatus('applying…');
    try {
      const result = await this.app.conn.call('exec', { text });
      const results = result.results || [];
      const shown = [...results].reverse().find((r) => r.columns && r.columns.length) || { columns: [], rows: [] };
      this.last = null;
      this.renderTable(shown.columns, shown.rows.slice(0, PAGE_SIZE * 10));
      $('result-pager').hidden = true;
      $('download-json').disabled = $('download-csv').disabled = true;
      this.setStatus(`applied at tick ${result.tick} · ${results.length} statement${results.length === 1 ? '' : 's'}`);
      this.app.afterWrite();
    } catch (error) {
      this.showError(error, text);
    }
  }

  async explain() {
    const text = this.editor.text.trim();
    if (!text) return;
    this.clearError();
    const view = $('explain-view');
    try {
      const result = await this.app.conn.call('explain', { text: withoutLeadingWord(text, 'EXPLAIN') });
      view.replaceChildren(h('h3', {}, `Plan at tick ${result.tick}`), planTree(result.plan || []));
      view.hidden = false;
    } catch (error) {
      this.showError(error, text);
    }
  }

  async download(format) {
    if (!this.last) return;
    try {
      const result = await this.app.conn.call('query', { text: this.last.text, limit: DOWNLOAD_LIMIT });
      const name = `ecsdb-result-tick${result.tick}.${format}`;
      if (format === 'json') {
        download(name, stringifyJson({ columns: result.columns, rows: result.rows }), 'application/json');
      } else {
        download(name, toCsv(result.columns, result.rows), 'text/csv');
      }
      if (result.truncated) toast(`Downloaded the first ${DOWNLOAD_LIMIT.toLocaleString('en-US')} rows.`);
    } catch (error) {
      this.showError(error, this.last.text);
    }
  }

  renderTable(columns, rows) {
    const table = $('result-table');
    const schema = this.app.schema;
    const types = columns.map((c) => (schema ? schema.columnType(c) : c === 'entity' ? 'entity' : undefined));
    const open = (id) => this.app.openEntity(id);
    table.tHead.replaceChildren(h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c))));
    const body = table.tBodies[0];
    body.replaceChildren(...rows.map((row) => h('tr', {}, row.map((v, i) => valueCell(v, types[i], open)))));
    $('result-empty').hidden = columns.length > 0;
  }

  setStatus(text) {
    $('query-status').textContent = text;
  }

  clearError() {
    $('query-error').hidden = true;
    $('query-error').replaceChildren();
  }

  /** Shows an error: kind, message, the source line with a caret under the column, a hint. */
  showError(error, text) {
    this.setStatus('');
    this.renderTable([], []);
    $('result-pager').hidden = true;
    $('download-json').disabled = $('download-csv').disabled = true;
    const box = $('query-error');
    box.replaceChildren(...errorNodes(error, text));
    box.hidden = false;
    if (error instanceof RpcError && error.code === CODES.readOnly) this.app.setWritable(false);
    if (error?.data?.line) this.editor.markError(error.data.line, error.data.column);
  }
}

/** The parts of an error box, shared by every view that runs statements. */
export function errorNodes(error, text) {
  if (!(error instanceof RpcError)) return [h('div', {}, String(error?.message || error))];
  if (error.code === CODES.readOnly) {
    return [h('div', {}, h('span', { class: 'ekind' }, 'read-only: '),
      'this server does not accept changes. Start it with ', h('code', {}, 'ecsdb serve --allow-writes'), ' to edit the world.')];
  }
  const data = error.data || {};
  const nodes = [h('div', {},
    h('span', { class: 'ekind' }, `error[${data.kind || codeName(error.code)}]`),
    data.line ? ` at line ${data.line}, column ${data.column}` : '', ': ', data.message || error.message)];
  if (data.line && text) {
    const line = text.split('\n')[data.line - 1];
    if (line !== undefined) {
      const col = Math.max(1, data.column || 1);
      const word = /^[A-Za-z0-9_$]+/.exec(line.slice(col - 1));
      const width = Math.max(1, word ? word[0].length : 1);
      nodes.push(h('pre', {}, `${line}\n`, h('span', { class: 'caret' }, `${' '.repeat(col - 1)}^${'~'.repeat(width - 1)}`)));
    }
  }
  if (data.hint) nodes.push(h('div', { class: 'hint' }, `hint: ${data.hint}`));
  return nodes;
}

function codeName(code) {
  return { [-32001]: 'unauthorized', [-32004]: 'limit', [-32602]: 'params', [-1]: 'connection', [-2]: 'timeout' }[code] || String(code);
}

/** Turns EXPLAIN's indented rows (`|--`, `` `-- ``) into a nested list. */
export function planTree(lines) {
  const root = h('ul', { class: 'plan-tree' });
  const stack = [{ depth: -1, list: root }];
  for (const raw of lines) {
    const line = Array.isArray(raw) ? String(raw[0]) : String(raw);
    const prefix = /^[ |`-]*/.exec(line)[0];
    const depth = Math.round(prefix.length / 3);
    const body = line.slice(prefix.length);
    while (stack.length > 1 && stack[stack.length - 1].depth >= depth) stack.pop();
    const parent = stack[stack.length - 1];
    const [, op, rest] = /^([A-Z][A-Z-]*\b)?(.*)$/.exec(body);
    const cls = /no index applies/i.test(rest) ? 'scan' : /\bindex\b/i.test(rest) ? 'idx' : '';
    const item = h('li', {}, op ? h('span', { class: 'op' }, op) : null, h('span', { class: cls }, rest));
    parent.list.append(item);
    const children = h('ul', {});
    item.append(children);
    stack.push({ depth, list: children });
  }
  root.querySelectorAll('ul:empty').forEach((ul) => ul.remove());
  return root;
}
