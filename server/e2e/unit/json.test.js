// Lossless JSON (json.js): integers beyond 2^53 are exact both ways; everything else is what
// JSON.parse and JSON.stringify make.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJson, stringifyJson, sameJson } from '../../assets/js/json.js';

test('integers outside the safe range parse as BigInt, with every digit', () => {
  assert.equal(JSON.parse('9007199254740993'), 9007199254740992, 'what JSON.parse loses');
  assert.equal(parseJson('9007199254740993'), 9007199254740993n);
  assert.deepEqual(parseJson('{"rows":[["0v0",9007199254740993,-9223372036854775808,1.5]]}'), {
    rows: [['0v0', 9007199254740993n, -9223372036854775808n, 1.5]],
  });
  // The safe range stays Number, on either path.
  assert.equal(parseJson('9007199254740991'), 9007199254740991);
  assert.deepEqual(parseJson('[9007199254740991, 9007199254740993]'), [9007199254740991, 9007199254740993n]);
});

test('floats with many digits, exponents and long digit runs in strings are not integers', () => {
  assert.equal(parseJson('0.10000000149011612'), 0.10000000149011612);
  assert.equal(parseJson('12345678901234567.5'), 12345678901234567.5);
  assert.equal(parseJson('1e300'), 1e300);
  assert.equal(parseJson('12345678901234567e2'), 12345678901234567e2);
  assert.deepEqual(parseJson('["id 12345678901234567", 12345678901234567]'), ['id 12345678901234567', 12345678901234567n]);
});

test('the slow path reads what JSON.parse reads', () => {
  const big = '12345678901234567890';
  for (const text of [
    `{"a": [1, -0, 2.5e-3, true, false, null, "x\\"y\\\\z\\u00e9\\n"], "b": {}, "c": [], "__proto__": ${big}}`,
    ` [ "", {"k": [ [ ] ]} , ${big} ] `,
  ]) {
    const parsed = parseJson(text);
    const plain = JSON.parse(text);
    assert.equal(stringifyJson(parsed), JSON.stringify(plain).replace(/1234567890123456\d*/, big));
  }
  assert.equal(Object.getPrototypeOf(parseJson(`{"__proto__": ${big}}`)), Object.prototype);
  for (const bad of [`[${big},]`, `{"a" ${big}}`, `[${big}`, `${big} x`, `["a\n", ${big}]`, `[01, ${big}]`]) {
    assert.throws(() => parseJson(bad), SyntaxError, bad);
  }
});

test('BigInt values are written as integers, the rest as JSON.stringify writes them', () => {
  assert.equal(stringifyJson({ v: 9007199254740993n, s: 'a"b', n: null, u: undefined, a: [1, undefined] }),
    '{"v":9007199254740993,"s":"a\\"b","n":null,"a":[1,null]}');
  assert.equal(stringifyJson(-9223372036854775808n), '-9223372036854775808');
  const text = '{"params":{"v":9007199254740993}}';
  assert.equal(stringifyJson(parseJson(text)), text);
});

test('sameJson compares parsed values, BigInt included', () => {
  assert.equal(sameJson(['a', 9007199254740993n, { x: 1, y: [2] }], ['a', 9007199254740993n, { y: [2], x: 1 }]), true);
  assert.equal(sameJson([9007199254740993n], [9007199254740992n]), false);
  assert.equal(sameJson({ a: 1 }, { a: 1, b: 2 }), false);
  assert.equal(sameJson([1], { 0: 1 }), false);
  assert.equal(sameJson(null, {}), false);
  assert.equal(sameJson(undefined, 1), false);
});
