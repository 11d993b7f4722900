//! Reading SPAWNs by shape against parsing each: generated scripts of SPAWNs, written alike
//! and not, with values of every kind (and broken ones), must give the same statements, or
//! the same error, either way.

use crate::parse::parser::parse_script_with;
use crate::test_rng::Rng;

const COMPONENTS: &[&str] = &["Position", "Team", "End", "count", "Tag", "_x1", "Health"];
const FIELDS: &[&str] = &["x", "y", "name", "value", "from", "hp", "set"];
const NUMBERS: &[&str] = &[
    "0",
    "5",
    "-5",
    "007",
    "2.5",
    "-0.125",
    "523.74115",
    "9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "99999999999999999999",
    "1e3",
    "-1.5e-3",
    ".5",
    "-.5",
    "2.",
    "2.x",
    "12v0",
    "1e400",
    "- 5",
    "-(5)",
    "1 + 2",
    "3x",
];
const STRINGS: &[&str] =
    &["'red'", "\"blue\"", "''", "'a\\'b'", "'a\\q'", "'--x'", "'a;b'", "'\\n'", "'é'", "'open", "'}'"];
const WORDS: &[&str] = &["true", "FALSE", "Null", "$1", "$name", "entity", "[1, 2]", "has(A)", "x"];

/// One SPAWN's text, in one of a few layouts.
fn spawn(rng: &mut Rng, layout: usize) -> String {
    let (open, colon, comma) = [(" {", ": ", ", "), ("{", ":", ","), (" { ", " : ", " , ")][layout % 3];
    let mut s = String::from(if layout == 3 { "spawn " } else { "SPAWN " });
    for c in 0..1 + rng.below(3) {
        if c > 0 {
            s.push_str(comma);
        }
        s.push_str(rng.usually(3, COMPONENTS));
        let fields = rng.below(4);
        if fields > 0 || rng.chance(10) {
            s.push_str(open);
            for (f, field) in FIELDS.iter().take(fields).enumerate() {
                if f > 0 {
                    s.push_str(comma);
                }
                s.push_str(field);
                s.push_str(colon);
                s.push_str(match rng.below(10) {
                    0..=4 => rng.usually(6, NUMBERS),
                    5..=7 => rng.usually(3, STRINGS),
                    _ => rng.usually(3, WORDS),
                });
            }
            s.push('}');
        }
    }
    s
}

/// Both ways of reading `src`, as text to compare: the statements with their spans, or the
/// error with its span.
fn both(src: &str) -> (String, String) {
    let show = |r: Result<crate::parse::Script, crate::Error>| match r {
        Ok(script) => format!("{:?}", script.into_statements(src)),
        Err(e) => format!("error {:?} at {:?}: {}", e.kind, e.span, e.message),
    };
    (show(parse_script_with(src, true)), show(parse_script_with(src, false)))
}

#[test]
fn spawns_read_by_shape_are_the_parsed_ones() {
    let mut rng = Rng::new(47);
    for round in 0..300 {
        // A few shapes repeated, as a bulk load writes them; sometimes another layout or a
        // comment, an empty statement, or another statement between.
        let layout = rng.below(4);
        let mut src = String::new();
        for _ in 0..1 + rng.below(12) {
            let this_layout = if rng.chance(90) { layout } else { rng.below(4) };
            src.push_str(&spawn(&mut rng, this_layout));
            src.push_str(rng.usually(2, &[";\n", "; ", ";", "; -- c\n", ";;", " ;\n"]));
            if rng.chance(5) {
                src.push_str("SELECT 1;\n");
            }
        }
        if rng.chance(30) {
            src.truncate(src.trim_end().trim_end_matches(';').len()); // no final `;`
        }
        let (shaped, parsed) = both(&src);
        assert_eq!(shaped, parsed, "round {round}: {src}");
    }
}

#[test]
fn a_statement_that_only_starts_like_a_shape_is_parsed() {
    let base = "SPAWN Team {name: 'a'}, Position {x: 1, y: -2};\n";
    for tail in [
        "SPAWN Team {name: 'b'}, Position {x: 3, y: -4} SELECT 1;",
        "SPAWN Team {name: 'b'}, Position {x: 3, y: -4}x;",
        "SPAWN Team {name: 'b'}, Position {x: 3, y: -4}, Tag;",
        "SPAWN Team {name: 'b'}, Position {x: 3, y: -4",
        "SPAWN Team {name: b}, Position {x: 3, y: -4};",
        "SPAWN Team {name: 'b'}, Position {x: 3v1, y: -4};",
        "SPAWN Team {name: 'b'}, Position {x: 3, y: -4.};",
        "SPAWN Team {name: 'b\\n'}, Position {x: 3, y: -4};",
        "SPAWN Team {name: 'b'}, Position {x: 3, y: -99999999999999999999};",
        "SPAWN Team {name: 'b'}, Position {x: 3, y: -4} -- done",
        "SPAWN Team {name: 'b'}, Position {x: 3, y: -4}",
    ] {
        let src = format!("{base}{tail}");
        let (shaped, parsed) = both(&src);
        assert_eq!(shaped, parsed, "{src}");
    }
}

#[test]
fn statements_of_a_remembered_shape_are_read_without_a_parse() {
    use super::SpawnShapes;
    use crate::lex::Splitter;
    use crate::parse::{Script, ScriptItem};
    let src = "SPAWN Position {x: 1.5, y: -2}, Team {name: 'red'}, Player;\n\
               SPAWN Position {x: 7, y: -1e3}, Team {name: 'blue'}, Player;\n\
               SPAWN Position {x: 1, y: 2}, Team {name: 'x'}, Monster;";
    let script = parse_script_with(src, false).unwrap();
    let ScriptItem::Spawn(first) = &script.items[0] else { panic!("the first SPAWN is flat") };
    let mut tokens = Vec::new();
    Splitter::new(src).next_statement(&mut tokens).unwrap();
    let mut shapes = SpawnShapes::default();
    shapes.remember(src, &tokens, first, &script);
    let second = src.find("SPAWN Position {x: 7").unwrap();
    let mut read = Script::default();
    let (spawn, end) = shapes.read(src, second, &mut read).expect("the second SPAWN has the first's shape");
    assert_eq!(&src[end - 1..end], ";");
    let ScriptItem::Spawn(expected) = &script.items[1] else { panic!("flat") };
    assert_eq!(format!("{:?}", read.statement(&spawn, src)), format!("{:?}", script.statement(expected, src)));
    // The third differs in a name: not this shape.
    assert!(shapes.read(src, src.find("SPAWN Position {x: 1,").unwrap(), &mut read).is_none());
}
