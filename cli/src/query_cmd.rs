//! `ecsdb query WORLD TEXT`: one read-only statement, printed as a table, JSON or CSV; and
//! the `--param NAME=VALUE` parsing shared with `exec`.

use std::io::{self, BufWriter, Write};

use ecsdb::query::{Database, Params};
use ecsdb::{Entity, Value};

use crate::format;
use crate::{Failure, QueryArgs, world_file};

/// Runs `ecsdb query`.
pub fn run(args: &QueryArgs) -> Result<(), Failure> {
    let (world, text) = match (&args.connect, &args.world, &args.text) {
        // With --connect the one positional argument is the statement.
        (Some(url), Some(text), None) => {
            return crate::remote::query(
                url,
                args.token.as_deref(),
                &text.to_string_lossy(),
                &args.params,
                args.format,
            );
        }
        (Some(url), None, Some(text)) => {
            return crate::remote::query(url, args.token.as_deref(), text, &args.params, args.format);
        }
        (Some(_), _, _) => {
            return Err(Failure::usage("with --connect, give only the statement: ecsdb query --connect URL TEXT"));
        }
        (None, Some(world), Some(text)) => (world, text),
        (None, _, _) => return Err(Failure::usage("usage: ecsdb query WORLD TEXT (or --connect URL TEXT)")),
    };
    let params = build_params(&args.params)?;
    let world_path = world;
    let world = world_file::load(world_path)?;
    let db = Database::from_world(world);
    match ecsdb::query::is_read_only(text) {
        Ok(true) => {}
        Ok(false) => {
            return Err(Failure::usage(format!(
                "`ecsdb query` runs only read-only statements (SELECT, EXPLAIN, SHOW, DESCRIBE), and this one \
                 changes the world.\nhint: use `ecsdb exec {} SCRIPT` (SCRIPT a file, or - to read it from stdin)",
                world_path.display()
            )));
        }
        // A statement that does not parse: report it below, as the query's own error.
        Err(_) => {}
    }
    let rs = match db.query(text, &params) {
        Ok(rs) => rs,
        Err(err) => {
            format::eprint_line(&format::render_error(text, &err, None));
            return Err(Failure::Statement);
        }
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    format::write_result(&mut out, &rs, args.format).and_then(|()| out.flush()).map_err(format::output_failure)
}

/// A parameter from the command line: `$name` or `$1`, and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Which parameter it binds.
    pub name: ParamName,
    /// The value, parsed as a literal of the language.
    pub value: Value,
}

/// The name of a parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamName {
    /// `$1`, `$2`, … (1-based).
    Position(usize),
    /// `$name`.
    Named(String),
}

/// Parses `NAME=VALUE` (clap value parser). NAME is `name`, `$name`, `1` or `$1`; VALUE is a
/// literal of the query language: an integer, a float, `'string'` or `"string"` (with the
/// language's escapes), `true`/`false`, `null`, an entity `12v0`, a vector `[1, 2.5]`;
/// anything else is taken as a bare string.
pub fn parse_param(arg: &str) -> Result<Param, String> {
    let (name, value) =
        arg.split_once('=').ok_or_else(|| format!("expected NAME=VALUE (for example level=3), got '{arg}'"))?;
    let name = name.trim();
    let bare = name.strip_prefix('$').unwrap_or(name);
    let name = if !bare.is_empty() && bare.bytes().all(|b| b.is_ascii_digit()) {
        match bare.parse::<usize>() {
            Ok(n) if n >= 1 => ParamName::Position(n),
            _ => return Err(format!("parameter numbers start at 1, got '{name}'")),
        }
    } else if ecsdb::is_identifier(bare) {
        ParamName::Named(bare.to_string())
    } else {
        return Err(format!("'{name}' is not a parameter name (use a name like level, or a number like 1)"));
    };
    let value = parse_literal(value)?;
    Ok(Param { name, value })
}

/// Parses a literal of the query language, falling back to a bare string.
pub fn parse_literal(text: &str) -> Result<Value, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(Value::Str(text.to_string()));
    }
    let lower = t.to_ascii_lowercase();
    match lower.as_str() {
        "null" => return Ok(Value::Null),
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        _ => {}
    }
    if t.starts_with('\'') || t.starts_with('"') {
        return parse_quoted(t);
    }
    if let Some(inner) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        let parts: Result<Vec<f64>, String> = inner
            .split(',')
            .map(|p| match parse_number(p.trim()) {
                Some(Ok(v)) => v.as_f64().ok_or_else(|| "vector elements must be numbers".to_string()),
                Some(Err(e)) => Err(e),
                None => Err(format!("'{}' in vector {t} is not a number", p.trim())),
            })
            .collect();
        return match parts?.as_slice() {
            [a, b] => Ok(Value::Vec2([*a, *b])),
            [a, b, c] => Ok(Value::Vec3([*a, *b, *c])),
            other => Err(format!("a vector has 2 or 3 elements, {t} has {}", other.len())),
        };
    }
    if let Some((idx, r#gen)) = t.split_once(['v', 'V'])
        && !idx.is_empty()
        && !r#gen.is_empty()
        && (idx.bytes().chain(r#gen.bytes())).all(|b| b.is_ascii_digit())
    {
        return match (idx.parse::<u32>(), r#gen.parse::<u32>()) {
            (Ok(i), Ok(g)) if !Entity::from_parts(i, g).is_null() => Ok(Value::Entity(Entity::from_parts(i, g))),
            _ => Err(format!("entity {t} is out of range")),
        };
    }
    match parse_number(t) {
        Some(r) => r,
        None => Ok(Value::Str(text.to_string())),
    }
}

/// `Some` when the text has the shape of a number of the language: `-7`, `3.5`, `1e-3`.
fn parse_number(t: &str) -> Option<Result<Value, String>> {
    let digits = t.strip_prefix('-').unwrap_or(t);
    if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        return Some(t.parse::<i64>().map(Value::Int).map_err(|_| format!("integer {t} is out of range")));
    }
    // A float: digits, optional `.digits`, optional exponent. `2.` is not a float.
    let bytes = digits.as_bytes();
    let mut i = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if i < bytes.len() && bytes[i] == b'.' {
        let frac = bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if frac == 0 {
            return None;
        }
        i += 1 + frac;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        let exp = bytes[j..].iter().take_while(|b| b.is_ascii_digit()).count();
        if exp == 0 {
            return None;
        }
        i = j + exp;
    }
    if i != bytes.len() {
        return None;
    }
    Some(t.parse::<f64>().map(Value::Float).map_err(|e| format!("bad number {t}: {e}")))
}

fn parse_quoted(t: &str) -> Result<Value, String> {
    let mut chars = t.chars();
    let quote = chars.next().unwrap_or('\'');
    let mut out = String::new();
    loop {
        match chars.next() {
            None => return Err(format!("unterminated string {t}")),
            Some('\\') => match chars.next() {
                Some('\\') => out.push('\\'),
                Some('\'') => out.push('\''),
                Some('"') => out.push('"'),
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(c) => return Err(format!("unknown escape \\{c} in {t}")),
                None => return Err(format!("unterminated string {t}")),
            },
            Some(c) if c == quote => break,
            Some(c) => out.push(c),
        }
    }
    if chars.next().is_some() {
        return Err(format!("text after the closing quote in {t}"));
    }
    Ok(Value::Str(out))
}

/// Builds query parameters: positional ones must be `$1..$n` without gaps.
pub fn build_params(params: &[Param]) -> Result<Params, Failure> {
    let mut positional: Vec<(usize, &Value)> = Vec::new();
    let mut named: Vec<(&str, &Value)> = Vec::new();
    for p in params {
        match &p.name {
            ParamName::Position(n) => {
                if positional.iter().any(|(m, _)| m == n) {
                    return Err(Failure::usage(format!("parameter ${n} given twice")));
                }
                positional.push((*n, &p.value));
            }
            ParamName::Named(name) => {
                if named.iter().any(|(m, _)| m == name) {
                    return Err(Failure::usage(format!("parameter ${name} given twice")));
                }
                named.push((name, &p.value));
            }
        }
    }
    positional.sort_by_key(|(n, _)| *n);
    let mut out = Params::new();
    for (expected, (n, v)) in positional.into_iter().enumerate() {
        if n != expected + 1 {
            return Err(Failure::usage(format!(
                "parameter ${} is missing (positional parameters are $1..$n)",
                expected + 1
            )));
        }
        out = out.bind(v.clone());
    }
    for (name, v) in named {
        out = out.set(name, v.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Value {
        parse_literal(s).unwrap()
    }

    #[test]
    fn literals() {
        assert_eq!(lit("42"), Value::Int(42));
        assert_eq!(lit("-7"), Value::Int(-7));
        assert_eq!(lit("3.5"), Value::Float(3.5));
        assert_eq!(lit("1e-3"), Value::Float(0.001));
        assert_eq!(lit("2."), Value::Str("2.".into()));
        assert_eq!(lit("'red'"), Value::Str("red".into()));
        assert_eq!(lit("\"it\\'s\""), Value::Str("it's".into()));
        assert_eq!(lit("red"), Value::Str("red".into()));
        assert_eq!(lit("TRUE"), Value::Bool(true));
        assert_eq!(lit("null"), Value::Null);
        assert_eq!(lit("12v0"), Value::Entity(Entity::from_parts(12, 0)));
        assert_eq!(lit("[1, 2.5]"), Value::Vec2([1.0, 2.5]));
        assert_eq!(lit("[1,2,3]"), Value::Vec3([1.0, 2.0, 3.0]));
        assert_eq!(lit(""), Value::Str(String::new()));
        assert!(parse_literal("'open").is_err());
        assert!(parse_literal("99999999999999999999").is_err());
        assert!(parse_literal("99999999999v0").is_err());
        assert!(parse_literal("[1]").is_err());
    }

    #[test]
    fn params() {
        let p = parse_param("$level=3").unwrap();
        assert_eq!(p.name, ParamName::Named("level".into()));
        assert_eq!(p.value, Value::Int(3));
        assert_eq!(parse_param("1=x").unwrap().name, ParamName::Position(1));
        assert_eq!(parse_param("team=a=b").unwrap().value, Value::Str("a=b".into()));
        assert!(parse_param("0=1").is_err());
        assert!(parse_param("no-equals").is_err());
        assert!(parse_param("bad name=1").is_err());
        let two = [parse_param("2=b").unwrap()];
        assert!(build_params(&two).is_err());
    }
}
