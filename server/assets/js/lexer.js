// Tokens of the query language, for highlighting, completion and telling statements apart. The
// rules mirror the query crate's lexer (query/src/lex/token.rs), which the browser cannot call;
// which words are keywords and functions is the server's to say (the `schema` answer's
// `keywords` and `functions`, read by languageOf), so every function here that needs them
// takes a `language`. Tokenizing never fails: text it does not understand becomes `other`
// tokens, so half-typed statements still highlight.

/** A language that knows no keyword or function (before the first `schema` answer). */
export const NO_LANGUAGE = Object.freeze({ keywords: new Set(), statementStarts: new Set(), functions: new Map() });

/**
 * The language as the `schema` answer describes it: `keywords` (upper case), the keywords
 * that start a statement (`statementStarts`), and `functions` by lower-case name with their
 * `{kind, signature}`. An answer without the fields gives NO_LANGUAGE's empty sets.
 */
export function languageOf(schema) {
  const keywords = Array.isArray(schema?.keywords) ? schema.keywords.filter((k) => typeof k?.word === 'string') : [];
  const functions = Array.isArray(schema?.functions) ? schema.functions.filter((f) => typeof f?.name === 'string') : [];
  return {
    keywords: new Set(keywords.map((k) => k.word.toUpperCase())),
    statementStarts: new Set(keywords.filter((k) => k.starts_statement === true).map((k) => k.word.toUpperCase())),
    functions: new Map(functions.map((f) => [f.name.toLowerCase(), { kind: f.kind ?? 'function', signature: f.signature ?? '' }])),
  };
}

const EXPONENT = '(?:[eE][+-]?\\d+)';
/** The token rules, in the lexer's order of preference (first match wins). */
const RULES = [
  ['ws', /[ \t\n\f\r]+/y], // the grammar's WHITESPACE; other spaces are `other`
  ['comment', /--[^\n]*/y],
  // Backslash escapes; an unclosed quote takes the rest of the text.
  ['str', /'(?:\\[^]?|[^'\\])*'?|"(?:\\[^]?|[^"\\])*"?/y],
  // `12v0`, not followed by a word character (`12v0x` is the number 12 and the name v0x).
  ['ent', /\d+v\d+(?![A-Za-z0-9_])/y],
  // `2.5`, `2.5e3`, the malformed `2.` and `2.x` (the parser reports them), `2e3`, `2`, `.5`.
  ['num', new RegExp(`\\d+\\.(?:\\d+${EXPONENT}?|[A-Za-z0-9_]*)|\\d+${EXPONENT}?|\\.\\d+${EXPONENT}?`, 'y')],
  ['param', /\$(?:\d+|[A-Za-z_][A-Za-z0-9_]*)/y],
  ['ident', /[A-Za-z_][A-Za-z0-9_]*/y],
  ['op', /<=|<>|>=|!=|==|\|\||[-+*/%<>=!|?(),;.[\]{}:]/y],
  ['other', /[^]/uy],
];

/** Splits `text` into `{type, text, start}` tokens covering every character. */
export function tokenize(text) {
  const tokens = [];
  let pos = 0;
  while (pos < text.length) {
    for (const [type, re] of RULES) {
      re.lastIndex = pos;
      const m = re.exec(text);
      if (m && m[0].length > 0) {
        tokens.push({ type, text: m[0], start: pos });
        pos += m[0].length;
        break;
      }
    }
  }
  return tokens;
}

const isTrivia = (token) => token.type === 'ws' || token.type === 'comment';

/**
 * Classifies identifiers: keyword, function, component (known to the schema), field (after
 * `Component.`), or plain. `components` maps a component name to its field names; `language`
 * is languageOf's.
 */
export function classify(tokens, components, language) {
  let prevSignificant = null;
  let beforePrev = null;
  for (const token of tokens) {
    if (token.type === 'ident') {
      const afterDot = prevSignificant && prevSignificant.text === '.';
      if (afterDot && beforePrev && beforePrev.type === 'comp' && components.get(beforePrev.text)?.includes(token.text)) {
        token.type = 'field';
      } else if (afterDot && components.has(token.text)) {
        token.type = 'comp'; // a path step: C.f.D
      } else if (afterDot) {
        token.type = 'field';
      } else if (components.has(token.text)) {
        token.type = 'comp';
      } else if (language.keywords.has(token.text.toUpperCase())) {
        token.type = 'kw';
      } else if (language.functions.has(token.text.toLowerCase())) {
        token.type = 'fn';
      }
    }
    if (!isTrivia(token)) {
      beforePrev = prevSignificant;
      prevSignificant = token;
    }
  }
  return tokens;
}

/** The first token that is not whitespace or a comment, or undefined. */
function firstSignificant(tokens) {
  return tokens.find((t) => !isTrivia(t));
}

/**
 * The keyword the statement starts with (upper case) when it is one that starts statements
 * (`SELECT`, `SPAWN`, …), or '' for a bare term list (`Health, !Frozen`, `NOT Frozen`).
 */
export function leadingKeyword(text, language) {
  const first = firstSignificant(tokenize(text));
  const word = first?.type === 'ident' ? first.text.toUpperCase() : '';
  return language.statementStarts.has(word) ? word : '';
}

/** The text after a leading `word` (a keyword, any case), or the text itself without one. */
export function withoutLeadingWord(text, word) {
  const first = firstSignificant(tokenize(text));
  return first?.type === 'ident' && first.text.toUpperCase() === word ? text.slice(first.start + first.text.length) : text;
}

/** True when the text has a `LIMIT` or `OFFSET` outside parentheses and brackets. */
export function hasTopLevelLimit(text) {
  let depth = 0;
  for (const token of tokenize(text)) {
    if (token.text === '(' || token.text === '[') depth += 1;
    else if (token.text === ')' || token.text === ']') depth -= 1;
    else if (depth === 0 && token.type === 'ident' && /^(limit|offset)$/i.test(token.text)) return true;
  }
  return false;
}

/** True when the text holds more than one statement (a `;` followed by more than blanks). */
export function isScript(text) {
  const tokens = tokenize(text).filter((t) => !isTrivia(t));
  const semi = tokens.findIndex((t) => t.text === ';');
  return semi >= 0 && semi < tokens.length - 1;
}

/**
 * Removes the `;` that ends the statement (comments after it stay), so that a LIMIT can be
 * appended on a new line.
 */
export function stripTrailingSemicolon(text) {
  const last = tokenize(text).filter((t) => !isTrivia(t)).pop();
  return last?.text === ';' ? text.slice(0, last.start) + text.slice(last.start + 1) : text;
}
