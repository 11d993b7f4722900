// The inspector's lexer against the query crate's token rules (query/src/lex/token.rs, whose
// own tests these cases follow), and the functions built on it, with a language given as the
// `schema` answer gives it. Run: `npm run unit` (no browser).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  tokenize, classify, languageOf, NO_LANGUAGE, leadingKeyword, withoutLeadingWord, hasTopLevelLimit, isScript,
  stripTrailingSemicolon,
} from '../../assets/js/lexer.js';

/** The significant tokens as [type, text]. */
const kinds = (text) => tokenize(text).filter((t) => t.type !== 'ws' && t.type !== 'comment').map((t) => [t.type, t.text]);

/** A few keywords and functions in the shape of the `schema` answer. */
const LANGUAGE = languageOf({
  keywords: [
    { word: 'SELECT', reserved: true, starts_statement: true },
    { word: 'SPAWN', reserved: true, starts_statement: true },
    { word: 'EXPLAIN', reserved: true, starts_statement: true },
    { word: 'WHERE', reserved: true, starts_statement: false },
    { word: 'NOT', reserved: true, starts_statement: false },
    { word: 'COUNT', reserved: false, starts_statement: false },
  ],
  functions: [
    { name: 'count', kind: 'aggregate', signature: 'count(*) | count(x)' },
    { name: 'abs', kind: 'scalar', signature: 'abs(x)' },
  ],
});

test('numbers and entities are cut as the query crate cuts them', () => {
  assert.deepEqual(kinds('12v0 12v 12vx 2. 2.x 2.5 2.5e3 2e3 2e 2E-4 .5 .5e+1 7 12v0x'), [
    ['ent', '12v0'], ['num', '12'], ['ident', 'v'], ['num', '12'], ['ident', 'vx'], ['num', '2.'], ['num', '2.x'],
    ['num', '2.5'], ['num', '2.5e3'], ['num', '2e3'], ['num', '2'], ['ident', 'e'], ['num', '2E-4'], ['num', '.5'],
    ['num', '.5e+1'], ['num', '7'], ['num', '12'], ['ident', 'v0x'],
  ]);
});

test('strings, parameters and unknown characters', () => {
  assert.deepEqual(kinds(String.raw`'it''s' 'a\'b' "q" $1 $name $1x $ 'open`), [
    ['str', "'it'"], ['str', "'s'"], ['str', String.raw`'a\'b'`], ['str', '"q"'], ['param', '$1'], ['param', '$name'],
    ['param', '$1'], ['ident', 'x'], ['other', '$'], ['str', "'open"],
  ]);
  // A string may span lines; an escaped quote does not close it.
  assert.deepEqual(kinds("'a\nb' \"c\\\"d\""), [['str', "'a\nb'"], ['str', '"c\\"d"']]);
  assert.deepEqual(kinds('é \u000B'), [['other', 'é'], ['other', '\u000B']]);
  assert.deepEqual(kinds('a\u{1F600}b'), [['ident', 'a'], ['other', '\u{1F600}'], ['ident', 'b']]);
});

test('operators, comments and whitespace', () => {
  assert.deepEqual(kinds('a<=b<>c!=d==e||f|g<h>=i -- c\n;'), [
    ['ident', 'a'], ['op', '<='], ['ident', 'b'], ['op', '<>'], ['ident', 'c'], ['op', '!='], ['ident', 'd'],
    ['op', '=='], ['ident', 'e'], ['op', '||'], ['ident', 'f'], ['op', '|'], ['ident', 'g'], ['op', '<'],
    ['ident', 'h'], ['op', '>='], ['ident', 'i'], ['op', ';'],
  ]);
  assert.deepEqual(tokenize('a -- c\nb').map((t) => t.type), ['ident', 'ws', 'comment', 'ws', 'ident']);
});

test('tokens cover any text, in order', () => {
  for (const text of ['', "'", '--', '-', '1.', '$', 'a\u2603b', "'\\", '"a\\"', '1e+', '\u0000', 'SELECT 1;\n']) {
    const tokens = tokenize(text);
    assert.equal(tokens.map((t) => t.text).join(''), text);
    let at = 0;
    for (const t of tokens) {
      assert.equal(t.start, at);
      at += t.text.length;
    }
  }
});

test('keywords and functions are the language given; components and fields the schema', () => {
  const components = new Map([['Health', ['hp', 'max']]]);
  const types = (text, language) => classify(tokenize(text), components, language)
    .filter((t) => t.type !== 'ws').map((t) => [t.type, t.text]);
  assert.deepEqual(types('select abs(Health.hp) where x', LANGUAGE), [
    ['kw', 'select'], ['fn', 'abs'], ['op', '('], ['comp', 'Health'], ['op', '.'], ['field', 'hp'], ['op', ')'],
    ['kw', 'where'], ['ident', 'x'],
  ]);
  // Without the schema's language, no word is a keyword or a function.
  assert.deepEqual(types('SELECT abs', NO_LANGUAGE), [['ident', 'SELECT'], ['ident', 'abs']]);
});

test('languageOf reads the schema answer and tolerates one without the fields', () => {
  assert.deepEqual([...LANGUAGE.statementStarts].sort(), ['EXPLAIN', 'SELECT', 'SPAWN']);
  assert.equal(LANGUAGE.keywords.has('WHERE'), true);
  assert.deepEqual(LANGUAGE.functions.get('count'), { kind: 'aggregate', signature: 'count(*) | count(x)' });
  const empty = languageOf({ components: [] });
  assert.equal(empty.keywords.size + empty.statementStarts.size + empty.functions.size, 0);
});

test('statement kinds: the leading keyword, scripts, LIMIT and the trailing semicolon', () => {
  assert.equal(leadingKeyword('  -- c\n select 1', LANGUAGE), 'SELECT');
  assert.equal(leadingKeyword("SPAWN A {s: 'x'}", LANGUAGE), 'SPAWN');
  // Bare term lists: a component, `?C`, or `NOT C` (a keyword that starts no statement).
  assert.equal(leadingKeyword('Health, !Frozen', LANGUAGE), '');
  assert.equal(leadingKeyword('?Team', LANGUAGE), '');
  assert.equal(leadingKeyword('NOT Frozen', LANGUAGE), '');
  assert.equal(withoutLeadingWord(' explain SELECT 1', 'EXPLAIN'), ' SELECT 1');
  assert.equal(withoutLeadingWord('SELECT explain', 'EXPLAIN'), 'SELECT explain');
  assert.equal(isScript('SELECT 1; SELECT 2'), true);
  assert.equal(isScript("SELECT ';'; -- done"), false);
  assert.equal(hasTopLevelLimit('SELECT x LIMIT 3'), true);
  assert.equal(hasTopLevelLimit("SELECT (SELECT 1 LIMIT 1), 'limit'"), false);
  assert.equal(stripTrailingSemicolon('SELECT 1; -- done'), 'SELECT 1 -- done');
  assert.equal(stripTrailingSemicolon("SELECT ';'"), "SELECT ';'");
});
