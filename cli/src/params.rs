//! `--param NAME=VALUE`: statement parameters from the command line, shared by `exec`,
//! `query` and `watch` (local and `--connect`).
//!
//! VALUE is read by the language itself ([`ecsdb::query::parse_value`]: its expression parser
//! and constant evaluation), so `.5`, `1e-3`, `'it\'s'`, `12v0`, `[1, 2]` and `2 * 3` mean on
//! the command line what they mean in a statement. One convenience on top: a bare word
//! (`red`, `north_gate`) is the string it spells, as in SQLite's shell. Anything else that is
//! not a value of the language is an error, so a mistyped number or entity (`12V0`, `1.2.3`)
//! is reported instead of being sent as a string.

use ecsdb::Value;
use ecsdb::query::Params;

use crate::Failure;

/// A parameter from the command line: `$name` or `$1`, and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Which parameter it binds.
    pub name: ParamName,
    /// The value, as the language reads VALUE.
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

impl ParamName {
    /// The key the protocol's `params` object uses: `"1"` or `"name"`.
    pub fn key(&self) -> String {
        match self {
            ParamName::Position(n) => n.to_string(),
            ParamName::Named(s) => s.clone(),
        }
    }
}

/// Parses `NAME=VALUE` (clap value parser). NAME is `name`, `$name`, `1` or `$1`; VALUE is
/// read by [`parse_param_value`].
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
    let value = parse_param_value(value)?;
    Ok(Param { name, value })
}

/// The value VALUE writes: a constant of the language; a bare word is the string it spells;
/// empty text is the empty string.
pub fn parse_param_value(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(Value::Str(text.to_string()));
    }
    match ecsdb::query::parse_value(trimmed) {
        Ok(v) => Ok(v),
        Err(_) if ecsdb::is_identifier(trimmed) => Ok(Value::Str(trimmed.to_string())),
        Err(e) => Err(format!(
            "'{trimmed}' is not a value of the language ({}); quote text to pass it as a string: '{}'",
            e.message,
            trimmed.replace('\\', "\\\\").replace('\'', "\\'")
        )),
    }
}

/// Builds query parameters: positional ones must be `$1..$n` without gaps, and no name is
/// given twice.
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
    use ecsdb::Entity;

    fn value(s: &str) -> Value {
        parse_param_value(s).unwrap()
    }

    #[test]
    fn values_are_the_languages() {
        assert_eq!(value("42"), Value::Int(42));
        assert_eq!(value("-7"), Value::Int(-7));
        assert_eq!(value("3.5"), Value::Float(3.5));
        assert_eq!(value(".5"), Value::Float(0.5), "the language's float syntax, not a string");
        assert_eq!(value("1e-3"), Value::Float(0.001));
        assert_eq!(value("'red'"), Value::Str("red".into()));
        assert_eq!(value("\"it\\'s\""), Value::Str("it's".into()));
        assert_eq!(value("TRUE"), Value::Bool(true));
        assert_eq!(value("null"), Value::Null);
        assert_eq!(value("12v0"), Value::Entity(Entity::from_parts(12, 0)));
        assert_eq!(value("2 * 3"), Value::Int(6));
        assert_eq!(value(""), Value::Str(String::new()));
    }

    #[test]
    fn a_bare_word_is_a_string() {
        assert_eq!(value("red"), Value::Str("red".into()));
        assert_eq!(value("north_gate"), Value::Str("north_gate".into()));
        assert_eq!(value(" red "), Value::Str("red".into()));
    }

    #[test]
    fn what_the_language_rejects_is_an_error() {
        // `12V0` is not an entity (the language writes `12v0`), and not a word either.
        let err = parse_param_value("12V0").unwrap_err();
        assert!(err.contains("'12V0'"), "{err}");
        for bad in ["'open", "99999999999999999999", "1.2.3", "Health.hp", "two words"] {
            assert!(parse_param_value(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn names_and_positions() {
        let p = parse_param("$level=3").unwrap();
        assert_eq!(p.name, ParamName::Named("level".into()));
        assert_eq!(p.value, Value::Int(3));
        assert_eq!(parse_param("1=x").unwrap().name, ParamName::Position(1));
        assert_eq!(parse_param("team='a=b'").unwrap().value, Value::Str("a=b".into()));
        assert!(parse_param("0=1").is_err());
        assert!(parse_param("no-equals").is_err());
        assert!(parse_param("bad name=1").is_err());
        let two = [parse_param("2=b").unwrap()];
        assert!(build_params(&two).is_err());
    }
}
