// The schema sidebar: components (fields, types, storage, entity counts), archetype tables,
// indexes and systems, from the `schema` method, refreshed while connected; and the language's
// keywords and functions from the same answer, for the editor.

import { $, h, formatCount, formatBytes, formatMs } from './dom.js';
import { languageOf } from './lexer.js';

const MAX_TABLES_LISTED = 200;

/** What the rest of the page needs to know of the schema, derived once per answer. */
export class SchemaModel {
  constructor(result) {
    this.raw = result;
    this.components = result.components || [];
    this.tables = result.tables || [];
    this.indexes = result.indexes || [];
    this.systems = result.systems || [];
    /** name -> [field name, ...] */
    this.fieldsOf = new Map(this.components.map((c) => [c.name, (c.fields || []).map((f) => f.name)]));
    /** name -> component */
    this.byName = new Map(this.components.map((c) => [c.name, c]));
    /** The language's keywords and functions, as the server's parser knows them. */
    this.language = languageOf(result);
  }

  /** The type of `C.f`, or undefined. */
  fieldType(component, field) {
    return this.byName.get(component)?.fields?.find((f) => f.name === field)?.type;
  }

  /**
   * The type of a result column, when the schema knows it: `'entity'` for the entity column,
   * the field's type for `C.f` (or a path ending in `D.g`), `{field: type}` for a component
   * column `C`; undefined otherwise (expressions, aliases).
   */
  columnType(name) {
    if (name === 'entity') return 'entity';
    const component = this.byName.get(name);
    if (component) return Object.fromEntries((component.fields || []).map((f) => [f.name, f.type]));
    const parts = name.split('.');
    if (parts.length < 2) return undefined;
    return this.fieldType(parts[parts.length - 2], parts[parts.length - 1]);
  }

  /**
   * Relations declared `REFERENCES … ACYCLIC`: `[{component, field}]`, from a schema-level
   * `references` list, a field's own keys (`acyclic: true`) or its type text
   * (`entity REFERENCES … ACYCLIC`).
   */
  acyclicRelations() {
    const found = [];
    // A schema-level list, as the engine keeps them: [{component, field, acyclic, ...}].
    for (const r of [...(this.raw.references || []), ...(this.raw.relations || [])]) {
      if (r && r.acyclic === true && r.component && r.field) found.push({ component: r.component, field: r.field });
    }
    for (const c of this.components) {
      for (const f of c.fields || []) {
        const typeText = typeof f.type === 'string' ? f.type : '';
        const already = found.some((r) => r.component === c.name && r.field === f.name);
        if (!already && (f.acyclic === true || f.references?.acyclic === true || /\bACYCLIC\b/i.test(typeText))) {
          found.push({ component: c.name, field: f.name });
        }
      }
    }
    return found;
  }

  /** A `C.f` string field that names entities for people (`Name.value` and the like), or null. */
  labelField() {
    const preferred = ['Name', 'Label', 'Title', 'DebugName'];
    for (const name of preferred) {
      const c = this.byName.get(name);
      const f = c?.fields?.find((x) => x.type === 'string');
      if (f) return `${c.name}.${f.name}`;
    }
    return null;
  }
}

/** Renders the sidebar. `actions.browse(component)` opens the entity browser filtered by it. */
export function renderSchema(model, stats, filterText, actions) {
  const filter = filterText.trim().toLowerCase();
  const match = (name) => !filter || name.toLowerCase().includes(filter);

  const components = model.components.filter((c) => match(c.name));
  $('count-components').textContent = `(${model.components.length})`;
  const list = $('schema-components');
  const open = new Set([...list.querySelectorAll('details[open]')].map((d) => d.dataset.name));
  list.replaceChildren(
    ...components.map((c) => {
      const fields = c.fields || [];
      return h('li', {},
        h('details', { open: open.has(c.name), dataset: { name: c.name } },
          h('summary', {},
            h('span', { class: 'comp-name' }, c.name),
            h('span', { class: 'comp-meta' },
              fields.length === 0 ? h('span', { class: 'pill' }, 'tag') : null,
              c.storage ? h('span', { class: 'pill', title: 'storage' }, c.storage) : null,
              h('span', { class: 'num', title: 'entities' }, formatCount(c.entities)))),
          fields.length
            ? h('ul', { class: 'fields' }, fields.map((f) =>
              h('li', {}, h('span', { class: 'fname' }, f.name), h('span', { class: 'ftype' }, typeText(f)))))
            : null,
          h('div', { class: 'comp-actions' },
            h('button', { type: 'button', class: 'link-button', onclick: () => actions.browse(c.name) }, 'browse entities'),
            h('button', { type: 'button', class: 'link-button', onclick: () => actions.query(c.name) }, 'query'))));
    }),
  );

  const tables = [...model.tables].sort((a, b) => (b.rows ?? 0) - (a.rows ?? 0));
  $('count-tables').textContent = `(${model.tables.length})`;
  const shown = tables.slice(0, MAX_TABLES_LISTED);
  $('schema-tables').replaceChildren(
    ...shown.map((t) => h('li', {},
      h('span', { class: 'mono grow', title: tableName(t) }, tableName(t)),
      h('span', { class: 'num' }, formatCount(t.rows)))),
    ...(tables.length > shown.length ? [h('li', { class: 'muted' }, `… ${tables.length - shown.length} more`)] : []),
  );

  $('count-indexes').textContent = `(${model.indexes.length})`;
  $('schema-indexes').replaceChildren(
    ...(model.indexes.length ? model.indexes.map((ix) => h('li', {},
      h('span', { class: 'grow' },
        h('span', { class: 'mono' }, ix.name),
        h('span', { class: 'sub' }, `${ix.kind} on ${ix.component}${fieldList(ix.fields)}`)),
      h('span', { class: 'num', title: 'entries' }, formatCount(ix.entries)),
      ix.memory_bytes !== undefined ? h('span', { class: 'num', title: 'memory' }, formatBytes(ix.memory_bytes)) : null))
      : [h('li', { class: 'muted' }, 'none')]),
  );

  const timing = new Map((stats?.systems || []).map((s) => [s.name, s]));
  $('count-systems').textContent = `(${model.systems.length})`;
  const order = new Map();
  $('schema-systems').replaceChildren(
    ...(model.systems.length ? model.systems.map((s) => {
      // The server numbers systems from 0 in run order; shown from 1.
      const position = Number.isInteger(s.position) ? s.position + 1 : (order.get(s.phase) ?? 0) + 1;
      order.set(s.phase, position);
      const t = timing.get(s.name);
      return h('li', {},
        h('span', { class: 'grow' },
          h('span', { class: 'mono' }, s.name),
          h('span', { class: 'sub' }, `${s.phase ?? ''} #${position}${s.writes?.length ? ` · writes ${s.writes.join(', ')}` : ''}`)),
        h('span', { class: 'num', title: 'time in the last tick' }, t ? formatMs(t.ms) : '–'));
    }) : [h('li', { class: 'muted' }, 'none')]),
  );
}

/** A table's display name: its components joined, or "(no components)". */
export function tableName(table) {
  const comps = Array.isArray(table.components) ? table.components.join(', ') : String(table.components ?? '');
  return comps || '(no components)';
}

function fieldList(fields) {
  const list = Array.isArray(fields) ? fields.join(', ') : String(fields ?? '');
  return list ? ` (${list})` : '';
}

function typeText(field) {
  if (typeof field.type === 'string') return field.type;
  return JSON.stringify(field.type);
}
