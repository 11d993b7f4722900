// JSON without losing integers. The server writes integers exactly (an i64 or u64 field's
// value), but JSON.parse reads every number as a double, so 9007199254740993 would show as
// 9007199254740992. Here integers outside the safe range (±2^53 − 1) are read as BigInt and
// written back as their digits; every other value is what JSON.parse and JSON.stringify make.
// Used wherever the page reads an answer (the connection's worker) or writes a request.

/**
 * An integer literal of 16 or more digits (MAX_SAFE_INTEGER has 16), not part of a float's
 * fraction or exponent. Text without one parses exactly with JSON.parse, which is much faster
 * than the parser below; a match inside a string only costs the slower path.
 */
const LONG_INTEGER = /(?:^|[^\d.eE+-])-?\d{16,}(?![\d.eE])/;
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;
const LITERALS = [['true', true], ['false', false], ['null', null]];

/** Parses JSON text as JSON.parse does, but integers outside the safe range become BigInt. */
export function parseJson(text) {
  if (!LONG_INTEGER.test(text)) return JSON.parse(text);
  const parser = new Parser(text);
  const value = parser.value();
  parser.space();
  if (parser.pos !== text.length) parser.fail('unexpected text after the value');
  return value;
}

/** JSON text of `value`, as JSON.stringify writes it, with BigInt values written as integers. */
export function stringifyJson(value) {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined || typeof v === 'function' ? 'null' : stringifyJson(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = [];
    for (const [key, v] of Object.entries(value)) {
      if (v !== undefined && typeof v !== 'function') members.push(`${JSON.stringify(key)}:${stringifyJson(v)}`);
    }
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Whether two parsed JSON values are equal (BigInt included; object key order aside). */
export function sameJson(a, b) {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
}

/** A recursive-descent JSON reader (RFC 8259), used only for text that holds long integers. */
class Parser {
  constructor(text) {
    this.text = text;
    this.pos = 0;
  }

  fail(why) {
    throw new SyntaxError(`JSON at position ${this.pos}: ${why}`);
  }

  space() {
    WHITESPACE.lastIndex = this.pos;
    WHITESPACE.exec(this.text);
    this.pos = WHITESPACE.lastIndex;
  }

  value() {
    this.space();
    const c = this.text[this.pos];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') return this.string();
    if (c === '-' || (c >= '0' && c <= '9')) return this.number();
    for (const [word, value] of LITERALS) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return value;
      }
    }
    return this.fail(c === undefined ? 'unexpected end' : `unexpected '${c}'`);
  }

  object() {
    const out = {};
    this.pos += 1;
    this.space();
    if (this.text[this.pos] === '}') {
      this.pos += 1;
      return out;
    }
    for (;;) {
      this.space();
      if (this.text[this.pos] !== '"') this.fail('expected a key');
      const key = this.string();
      this.space();
      if (this.text[this.pos] !== ':') this.fail("expected ':'");
      this.pos += 1;
      // (defineProperty: a key "__proto__" is data, as JSON.parse makes it.)
      Object.defineProperty(out, key, { value: this.value(), enumerable: true, writable: true, configurable: true });
      this.space();
      const c = this.text[this.pos++];
      if (c === '}') return out;
      if (c !== ',') this.fail("expected ',' or '}'");
    }
  }

  array() {
    const out = [];
    this.pos += 1;
    this.space();
    if (this.text[this.pos] === ']') {
      this.pos += 1;
      return out;
    }
    for (;;) {
      out.push(this.value());
      this.space();
      const c = this.text[this.pos++];
      if (c === ']') return out;
      if (c !== ',') this.fail("expected ',' or ']'");
    }
  }

  string() {
    // The closing quote is the first one not escaped; JSON.parse decodes the escapes.
    let end = this.pos + 1;
    for (;;) {
      const c = this.text[end];
      if (c === undefined) this.fail('unterminated string');
      if (c === '"') break;
      end += c === '\\' ? 2 : 1;
    }
    const s = JSON.parse(this.text.slice(this.pos, end + 1));
    this.pos = end + 1;
    return s;
  }

  number() {
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.text);
    if (!m) this.fail('bad number');
    this.pos = NUMBER.lastIndex;
    const n = Number(m[0]);
    const integer = m[1] === undefined && m[2] === undefined;
    return integer && !Number.isSafeInteger(n) ? BigInt(m[0]) : n;
  }
}
