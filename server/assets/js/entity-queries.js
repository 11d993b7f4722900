// The statements the entity list sends. The list pages in entity order by key (keyset paging):
// each page asks for the ids after the last one shown, `WHERE entity > $after ORDER BY entity
// LIMIT n`, so a page never depends on how many rows came before it. On a live world entities
// move between archetype tables (a tag added or removed), which reorders a plain scan: paging
// that scan by OFFSET would show some entities twice and others never.

import { tokenize } from './lexer.js';

/**
 * Splits a filter into its term list and the condition of its top-level `WHERE` (without the
 * word): `'Health, !Frozen WHERE Health.hp < 10'` → `{terms: 'Health, !Frozen', where: 'Health.hp < 10'}`.
 */
export function splitFilter(filter) {
  // (A term list typed with a trailing comma still lists.)
  const termsOf = (text) => text.trim().replace(/,$/, '').trim();
  let depth = 0;
  for (const token of tokenize(filter)) {
    if (token.text === '(' || token.text === '[') depth += 1;
    else if (token.text === ')' || token.text === ']') depth -= 1;
    else if (depth === 0 && token.type === 'ident' && token.text.toUpperCase() === 'WHERE') {
      return { terms: termsOf(filter.slice(0, token.start)), where: filter.slice(token.start + token.text.length).trim() };
    }
  }
  return { terms: termsOf(filter), where: '' };
}

/**
 * One page of the list: `{text, params}` for `query`, asking for `pageSize + 1` ids (the extra
 * one says whether a next page exists) after the entity id `after` (null: from the first), in
 * entity order. `label` (`Name.value`, say) adds a column read from an optional component.
 */
export function entityPageQuery(filter, { after = null, label = null, pageSize }) {
  const { terms, where } = splitFilter(filter);
  const from = [terms, label ? `?${label.split('.')[0]}` : ''].filter(Boolean).join(', ');
  // The person's condition in parentheses, closed on a line of its own (a `--` comment in it
  // ends there).
  const conditions = [where ? `(${where}\n)` : '', after ? 'entity > $after' : ''].filter(Boolean);
  const text = [
    `SELECT ${label ? `entity, ${label}` : 'entity'}`,
    from ? ` FROM ${from}` : '',
    conditions.length ? ` WHERE ${conditions.join(' AND ')}` : '',
    `\nORDER BY entity\nLIMIT ${pageSize + 1}`,
  ].join('');
  return { text, params: after ? { after: { entity: after } } : {} };
}

/** The number of entities the filter matches: `{text}` for `query`. */
export function entityCountQuery(filter) {
  const { terms, where } = splitFilter(filter);
  return { text: `SELECT count(*)${terms ? ` FROM ${terms}` : ''}${where ? ` WHERE ${where}` : ''}` };
}
