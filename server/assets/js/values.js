// How result values look on the page and in downloads. Values arrive as the language's JSON
// (docs/query-language.md, "Results as JSON"): entities are "12v0" strings, vectors arrays,
// components objects.

import { h } from './dom.js';

const ENTITY_RE = /^\d+v\d+$/;

/** True for the text form of an entity id. */
export function isEntityId(value) {
  return typeof value === 'string' && ENTITY_RE.test(value);
}

/** The plain text of a value: what a cell shows and what CSV holds. */
export function valueText(value) {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(valueText).join(', ')}]`;
  if (typeof value === 'object') {
    if ('entity' in value && Object.keys(value).length === 1) return String(value.entity);
    const parts = Object.entries(value).map(([k, v]) => `${k}: ${valueText(v)}`);
    return `{${parts.join(', ')}}`;
  }
  return String(value);
}

/**
 * A table cell for `value`. `entityColumn` marks columns whose strings are entity ids (the
 * `entity` column and entity-typed fields); those become buttons calling `openEntity(id)`.
 */
export function valueCell(value, entityColumn, openEntity) {
  if (value === null || value === undefined) return h('td', {}, h('span', { class: 'null' }, 'null'));
  if (typeof value === 'number') return h('td', { class: 'n' }, valueText(value));
  if (typeof value === 'boolean') return h('td', {}, h('span', { class: 'bool' }, String(value)));
  if (entityColumn && isEntityId(value) && openEntity) {
    return h('td', {}, h('button', { class: 'ent-link', type: 'button', onclick: () => openEntity(value), title: `Open ${value}` }, value));
  }
  const text = valueText(value);
  const cls = typeof value === 'object' ? 'obj' : 'str';
  return h('td', { title: text.length > 40 ? text : null }, h('span', { class: cls }, text));
}

/** RFC 4180 CSV of a result. */
export function toCsv(columns, rows) {
  const cell = (v) => {
    const text = v === null || v === undefined ? '' : valueText(v);
    return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return [columns, ...rows].map((row) => row.map(cell).join(',')).join('\r\n') + '\r\n';
}

/** Saves `text` as a file named `name` through a temporary link (no network involved). */
export function download(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = h('a', { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
