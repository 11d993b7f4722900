// What a person types for a field (the entity view's edits and the add-component form),
// checked to be a literal of the language of the field's type and turned into the statement
// parameter the page sends: `UPDATE C SET f = $v FROM 12v0` with `v` written as exact JSON
// (json.js). Nothing is rounded on the way: an integer outside the double's safe range is a
// BigInt, and a value that does not fit the field is refused here with a message rather than
// changed.

/**
 * The range of each integer type, as the language can write it: its integers are i64, so a
 * u64 field takes 0 to i64::MAX (docs/query-language.md, "Types").
 */
const INTEGER_RANGES = {
  i8: [-(2n ** 7n), 2n ** 7n - 1n],
  i16: [-(2n ** 15n), 2n ** 15n - 1n],
  i32: [-(2n ** 31n), 2n ** 31n - 1n],
  i64: [-(2n ** 63n), 2n ** 63n - 1n],
  u8: [0n, 2n ** 8n - 1n],
  u16: [0n, 2n ** 16n - 1n],
  u32: [0n, 2n ** 32n - 1n],
  u64: [0n, 2n ** 63n - 1n],
};

/** The language's integer literal (with a unary minus). */
const INTEGER = /^-?\d+$/;
/** The language's number literals: `12`, `2.5`, `.5`, `2e3`, `2.5E-3` (with a unary minus). */
const NUMBER = /^-?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const ENTITY = /^\d+v\d+$/;

/** An integer of `type` from its literal text: a Number when exact as one, else a BigInt. */
export function integerLiteral(raw, type) {
  if (!INTEGER.test(raw)) throw new Error(`'${raw}' is not an integer`);
  const value = BigInt(raw);
  const [min, max] = INTEGER_RANGES[type];
  if (value < min || value > max) {
    const why = type === 'u64' && value > max ? ' (the language\'s integers are 64-bit signed)' : '';
    throw new Error(`${raw} is out of range for ${type}: ${min} to ${max}${why}`);
  }
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
}

/** A float of `type` (`f32` or `f64`) from its literal text. */
export function floatLiteral(raw, type) {
  if (!NUMBER.test(raw)) throw new Error(`'${raw}' is not a number`);
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${raw} is out of range for a float`);
  // Rounding to the nearest f32 is expected (the server does it); overflowing is not.
  if (type === 'f32' && !Number.isFinite(Math.fround(n))) throw new Error(`${raw} is out of range for f32`);
  return n;
}

/**
 * The parameter value of the text typed for a field of `type` (a schema field type: `i32`,
 * `u64`, `f32`, `bool`, `entity`, `vec2`, `string`, …); throws an Error saying what is wrong.
 * `null` is null for any type (the server decides whether the field takes it).
 */
export function parseFieldInput(text, type) {
  const t = String(type || '').toLowerCase().split(/\s+/)[0];
  const raw = text.trim();
  if (raw.toLowerCase() === 'null') return null;
  if (Object.hasOwn(INTEGER_RANGES, t)) return integerLiteral(raw, t);
  if (t === 'f32' || t === 'f64') return floatLiteral(raw, t);
  if (t === 'bool') {
    if (!/^(true|false)$/i.test(raw)) throw new Error('type true or false');
    return raw.toLowerCase() === 'true';
  }
  if (t === 'entity') {
    if (!ENTITY.test(raw)) throw new Error(`'${raw}' is not an entity id like 12v0`);
    return { entity: raw };
  }
  if (t === 'vec2' || t === 'vec3') {
    const size = t === 'vec2' ? 2 : 3;
    const parts = raw.replace(/^\[|\]$/g, '').split(',').map((x) => x.trim());
    if (parts.length !== size) throw new Error(`type ${size} numbers, like [1, 2${size === 3 ? ', 3' : ''}]`);
    return parts.map((x) => floatLiteral(x, 'f32')); // vectors hold f32s
  }
  return text; // a string: exactly as typed
}
