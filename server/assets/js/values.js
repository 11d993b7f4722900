// How result values look on the page and in downloads. Values arrive as the language's JSON
// (docs/query-language.md, "Results as JSON"), read by json.js: entities are "12v0" strings,
// vectors arrays, components objects, and integers outside the double's safe range BigInts,
// shown with every digit.

import { h } from './dom.js';
import { stringifyJson } from './json.js';

const ENTITY_RE = /^\d+v\d+$/;

/** True for the text form of an entity id. */
export function isEntityId(value) {
  return typeof value === 'string' && ENTITY_RE.test(value);
}

/** True for a number as results carry it: a Number, or a BigInt for an integer beyond 2^53. */
export function isNumeric(value) {
  return typeof value === 'number' || typeof value === 'bigint';
}

/** True when a column or field type (see SchemaModel.columnType) holds entity ids. */
export function isEntityType(type) {
  return typeof type === 'string' && /^entity\b/i.test(type);
}

/**
 * The shortest text that reads back as the same f32: an f32 field arrives as the f64 of its
 * value (0.1 as 0.10000000149011612), and people want to see what was stored (0.1).
 */
export function formatF32(x) {
  if (!Number.isFinite(x) || Number.isInteger(x)) return String(x);
  const target = Math.fround(x);
  for (let digits = 1; digits <= 9; digits++) {
    const shorter = Number(x.toPrecision(digits));
    if (Math.fround(shorter) === target) return String(shorter);
  }
  return String(x);
}

/**
 * The plain text of a value: what a cell shows. `type` is the value's schema type when known:
 * a field type (`'f32'`, `'entity'` …) or, for a component object, `{field: type}`.
 */
export function valueText(value, type) {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' && type === 'f32') return formatF32(value);
  if (Array.isArray(value)) return `[${value.map((v) => valueText(v)).join(', ')}]`;
  if (typeof value === 'object') {
    if ('entity' in value && Object.keys(value).length === 1) return String(value.entity);
    const types = type && typeof type === 'object' ? type : {};
    const parts = Object.entries(value).map(([k, v]) => `${k}: ${valueText(v, types[k])}`);
    return `{${parts.join(', ')}}`;
  }
  return String(value);
}

/**
 * A table cell for `value` of the column type `type` (SchemaModel.columnType). Entity ids in
 * entity columns become buttons calling `openEntity(id)`.
 */
export function valueCell(value, type, openEntity) {
  if (value === null || value === undefined) return h('td', {}, h('span', { class: 'null' }, 'null'));
  if (isNumeric(value)) return h('td', { class: 'n' }, valueText(value, type));
  if (typeof value === 'boolean') return h('td', {}, h('span', { class: 'bool' }, String(value)));
  if (isEntityType(type) && isEntityId(value) && openEntity) {
    return h('td', {}, h('button', { class: 'ent-link', type: 'button', onclick: () => openEntity(value), title: `Open ${value}` }, value));
  }
  const text = valueText(value, type);
  const cls = typeof value === 'object' ? 'obj' : 'str';
  return h('td', { title: text.length > 40 ? text : null }, h('span', { class: cls }, text));
}

/**
 * Writes `value` into an existing cell, as valueCell would draw it, touching the DOM only when
 * the cell shows something else (the watch redraws rows in place many times a second).
 */
export function setCell(td, value, type) {
  const text = valueText(value, type);
  const link = isEntityType(type) && isEntityId(value);
  const kind = link ? 'link' : value === null || value === undefined ? 'null' : isNumeric(value) ? 'n'
    : typeof value === 'boolean' ? 'bool' : typeof value === 'object' ? 'obj' : 'str';
  if (td.shown === text && td.kind === kind) return;
  td.shown = text;
  td.kind = kind;
  td.className = kind === 'n' ? 'n' : kind === 'link' ? '' : `v-${kind}`;
  if (link) td.replaceChildren(h('button', { class: 'ent-link', type: 'button', title: `Open ${text}` }, text));
  else td.textContent = text;
}

/** RFC 4180 CSV of a result (values as JSON gives them, so nothing is rounded). */
export function toCsv(columns, rows) {
  const cell = (v) => {
    const text = v === null || v === undefined ? '' : typeof v === 'object' && !Array.isArray(v) && !('entity' in v) ? stringifyJson(v) : valueText(v);
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
