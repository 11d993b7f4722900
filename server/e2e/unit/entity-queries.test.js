// The entity list's statements (entity-queries.js): keyset pages in entity order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitFilter, entityPageQuery, entityCountQuery } from '../../assets/js/entity-queries.js';

test('a filter splits at its top-level WHERE', () => {
  assert.deepEqual(splitFilter('Health, !Frozen WHERE Health.hp < 10'), { terms: 'Health, !Frozen', where: 'Health.hp < 10' });
  assert.deepEqual(splitFilter('where Health.hp > 1'), { terms: '', where: 'Health.hp > 1' });
  assert.deepEqual(splitFilter("Name WHERE Name.value = 'a WHERE b'"), { terms: 'Name', where: "Name.value = 'a WHERE b'" });
  assert.deepEqual(splitFilter('Position,'), { terms: 'Position', where: '' });
});

test('a page asks for the ids after the last one shown, in entity order', () => {
  assert.deepEqual(entityPageQuery('', { pageSize: 50 }), { text: 'SELECT entity\nORDER BY entity\nLIMIT 51', params: {} });
  const next = entityPageQuery('Health WHERE Health.hp < 10 -- low', { after: '49v0', label: 'Name.value', pageSize: 50 });
  assert.equal(next.text,
    'SELECT entity, Name.value FROM Health, ?Name WHERE (Health.hp < 10 -- low\n) AND entity > $after\nORDER BY entity\nLIMIT 51');
  assert.deepEqual(next.params, { after: { entity: '49v0' } });
  assert.equal(entityCountQuery('Health WHERE Health.hp < 10').text, 'SELECT count(*) FROM Health WHERE Health.hp < 10');
  assert.equal(entityCountQuery('').text, 'SELECT count(*)');
});
