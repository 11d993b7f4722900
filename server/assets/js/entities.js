// The entity browser: a list filtered by terms or a WHERE clause, paged in entity order
// (entity-queries.js), a hierarchy tree when the schema has a `REFERENCES … ACYCLIC` relation,
// and the entity view with in-place edits (literals.js checks what is typed).

import { $, h, toast, confirmDialog, formatCount } from './dom.js';
import { RpcError, CODES } from './rpc.js';
import { valueText } from './values.js';
import { sameJson } from './json.js';
import { parseFieldInput } from './literals.js';
import { entityPageQuery, entityCountQuery } from './entity-queries.js';
import { errorNodes } from './query.js';

const PAGE_SIZE = 50;
const TREE_PAGE = 100;
const VIEW_REFRESH_MS = 1000;

export class EntityBrowser {
  constructor(app) {
    this.app = app;
    this.listPage = 0;
    /** For each page of the list reached so far, the id it starts after (null: the first). */
    this.pageStarts = [null];
    this.treePage = 0;
    this.filter = '';
    this.selected = null;
    this.viewData = null;
    this.mode = 'list';
    this.relation = null;
    this.loadedOnce = false;
    $('entity-filter-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.filter = $('entity-filter').value;
      this.pageStarts = [null];
      this.load(0);
    });
    $('entity-prev').addEventListener('click', () => this.turnPage(-1));
    $('entity-next').addEventListener('click', () => this.turnPage(1));
    $('mode-list').addEventListener('click', () => this.setMode('list'));
    $('mode-tree').addEventListener('click', () => this.setMode('tree'));
    $('entity-list').addEventListener('keydown', (e) => listKeys(e, '#entity-list button'));
    $('entity-tree').addEventListener('keydown', (e) => listKeys(e, '#entity-tree button.node-label'));
    this.pollTimer = null;
    this.gone = false; // the open entity was despawned: nothing left to poll
    document.addEventListener('visibilitychange', () => this.poll());
  }

  /** Called when the tab is shown. */
  shown() {
    if (!this.loadedOnce) this.load(0);
    if (this.selected && !this.gone) this.refreshView().then(() => this.poll());
  }

  /**
   * Arms the next refresh of the open entity, one second after the last answer (so refreshes
   * never pile up on a slow server). Nothing is armed while the tab or the page is hidden, or
   * when the entity is gone: polling stops, and shown() or visibilitychange starts it again.
   */
  poll() {
    clearTimeout(this.pollTimer);
    this.pollTimer = null;
    if (!this.selected || this.gone || $('panel-entities').hidden || document.hidden) return;
    this.pollTimer = setTimeout(async () => {
      this.pollTimer = null;
      await this.refreshView();
      this.poll();
    }, VIEW_REFRESH_MS);
  }

  /** Shows the entities that have `component`. */
  browse(component) {
    $('entity-filter').value = component;
    this.filter = component;
    this.pageStarts = [null];
    this.listPage = 0;
    this.setMode('list');
  }

  /** The next (`step` 1) or previous (-1) page of the list or the tree. */
  turnPage(step) {
    if (this.mode === 'tree') this.loadTree(this.treePage + step);
    else this.load(this.listPage + step);
  }

  /** The schema changed: show the tree toggle when there is an acyclic relation. */
  schemaChanged(schema) {
    const relations = schema.acyclicRelations();
    this.relation = relations[0] || null;
    $('entity-mode').hidden = !this.relation;
    if (this.relation) $('mode-tree').textContent = `Tree (${this.relation.component}.${this.relation.field})`;
    if (!this.relation && this.mode === 'tree') this.setMode('list');
  }

  setMode(mode) {
    this.mode = mode;
    $('mode-list').setAttribute('aria-pressed', String(mode === 'list'));
    $('mode-tree').setAttribute('aria-pressed', String(mode === 'tree'));
    $('entity-list').hidden = mode !== 'list';
    $('entity-tree').hidden = mode !== 'tree';
    if (mode === 'tree') this.loadTree(0);
    else this.load(this.listPage);
  }

  /**
   * Loads page `page` of the list: only that page's ids cross the wire. A page starts after the
   * last id of the page before (pageStarts), so pages can only be reached in order from the
   * first; going back takes a start already known. (In tree mode: the tree's page again.)
   */
  async load(page) {
    this.loadedOnce = true;
    if (this.mode === 'tree') return this.loadTree(this.treePage);
    const after = this.pageStarts[page];
    if (after === undefined) return;
    $('entity-filter-error').hidden = true;
    const conn = this.app.conn;
    const label = this.app.schema?.labelField() ?? null;
    const ask = (withLabel) => {
      const { text, params } = entityPageQuery(this.filter, { after, label: withLabel ? label : null, pageSize: PAGE_SIZE });
      return conn.call('query', { text, params, limit: PAGE_SIZE + 1 });
    };
    let result;
    try {
      try {
        result = await ask(label !== null);
      } catch (error) {
        // The label join can clash with the filter's own terms; the ids alone still list.
        if (!label || !(error instanceof RpcError) || error.code !== CODES.statement) throw error;
        result = await ask(false);
      }
    } catch (error) {
      this.showFilterError(error);
      return;
    }
    this.listPage = page;
    const rows = result.rows.slice(0, PAGE_SIZE);
    const hasMore = result.rows.length > PAGE_SIZE;
    // The pages past this one start after its last id (as it is now).
    this.pageStarts.length = page + 1;
    if (hasMore) this.pageStarts.push(rows[rows.length - 1][0]);
    const list = $('entity-list');
    list.replaceChildren(
      ...rows.map(([id, label]) => h('li', {}, h('button', {
        type: 'button',
        'aria-current': id === this.selected ? 'true' : null,
        dataset: { id },
        onclick: () => this.open(id),
      }, h('span', { class: 'eid' }, id), h('span', { class: 'elabel' }, label === undefined || label === null ? '' : valueText(label))))),
    );
    if (!rows.length) list.append(h('li', { class: 'empty' }, 'No entity matches.'));
    $('entity-prev').disabled = page === 0;
    $('entity-next').disabled = !hasMore;
    const first = page * PAGE_SIZE + 1;
    $('entity-range').textContent = rows.length ? `${first}–${first + rows.length - 1}` : '';
    // The total, counted by the server (one number, whatever the size of the world).
    conn.call('query', { ...entityCountQuery(this.filter), limit: 1 })
      .then((r) => {
        if (this.listPage === page && rows.length) $('entity-range').textContent = `${first}–${first + rows.length - 1} of ${formatCount(r.rows[0][0])}`;
      })
      .catch(() => {});
  }

  showFilterError(error) {
    const box = $('entity-filter-error');
    box.replaceChildren(...errorNodes(error, null));
    box.hidden = false;
  }

  /** The tree's top level: the root of every chain with the number of entities under it. */
  async loadTree(page) {
    if (!this.relation || page < 0) return;
    const { component: c, field: f } = this.relation;
    const text = `SELECT root(${c}.${f}) AS root, count(*) AS members FROM ${c} GROUP BY root(${c}.${f})\nLIMIT ${TREE_PAGE + 1} OFFSET ${page * TREE_PAGE}`;
    try {
      const result = await this.app.conn.call('query', { text, limit: TREE_PAGE + 1 });
      this.treePage = page;
      const rows = result.rows.slice(0, TREE_PAGE);
      const labels = await this.labels(rows.map((r) => r[0]));
      $('entity-tree').replaceChildren(h('ul', { role: 'group' }, rows.map(([id, members]) => this.treeNode(id, labels.get(id), `${members} below`))));
      $('entity-prev').disabled = page === 0;
      $('entity-next').disabled = result.rows.length <= TREE_PAGE;
      $('entity-range').textContent = `${rows.length} roots`;
    } catch (error) {
      this.showFilterError(error);
    }
  }

  treeNode(id, label, note) {
    const kids = h('ul', { role: 'group', hidden: true });
    const twisty = h('button', { type: 'button', class: 'twisty', 'aria-label': `Expand ${id}`, 'aria-expanded': 'false' }, '▸');
    twisty.addEventListener('click', async () => {
      const expanded = twisty.getAttribute('aria-expanded') === 'true';
      twisty.setAttribute('aria-expanded', String(!expanded));
      twisty.textContent = expanded ? '▸' : '▾';
      kids.hidden = expanded;
      if (!expanded && !kids.dataset.loaded) {
        kids.dataset.loaded = '1';
        await this.loadChildren(id, kids);
      }
    });
    return h('li', { role: 'treeitem' },
      h('div', { class: 'node-row' }, twisty,
        h('button', { type: 'button', class: 'node-label', dataset: { id }, onclick: () => this.open(id) },
          h('span', { class: 'eid' }, id), h('span', { class: 'elabel' }, label ?? ''), note ? h('span', { class: 'kids' }, note) : null)),
      kids);
  }

  async loadChildren(id, list) {
    const { component: c, field: f } = this.relation;
    try {
      const result = await this.app.conn.call('query', {
        text: `SELECT entity FROM ${c} WHERE ${c}.${f} = $p\nLIMIT ${TREE_PAGE + 1}`,
        params: { p: { entity: id } },
        limit: TREE_PAGE + 1,
      });
      const ids = result.rows.slice(0, TREE_PAGE).map((r) => r[0]);
      const labels = await this.labels(ids);
      list.replaceChildren(...ids.map((child) => this.treeNode(child, labels.get(child))));
      if (!ids.length) list.append(h('li', { class: 'muted small' }, 'no children'));
      if (result.rows.length > TREE_PAGE) list.append(h('li', { class: 'muted small' }, `first ${TREE_PAGE} children shown`));
    } catch (error) {
      list.replaceChildren(h('li', { class: 'muted small' }, error.message));
    }
  }

  /** Labels (`Name.value` or similar) of a few entities, by id. */
  async labels(ids) {
    const label = this.app.schema?.labelField();
    const map = new Map();
    if (!label || !ids.length) return map;
    const params = Object.fromEntries(ids.map((id, i) => [`e${i}`, { entity: id }]));
    const list = ids.map((_, i) => `$e${i}`).join(', ');
    try {
      const result = await this.app.conn.call('query', { text: `SELECT entity, ${label} WHERE entity IN (${list})`, params, limit: ids.length });
      for (const [id, value] of result.rows) map.set(id, valueText(value));
    } catch {
      // Labels are a nicety; the ids alone still work.
    }
    return map;
  }

  /** Opens entity `id` in the view. */
  async open(id) {
    this.selected = id;
    document.querySelectorAll('#entity-list button, #entity-tree button.node-label').forEach((b) => {
      if (b.dataset.id === id) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    });
    this.viewData = null;
    this.gone = false;
    await this.refreshView(true);
    this.poll();
  }

  /** Reloads the open entity; fields whose value changed flash. */
  async refreshView(force = false) {
    const id = this.selected;
    if (!id || this.app.conn.state !== 'connected') return;
    // A periodic refresh re-renders the view: never while a value is being edited or a
    // component is being chosen or filled in to add (it would throw the user's input away).
    const adding = document.querySelector('#entity-view .add-comp');
    const composing = adding && (adding.contains(document.activeElement) || adding.querySelector('select')?.value);
    if (!force && ($('panel-entities').hidden || document.hidden || this.editing || composing)) return;
    let result;
    try {
      result = await this.app.conn.call('entity', { id });
    } catch (error) {
      if (id !== this.selected) return;
      const stale = error instanceof RpcError && (error.data?.kind === 'stale_entity' || /stale/.test(error.message));
      this.gone = stale;
      $('entity-view').replaceChildren(h('div', { class: 'entity-head' }, h('h2', {}, id)),
        h('p', { class: 'empty' }, stale ? 'This entity no longer exists (despawned).' : error.message));
      this.viewData = null;
      return;
    }
    if (id !== this.selected || this.editing) return;
    const previous = this.viewData;
    this.viewData = result;
    this.renderView(result, previous);
  }

  renderView(data, previous) {
    const schema = this.app.schema;
    const writable = this.app.writable === true;
    const id = data.entity;
    const names = Object.keys(data.components || {}).sort();
    const view = $('entity-view');
    const focusedKey = document.activeElement?.dataset?.key;
    const cards = names.map((name) => {
      const value = data.components[name];
      const fields = value && typeof value === 'object' ? Object.entries(value) : [];
      return h('section', { class: 'comp-card', 'aria-label': name },
        h('header', {},
          h('span', { class: 'comp-name' }, name),
          fields.length === 0 ? h('span', { class: 'pill' }, 'tag') : null,
          h('span', { class: 'spacer' }),
          writable ? h('button', { type: 'button', class: 'link-button', onclick: () => this.removeComponent(id, name), 'aria-label': `Remove ${name}` }, 'remove') : null),
        fields.length
          ? h('table', {}, h('tbody', {}, fields.map(([field, v]) => {
            const type = schema?.fieldType(name, field) || '';
            const before = previous?.entity === id ? previous.components?.[name]?.[field] : undefined;
            const changed = previous?.entity === id && !sameJson(before, v);
            const key = `${name}.${field}`;
            return h('tr', { class: changed ? 'flash' : null, dataset: { field: key } },
              h('td', { class: 'fname' }, field),
              h('td', { class: 'ftype' }, type),
              h('td', {}, h('button', {
                type: 'button',
                class: 'value-btn',
                disabled: !writable,
                dataset: { key },
                'aria-label': `${key}: ${valueText(v, type)}${writable ? ' (edit)' : ''}`,
                onclick: (e) => this.beginEdit(e.currentTarget, id, name, field, type, v),
              }, valueText(v, type))));
          })))
          : h('div', { class: 'tag-note' }, 'tag (no fields)'));
    });
    view.replaceChildren(
      h('div', { class: 'entity-head' },
        h('h2', {}, id),
        h('span', { class: 'muted small' }, `${names.length} component${names.length === 1 ? '' : 's'} · tick ${data.tick}`),
        h('span', { class: 'spacer' }),
        writable ? h('button', { type: 'button', class: 'danger', onclick: () => this.despawn(id) }, 'Despawn…') : h('span', { class: 'badge' }, 'read-only')),
      ...cards,
      ...(writable ? [this.addForm(id, names)].filter(Boolean) : []),
    );
    if (focusedKey) view.querySelector(`[data-key="${CSS.escape(focusedKey)}"]`)?.focus();
  }

  beginEdit(button, id, component, field, type, value) {
    this.editing = true;
    const input = h('input', { class: 'edit', 'aria-label': `New value of ${component}.${field}`, value: value === null ? 'null' : valueText(value, type) });
    const cell = button.parentElement;
    cell.replaceChildren(input);
    input.focus();
    input.select();
    let done = false;
    const finish = async (commit) => {
      if (done) return;
      done = true;
      if (commit) await this.commitEdit(id, component, field, type, input.value);
      this.editing = false;
      await this.refreshView(true);
      this.app.afterWrite();
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        finish(true);
      } else if (e.key === 'Escape') {
        e.preventDefault();
        finish(false);
      }
    });
    input.addEventListener('blur', () => finish(false));
  }

  async commitEdit(id, component, field, type, text) {
    let value;
    try {
      value = parseFieldInput(text, type);
    } catch (error) {
      toast(`${component}.${field}: ${error.message}`, true);
      return;
    }
    await this.write(`UPDATE ${component} SET ${field} = $v FROM ${id}`, { v: value }, `${component}.${field} of ${id} set`);
  }

  addForm(id, present) {
    const schema = this.app.schema;
    const missing = (schema?.components || []).filter((c) => !present.includes(c.name));
    if (!missing.length) return null;
    const select = h('select', { id: 'add-component', 'aria-label': 'Component to add' },
      h('option', { value: '' }, 'Add a component…'), missing.map((c) => h('option', { value: c.name }, c.name)));
    const inputs = h('span', { class: 'field-inputs' });
    const button = h('button', { type: 'submit', disabled: true }, 'Add');
    select.addEventListener('change', () => {
      const c = schema.byName.get(select.value);
      button.disabled = !c;
      inputs.replaceChildren(...(c?.fields || []).map((f) => h('label', {}, f.name,
        h('input', { name: f.name, placeholder: f.type, 'aria-label': `${c.name}.${f.name} (${f.type}); empty for the zero value` }))));
    });
    return h('form', {
      class: 'add-comp',
      onsubmit: async (e) => {
        e.preventDefault();
        const c = schema.byName.get(select.value);
        if (!c) return;
        const params = {};
        const parts = [];
        try {
          for (const input of inputs.querySelectorAll('input')) {
            if (!input.value.trim()) continue;
            const type = schema.fieldType(c.name, input.name);
            params[`f${parts.length}`] = parseFieldInput(input.value, type);
            parts.push(`${input.name}: $f${parts.length}`);
          }
        } catch (error) {
          toast(error.message, true);
          return;
        }
        const value = c.fields?.length ? ` {${parts.join(', ')}}` : '';
        if (await this.write(`ADD ${c.name}${value} TO ${id}`, params, `${c.name} added to ${id}`)) await this.refreshView(true);
      },
    }, select, inputs, button);
  }

  async removeComponent(id, component) {
    if (await this.write(`REMOVE ${component} FROM ${id}`, {}, `${component} removed from ${id}`)) await this.refreshView(true);
  }

  async despawn(id) {
    const ok = await confirmDialog('Despawn entity', `Despawn ${id}? This removes it and all its components from the running world.`, 'Despawn');
    if (!ok) return;
    if (await this.write(`DESPAWN ${id}`, {}, `${id} despawned`)) {
      await this.refreshView(true);
      this.load(this.listPage);
    }
  }

  /** Runs one write through `exec`; tells the person how it went. */
  async write(text, params, success) {
    try {
      await this.app.conn.call('exec', { text, params });
      toast(success);
      this.app.afterWrite();
      return true;
    } catch (error) {
      if (error instanceof RpcError && error.code === CODES.readOnly) this.app.setWritable(false);
      const data = error.data || {};
      toast(`${data.kind ? `${data.kind}: ` : ''}${data.message || error.message}${data.hint ? ` (${data.hint})` : ''}`, true);
      return false;
    }
  }
}

/** Arrow keys move between the buttons of a list (one tab stop per list item is plenty). */
function listKeys(e, selector) {
  if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
  const buttons = [...document.querySelectorAll(selector)].filter((b) => b.offsetParent !== null);
  const i = buttons.indexOf(document.activeElement);
  const next = buttons[i + (e.key === 'ArrowDown' ? 1 : -1)];
  if (next) {
    e.preventDefault();
    next.focus();
  }
}
