// What a person types for a field (literals.js): checked as a literal of the field's type,
// never rounded into another value.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFieldInput, integerLiteral, floatLiteral } from '../../assets/js/literals.js';

test('integers are exact: Number in the safe range, BigInt beyond', () => {
  assert.equal(parseFieldInput('42', 'i32'), 42);
  assert.equal(parseFieldInput(' -7 ', 'i8'), -7);
  assert.equal(parseFieldInput('9007199254740993', 'u64'), 9007199254740993n);
  assert.equal(parseFieldInput('-9223372036854775808', 'i64'), -9223372036854775808n);
  assert.equal(parseFieldInput('9223372036854775807', 'u64'), 9223372036854775807n);
});

test('integers outside the field type, or not integers, are refused', () => {
  assert.throws(() => integerLiteral('128', 'i8'), /out of range for i8: -128 to 127/);
  assert.throws(() => integerLiteral('-1', 'u8'), /out of range for u8/);
  assert.throws(() => integerLiteral('4294967296', 'u32'), /out of range/);
  assert.throws(() => integerLiteral('9223372036854775808', 'i64'), /out of range/);
  // u64's upper half is beyond what the language's i64 integers can write.
  assert.throws(() => integerLiteral('18446744073709551615', 'u64'), /64-bit signed/);
  for (const bad of ['1.5', '1e3', '0x10', '', '+1', '1_000', ' ', 'Infinity']) {
    assert.throws(() => parseFieldInput(bad, 'i64'), /not an integer/, bad);
  }
});

test('floats take the language\'s number literals and fit their type', () => {
  assert.equal(floatLiteral('2.5', 'f64'), 2.5);
  assert.equal(floatLiteral('.5', 'f32'), 0.5);
  assert.equal(floatLiteral('-2e3', 'f64'), -2000);
  assert.equal(floatLiteral('7', 'f32'), 7);
  assert.equal(floatLiteral('3.5e38', 'f64'), 3.5e38);
  assert.throws(() => floatLiteral('3.5e38', 'f32'), /out of range for f32/);
  assert.throws(() => floatLiteral('1e400', 'f64'), /out of range/);
  for (const bad of ['2.', 'NaN', 'Infinity', '0x1', '1,5', '', '- 1']) {
    assert.throws(() => parseFieldInput(bad, 'f64'), /not a number/, bad);
  }
});

test('bools, entities, vectors, strings and null', () => {
  assert.equal(parseFieldInput('TRUE', 'bool'), true);
  assert.throws(() => parseFieldInput('yes', 'bool'), /true or false/);
  assert.deepEqual(parseFieldInput('12v0', 'entity'), { entity: '12v0' });
  assert.throws(() => parseFieldInput('12', 'entity'), /entity id/);
  assert.deepEqual(parseFieldInput('[1, 2.5]', 'vec2'), [1, 2.5]);
  assert.deepEqual(parseFieldInput('1,2,3', 'vec3'), [1, 2, 3]);
  assert.throws(() => parseFieldInput('[1, 2]', 'vec3'), /3 numbers/);
  assert.throws(() => parseFieldInput('[1, x]', 'vec2'), /not a number/);
  assert.equal(parseFieldInput(" it's  ", 'string'), " it's  ");
  assert.equal(parseFieldInput('null', 'i32'), null);
});
