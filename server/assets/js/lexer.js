// A tokenizer of the query language for highlighting and completion. It never fails: text it
// does not understand becomes `other` tokens, so half-typed statements still highlight.

/** Keywords of the language (reserved words and the contextual ones), upper case. */
export const KEYWORDS = new Set(`SELECT FROM WHERE GROUP ORDER BY LIMIT OFFSET AND OR NOT IN IS NULL
TRUE FALSE LIKE BETWEEN AS ENTITY EXPLAIN SPAWN DESPAWN ADD REMOVE UPDATE SET CREATE DROP SHOW
DESCRIBE TO ON USING ASC DESC OPTIONAL COMPONENT COMPONENTS INDEX INDEXES TABLES SYSTEM SYSTEMS
TICK DT PHASE AFTER BEFORE BEGIN END IF EXISTS SCHEDULE REFERENCES ACYCLIC CASCADE RESTRICT NO
ACTION DELETE`.split(/\s+/));

/** Built-in functions, lower case. */
export const FUNCTIONS = new Set(`count sum avg min max abs sqrt floor ceil round len lower upper has
distance within inside depth root descendant_of changed added`.split(/\s+/));

const RULES = [
  ['ws', /\s+/y],
  ['comment', /--[^\n]*/y],
  ['str', /'(?:\\.|[^'\\\n])*'?|"(?:\\.|[^"\\\n])*"?/y],
  ['ent', /\d+v\d+\b/y],
  ['num', /(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?/y],
  ['param', /\$[A-Za-z0-9_]+/y],
  ['ident', /[A-Za-z_][A-Za-z0-9_]*/y],
  ['op', /<=|>=|<>|!=|==|\|\||[-+*/%<>=!|?(),;.[\]{}:]/y],
  ['other', /[^]/y],
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

/**
 * Classifies identifiers: keyword, function, component (known to the schema), field (after
 * `Component.`), or plain. `components` maps a component name to its field names.
 */
export function classify(tokens, components) {
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
      } else if (KEYWORDS.has(token.text.toUpperCase())) {
        token.type = 'kw';
      } else if (FUNCTIONS.has(token.text.toLowerCase())) {
        token.type = 'fn';
      }
    }
    if (token.type !== 'ws' && token.type !== 'comment') {
      beforePrev = prevSignificant;
      prevSignificant = token;
    }
  }
  return tokens;
}

/** The first keyword of the first statement (upper case), or '' for a bare term list. */
export function leadingKeyword(text) {
  for (const token of tokenize(text)) {
    if (token.type === 'ws' || token.type === 'comment') continue;
    return token.type === 'ident' && KEYWORDS.has(token.text.toUpperCase()) ? token.text.toUpperCase() : '';
  }
  return '';
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
  const tokens = tokenize(text).filter((t) => t.type !== 'ws' && t.type !== 'comment');
  const semi = tokens.findIndex((t) => t.text === ';');
  return semi >= 0 && semi < tokens.length - 1;
}

/** Removes a trailing `;` (and blanks) so a LIMIT can be appended after the statement. */
export function stripTrailingSemicolon(text) {
  return text.replace(/;\s*$/, '');
}
