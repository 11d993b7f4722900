// How values print (values.js): exact integers, f32s as stored, CSV.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { valueText, formatF32, toCsv, isNumeric } from '../../assets/js/values.js';
import { parseJson } from '../../assets/js/json.js';
import { formatCount } from '../../assets/js/dom.js';

test('integers beyond 2^53 print with every digit', () => {
  const [row] = parseJson('{"rows":[[9007199254740993,-9223372036854775807,{"n":18014398509481985}]]}').rows;
  assert.deepEqual(row.map((v) => valueText(v)), ['9007199254740993', '-9223372036854775807', '{n: 18014398509481985}']);
  assert.equal(isNumeric(row[0]) && isNumeric(1) && !isNumeric('1'), true);
  assert.equal(formatCount(9007199254740993n), '9,007,199,254,740,993');
  assert.equal(formatCount(1234567), '1,234,567');
});

test('an f32 prints as the shortest text that reads back as it', () => {
  assert.equal(formatF32(0.10000000149011612), '0.1');
  assert.equal(valueText(0.10000000149011612, 'f32'), '0.1');
  assert.equal(valueText(0.10000000149011612, 'f64'), '0.10000000149011612');
  assert.equal(valueText({ hp: 0.10000000149011612 }, { hp: 'f32' }), '{hp: 0.1}');
  assert.equal(valueText([1, 2.5]), '[1, 2.5]');
  assert.equal(valueText(null), 'null');
  assert.equal(valueText({ entity: '3v1' }), '3v1');
});

test('CSV keeps values exact and quotes what needs it', () => {
  const csv = toCsv(['entity', 'n', 'c'], [['0v0', 9007199254740993n, { a: 'x,y', n: 9007199254740993n }]]);
  assert.equal(csv, 'entity,n,c\r\n0v0,9007199254740993,"{""a"":""x,y"",""n"":9007199254740993}"\r\n');
});
