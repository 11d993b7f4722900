//! The parser's tests: every statement form, precedence, errors and their positions.

use super::super::MAX_EXPR_DEPTH;
use super::super::syntax_error::expected_label;
use super::super::{parse_expression, parse_script, parse_statement, parse_system_body};
use super::*;
use proptest::prelude::*;

// ----- helpers -----------------------------------------------------------------------

/// The reserved words of the keyword table, lower case.
fn reserved() -> Vec<String> {
    crate::lex::KEYWORDS.iter().filter(|k| k.reserved).map(|k| k.word.to_ascii_lowercase()).collect()
}

fn stmt(src: &str) -> Statement {
    parse_statement(src).unwrap_or_else(|e| panic!("{src:?} failed:\n{}", e.render(src)))
}

fn select(src: &str) -> Select {
    match stmt(src) {
        Statement::Select(s) => s,
        other => panic!("not a SELECT: {other:?}"),
    }
}

fn expr(src: &str) -> Expr {
    parse_expression(src).unwrap_or_else(|e| panic!("{src:?} failed:\n{}", e.render(src)))
}

/// The expression as an s-expression: shows the tree's shape unambiguously.
fn sx(e: &Expr) -> String {
    let list = |items: &[Expr]| items.iter().map(sx).collect::<Vec<_>>().join(" ");
    let neg = |negated: bool, name: &str| if negated { format!("not-{name}") } else { name.to_string() };
    match &e.kind {
        ExprKind::Literal(Literal::Str(s)) => format!("{s:?}"),
        ExprKind::Literal(Literal::Float(x)) => format!("{x:?}"),
        ExprKind::Literal(lit) => lit.to_string(),
        ExprKind::EntityLit { index, generation } => format!("{index}v{generation}"),
        ExprKind::Param(p) => p.to_string(),
        ExprKind::Vector(items) => format!("[{}]", list(items)),
        ExprKind::Field { component, field } => format!("{component}.{field}"),
        ExprKind::Path { .. } => format!("(path {e})"),
        ExprKind::Component(c) => c.name.clone(),
        ExprKind::EntityId => "entity".into(),
        ExprKind::Unary { expr, .. } => format!("(neg {})", sx(expr)),
        ExprKind::Binary { op, lhs, rhs } => format!("({op} {} {})", sx(lhs), sx(rhs)),
        ExprKind::Not(x) => format!("(not {})", sx(x)),
        ExprKind::Between { expr, low, high, negated } => {
            format!("({} {} {} {})", neg(*negated, "between"), sx(expr), sx(low), sx(high))
        }
        ExprKind::InList { expr, list: items, negated } => {
            format!("({} {} [{}])", neg(*negated, "in"), sx(expr), list(items))
        }
        ExprKind::Like { expr, pattern, negated } => {
            format!("({} {} {})", neg(*negated, "like"), sx(expr), sx(pattern))
        }
        ExprKind::IsNull { expr, negated } => format!("({} {})", neg(*negated, "is-null"), sx(expr)),
        ExprKind::Call { name, args } => format!("({name} {})", list(args)),
        ExprKind::CountStar => "count(*)".into(),
    }
}

fn sx_of(src: &str) -> String {
    sx(&expr(src))
}

fn err(src: &str) -> Error {
    match parse_statement(src) {
        Ok(s) => panic!("{src:?} parsed: {s:?}"),
        Err(e) => e,
    }
}

fn rendered(src: &str) -> String {
    err(src).render(src)
}

fn names(idents: &[Ident]) -> Vec<&str> {
    idents.iter().map(|i| i.name.as_str()).collect()
}

fn term_sx(terms: &[Term]) -> Vec<String> {
    terms
        .iter()
        .map(|t| match &t.kind {
            TermKind::Required(c) => c.name.clone(),
            TermKind::Not(c) => format!("!{c}"),
            TermKind::Optional(c) => format!("?{c}"),
            TermKind::AnyOf(cs) => names(cs).join("|"),
        })
        .collect()
}

fn filter(target: &Target) -> (&[Term], Option<&Expr>) {
    match target {
        Target::Filter(f) => (&f.from, f.where_.as_ref()),
        Target::Entity(e) => panic!("not a filter: {e:?}"),
    }
}

fn entity_target(target: &Target) -> String {
    match target {
        Target::Entity(e) => e.to_string(),
        Target::Filter(f) => panic!("not an entity: {f:?}"),
    }
}

fn values(components: &[ComponentValue]) -> Vec<String> {
    components
        .iter()
        .map(|c| {
            let fields: Vec<String> = c.fields.iter().map(|f| format!("{}: {}", f.field, sx(&f.value))).collect();
            format!("{} {{{}}}", c.component, fields.join(", "))
        })
        .collect()
}

/// Every expression in a statement, for span checks.
fn statement_exprs(s: &Statement) -> Vec<&Expr> {
    fn terms_where<'a>(out: &mut Vec<&'a Expr>, target: &'a Target) {
        match target {
            Target::Entity(e) => out.push(e),
            Target::Filter(f) => out.extend(f.where_.iter()),
        }
    }
    fn of_select<'a>(out: &mut Vec<&'a Expr>, s: &'a Select) {
        for item in &s.items {
            if let SelectItem::Expr { expr, .. } = item {
                out.push(expr);
            }
        }
        out.extend(s.where_.iter().chain(&s.group_by).chain(s.order_by.iter().map(|k| &k.expr)));
        out.extend(s.limit.iter().chain(s.offset.iter()));
    }
    let mut out = Vec::new();
    match s {
        Statement::Select(sel) => of_select(&mut out, sel),
        Statement::Explain(e) => of_select(&mut out, &e.select),
        Statement::Spawn(sp) => out.extend(sp.components.iter().flat_map(|c| c.fields.iter().map(|f| &f.value))),
        Statement::Despawn(d) => terms_where(&mut out, &d.target),
        Statement::Add(a) => {
            out.extend(a.components.iter().flat_map(|c| c.fields.iter().map(|f| &f.value)));
            terms_where(&mut out, &a.target);
        }
        Statement::Remove(r) => terms_where(&mut out, &r.target),
        Statement::Update(u) => {
            out.extend(u.assignments.iter().map(|a| &a.value));
            terms_where(&mut out, &u.target);
        }
        _ => {}
    }
    out
}

// ----- statements --------------------------------------------------------------------

#[test]
fn select_with_every_clause() {
    let s = select(
        "SELECT entity, Name.value AS n, Health FROM Health, !Frozen, ?Name, A | B | C \
         WHERE Health.hp < 5 GROUP BY Team.name, entity ORDER BY n DESC, Health.hp ASC, 1 \
         LIMIT 10 OFFSET $skip",
    );
    assert!(!s.bare);
    let items: Vec<_> = s.items.iter().map(|i| i.column_name().unwrap()).collect();
    assert_eq!(items, ["entity", "n", "Health"]);
    match &s.items[0] {
        SelectItem::Expr { expr, alias: None, .. } => assert_eq!(expr.kind, ExprKind::EntityId),
        other => panic!("{other:?}"),
    }
    match &s.items[2] {
        SelectItem::Expr { expr, .. } => assert_eq!(sx(expr), "Health"),
        other => panic!("{other:?}"),
    }
    assert_eq!(term_sx(&s.from), ["Health", "!Frozen", "?Name", "A|B|C"]);
    assert_eq!(sx(s.where_.as_ref().unwrap()), "(< Health.hp 5)");
    assert_eq!(s.group_by.iter().map(sx).collect::<Vec<_>>(), ["Team.name", "entity"]);
    let order: Vec<_> = s.order_by.iter().map(|k| (sx(&k.expr), k.desc)).collect();
    assert_eq!(order, [("n".into(), true), ("Health.hp".into(), false), ("1".into(), false)]);
    assert_eq!(sx(s.limit.as_ref().unwrap()), "10");
    assert_eq!(sx(s.offset.as_ref().unwrap()), "$skip");
}

#[test]
fn select_minimal_forms() {
    let s = select("SELECT *");
    assert_eq!(s.items, [SelectItem::Star { span: Span::new(7, 8) }]);
    assert!(s.from.is_empty() && s.where_.is_none() && s.limit.is_none() && s.order_by.is_empty());
    let s = select("SELECT *, Position.x FROM Position");
    assert_eq!(s.items.len(), 2);
    let s = select("SELECT Name.value WHERE Health.hp < 5");
    assert!(s.from.is_empty());
    assert_eq!(s.items[0].column_name(), Some("Name.value"));
}

#[test]
fn bare_term_lists() {
    let src = "Position, Velocity, !Frozen";
    let s = select(src);
    assert!(s.bare);
    assert_eq!(s.items, [SelectItem::Star { span: Span::new(0, src.len()) }]);
    assert_eq!(term_sx(&s.from), ["Position", "Velocity", "!Frozen"]);
    assert_eq!(term_sx(&select("Player").from), ["Player"]);
    assert_eq!(term_sx(&select("NOT A, OPTIONAL B, ? C, ! D, E|F").from), ["!A", "?B", "?C", "!D", "E|F"]);
}

#[test]
fn contextual_keywords_are_names_elsewhere() {
    // OPTIONAL, COUNT, DESC, INDEX, … are keywords only where expected.
    assert_eq!(term_sx(&select("Optional, Index").from), ["Optional", "Index"]);
    assert_eq!(term_sx(&select("OPTIONAL Optional").from), ["?Optional"]);
    assert_eq!(term_sx(&select("SELECT * FROM Optional").from), ["Optional"]);
    let s = select("SELECT count, desc FROM Tables ORDER BY desc DESC");
    assert_eq!(s.items[1].column_name(), Some("desc"));
    assert_eq!((sx(&s.order_by[0].expr), s.order_by[0].desc), ("desc".into(), true));
    // Field names may be any word, reserved ones included.
    let s = select("SELECT C.from, C.select, C.entity FROM C");
    assert_eq!(
        s.items.iter().map(|i| i.column_name().unwrap()).collect::<Vec<_>>(),
        ["C.from", "C.select", "C.entity"]
    );
    match stmt("CREATE COMPONENT Link (entity entity, index i32, set bool)") {
        Statement::CreateComponent(c) => {
            assert_eq!(c.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["entity", "index", "set"])
        }
        other => panic!("{other:?}"),
    }
    match stmt("UPDATE C SET set = 1, from = 2") {
        Statement::Update(u) => assert_eq!(u.assignments[1].field.name, "from"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn reserved_words_are_not_names() {
    for word in reserved() {
        let word = word.as_str();
        let mut sources = vec![format!("DESCRIBE {word}"), format!("SELECT a AS {word}")];
        // (`FROM not …` is the start of the term `NOT C`.)
        if word != "not" {
            sources.push(format!("SELECT a FROM {word}"));
        }
        for src in sources {
            let e = err(&src);
            assert_eq!(e.kind, ErrorKind::Syntax, "{src}");
            assert!(e.message.contains("reserved word"), "{src}: {}", e.message);
        }
    }
    for word in ["by", "asc", "desc", "optional", "component", "components", "index", "indexes", "tables", "count"] {
        stmt(&format!("DESCRIBE {word}"));
        stmt(&format!("SELECT {word}.x AS {word} FROM {word}"));
    }
}

#[test]
fn reserved_list_matches_the_grammar() {
    let grammar = include_str!("../../../../grammar/ecsdb.pest");
    let start = grammar.find("reserved = _{").expect("the grammar has a reserved rule");
    let end = start + grammar[start..].find("~ !ident_char").expect("the rule ends");
    let mut in_grammar: Vec<&str> = grammar[start..end].split('"').skip(1).step_by(2).collect();
    let listed = reserved();
    let mut listed: Vec<&str> = listed.iter().map(String::as_str).collect();
    in_grammar.sort_unstable();
    listed.sort_unstable();
    assert_eq!(in_grammar, listed);
    // Words that merely start with a reserved word are names.
    for word in ["ordering", "Orders", "island", "Tom", "index", "settings", "fromage", "Selection", "Nothing", "asc"] {
        stmt(&format!("DESCRIBE {word}"));
    }
}

#[test]
fn explain() {
    match stmt("EXPLAIN SELECT * FROM A WHERE A.x > 1") {
        Statement::Explain(e) => {
            assert!(!e.select.bare);
            assert_eq!(term_sx(&e.select.from), ["A"]);
            assert_eq!(e.span, Span::new(0, 37));
            assert_eq!(e.select.span, Span::new(8, 37));
        }
        other => panic!("{other:?}"),
    }
    match stmt("explain A, !B") {
        Statement::Explain(e) => assert!(e.select.bare),
        other => panic!("{other:?}"),
    }
}

#[test]
fn spawn() {
    match stmt("SPAWN Position {x: 1, y: 2, z: 0}, Velocity {x: 0, y: -1.5, z: 0}, Player, Name {value: 'z' || \"ig\"}")
    {
        Statement::Spawn(s) => assert_eq!(
            values(&s.components),
            [
                "Position {x: 1, y: 2, z: 0}",
                "Velocity {x: 0, y: -1.5, z: 0}",
                "Player {}",
                "Name {value: (|| \"z\" \"ig\")}"
            ]
        ),
        other => panic!("{other:?}"),
    }
    match stmt("SPAWN") {
        Statement::Spawn(s) => assert!(s.components.is_empty()),
        other => panic!("{other:?}"),
    }
    match stmt("spawn Health {}, Pos {p: [1, 2]}") {
        Statement::Spawn(s) => assert_eq!(values(&s.components), ["Health {}", "Pos {p: [1 2]}"]),
        other => panic!("{other:?}"),
    }
}

/// The statements of a system body, each as its SPAWN's components (`-` for others).
fn body_spawns(statements: &[Statement]) -> Vec<String> {
    statements
        .iter()
        .map(|s| match s {
            Statement::Spawn(s) => values(&s.components).join(", "),
            _ => "-".into(),
        })
        .collect()
}

/// `END` right after a bare SPAWN ends its block; `End` stays a component name elsewhere,
/// and in a block after SPAWN where `{` or `,` follows it.
#[test]
fn a_bare_spawn_may_end_a_block() {
    let system = |src: &str| match stmt(src) {
        Statement::CreateSystem(c) => (c.body_text.clone(), body_spawns(&c.body)),
        other => panic!("{other:?}"),
    };
    assert_eq!(system("CREATE SYSTEM a AS BEGIN SPAWN END"), ("BEGIN SPAWN END".into(), vec!["".into()]));
    assert_eq!(system("CREATE SYSTEM a AS BEGIN DESPAWN; spawn end").1, ["-", ""]);
    assert_eq!(system("CREATE SYSTEM a AS BEGIN SPAWN; END").1, [""]);
    assert_eq!(system("CREATE SYSTEM a AS BEGIN SPAWN End {} END").1, ["End {}"]);
    assert_eq!(system("CREATE SYSTEM a AS BEGIN SPAWN End, X; SPAWN X, End END").1, ["End {}, X {}", "X {}, End {}"]);
    assert_eq!(system("CREATE SYSTEM a AS SPAWN End").1, ["End {}"]);
    assert_eq!(body_spawns(&parse_system_body("BEGIN SPAWN END").unwrap()), [""]);
    let script = parse_script("CREATE SYSTEM a AS BEGIN SPAWN END; SPAWN End").unwrap();
    assert_eq!(body_spawns(&script[1..]), ["End {}"]);
    // Outside blocks `End` is a component: pest and the hand-written parser agree.
    for statements in [parse("SPAWN End", Entry::Statement).unwrap(), vec![stmt("SPAWN End")]] {
        assert_eq!(body_spawns(&statements), ["End {}"]);
    }
    // In a block, a bare `End` after SPAWN is the block's END: what follows is an error.
    for (src, message, at) in [
        ("CREATE SYSTEM a AS BEGIN SPAWN End END", "expected `;` or end of input, found `END`", (1, 36)),
        ("CREATE SYSTEM a AS BEGIN SPAWN End; END", "expected end of input, found `END`", (1, 37)),
    ] {
        let e = err(src);
        assert_eq!((e.kind, e.message.as_str(), e.line_col(src)), (ErrorKind::Syntax, message, Some(at)), "\n{src}");
    }
}

/// A field's value that is a lone literal or parameter takes the grammar's short path
/// (`literal_value`); it must build exactly what the expression path builds.
#[test]
fn lone_literal_values_build_like_expressions() {
    let values = [
        "5",
        "-5",
        "2.5e3",
        ".5",
        "12v0",
        "-12v0",
        "'a;b'",
        "\"q\"",
        "$1",
        "$name",
        "true",
        "null",
        "x",
        "1 + 2",
        "(3)",
        "[1, 2]",
        "'a' || 'b'",
        "5 -- note\n",
    ];
    for value in values {
        let src = format!("SPAWN A {{v: {value} }}, B {{v: {value}, w: 0}}");
        let Statement::Spawn(spawn) = stmt(&src) else { panic!("{src}") };
        for component in &spawn.components {
            let field = &component.fields[0];
            let at = field.value.span.start;
            let alone = parse_expression(&src[at..at + value.trim_end().len()])
                .unwrap_or_else(|e| panic!("{value}: {}", e.render(value)));
            assert_eq!(sx(&field.value), sx(&alone), "{src}");
            assert_eq!(field.value.span, Span::new(at + alone.span.start, at + alone.span.end), "{src}");
        }
    }
    // Errors found while building the value are the same too.
    for (value, message) in [
        ("2.", "'2.' is not a number"),
        ("99999999999999999999", "out of range"),
        ("'a\\q'", "unknown escape"),
        ("$0", "numbered from $1"),
    ] {
        let e = err(&format!("SPAWN A {{v: {value}}}"));
        assert!(e.message.contains(message), "{value}: {}", e.message);
        assert_eq!(e, err(&format!("SPAWN A {{v: {value} + 0}}")), "{value}");
    }
}

#[test]
fn despawn() {
    let target = |src: &str| match stmt(src) {
        Statement::Despawn(d) => d.target,
        other => panic!("{other:?}"),
    };
    assert_eq!(entity_target(&target("DESPAWN 12v0")), "12v0");
    assert_eq!(entity_target(&target("DESPAWN $e")), "$e");
    let t = target("DESPAWN WHERE Health.hp <= 0");
    let (from, cond) = filter(&t);
    assert!(from.is_empty());
    assert_eq!(sx(cond.unwrap()), "(<= Health.hp 0)");
    let t = target("DESPAWN FROM A, !B WHERE A.x = 1");
    assert_eq!(term_sx(filter(&t).0), ["A", "!B"]);
    let t = target("DESPAWN FROM A");
    assert!(filter(&t).1.is_none());
    // No filter at all: every entity (the binder decides what that means).
    match target("DESPAWN") {
        Target::Filter(f) => assert_eq!((f.from.len(), f.where_.is_none(), f.span), (0, true, Span::new(7, 7))),
        other => panic!("{other:?}"),
    }
}

#[test]
fn add() {
    match stmt("ADD Frozen, Health {hp: 10} TO 12v0") {
        Statement::Add(a) => {
            assert_eq!(values(&a.components), ["Frozen {}", "Health {hp: 10}"]);
            assert_eq!(entity_target(&a.target), "12v0");
        }
        other => panic!("{other:?}"),
    }
    match stmt("ADD Frozen WHERE Position.y < 0") {
        Statement::Add(a) => assert_eq!(sx(filter(&a.target).1.unwrap()), "(< Position.y 0)"),
        other => panic!("{other:?}"),
    }
    match stmt("ADD Frozen TO $1") {
        Statement::Add(a) => assert_eq!(entity_target(&a.target), "$1"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn remove() {
    match stmt("REMOVE Frozen FROM 12v0") {
        Statement::Remove(r) => {
            assert_eq!(names(&r.components), ["Frozen"]);
            assert_eq!(entity_target(&r.target), "12v0");
        }
        other => panic!("{other:?}"),
    }
    match stmt("REMOVE Frozen, Velocity WHERE Health.hp <= 0") {
        Statement::Remove(r) => {
            assert_eq!(names(&r.components), ["Frozen", "Velocity"]);
            assert_eq!(sx(filter(&r.target).1.unwrap()), "(<= Health.hp 0)");
        }
        other => panic!("{other:?}"),
    }
    match stmt("REMOVE Frozen FROM Frozen, !Player WHERE entity != 1v0") {
        Statement::Remove(r) => assert_eq!(term_sx(filter(&r.target).0), ["Frozen", "!Player"]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn update() {
    match stmt("UPDATE Health SET hp = Health.hp + 10, max = 200 WHERE Team.name = 'red'") {
        Statement::Update(u) => {
            assert_eq!(u.component.name, "Health");
            let a: Vec<_> = u.assignments.iter().map(|a| format!("{} = {}", a.field, sx(&a.value))).collect();
            assert_eq!(a, ["hp = (+ Health.hp 10)", "max = 200"]);
            assert_eq!(sx(filter(&u.target).1.unwrap()), "(= Team.name \"red\")");
        }
        other => panic!("{other:?}"),
    }
    match stmt("UPDATE Position SET x = Position.x + Velocity.x FROM Position, Velocity, !Frozen") {
        Statement::Update(u) => assert_eq!(term_sx(filter(&u.target).0), ["Position", "Velocity", "!Frozen"]),
        other => panic!("{other:?}"),
    }
    match stmt("UPDATE Health SET hp = 1 FROM 3v1") {
        Statement::Update(u) => assert_eq!(entity_target(&u.target), "3v1"),
        other => panic!("{other:?}"),
    }
    match stmt("UPDATE Health SET hp = 1") {
        Statement::Update(u) => assert_eq!(filter(&u.target), (&[][..], None)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn references_and_paths() {
    let Statement::CreateComponent(c) =
        parse_statement("CREATE COMPONENT ChildOf (parent entity REFERENCES ON DELETE SET NULL ACYCLIC, n i32)")
            .unwrap()
    else {
        panic!()
    };
    let r = c.fields[0].reference.as_ref().unwrap();
    assert_eq!((r.on_delete, r.acyclic), (OnDelete::SetNull, true));
    assert!(c.fields[1].reference.is_none());
    for (text, policy) in [
        ("REFERENCES", OnDelete::NoAction),
        ("references on delete cascade", OnDelete::Cascade),
        ("REFERENCES ON DELETE REMOVE", OnDelete::Remove),
        ("REFERENCES ON DELETE RESTRICT", OnDelete::Restrict),
        ("REFERENCES ON DELETE NO ACTION", OnDelete::NoAction),
    ] {
        let Statement::CreateComponent(c) = parse_statement(&format!("CREATE COMPONENT A (p entity {text})")).unwrap()
        else {
            panic!()
        };
        assert_eq!(c.fields[0].reference.as_ref().unwrap().on_delete, policy, "{text}");
    }
    assert!(parse_statement("CREATE COMPONENT A (p entity REFERENCES ON DELETE)").is_err());
    assert_eq!(
        sx_of("ChildOf.parent.ChildOf.parent.Name.value = 'x'"),
        "(= (path ChildOf.parent.ChildOf.parent.Name.value) \"x\")"
    );
    assert_eq!(sx_of("ChildOf.parent.Name"), "(path ChildOf.parent.Name)");
    let e = expr("a.b.C.d + 1");
    let ExprKind::Binary { lhs, .. } = &e.kind else { panic!() };
    assert!(matches!(&lhs.kind, ExprKind::Path { steps, .. } if steps.len() == 1));
}

#[test]
fn create_component() {
    match stmt("CREATE COMPONENT Health (hp f32, max F32)") {
        Statement::CreateComponent(c) => {
            assert_eq!(c.name.name, "Health");
            let fields: Vec<_> = c.fields.iter().map(|f| (f.name.as_str(), f.ty)).collect();
            assert_eq!(fields, [("hp", FieldType::F32), ("max", FieldType::F32)]);
            assert_eq!(c.fields[1].ty_span, Span::new(37, 40));
            assert_eq!(c.fields[1].span, Span::new(33, 40));
        }
        other => panic!("{other:?}"),
    }
    for src in ["CREATE COMPONENT Frozen", "create component Frozen ()"] {
        match stmt(src) {
            Statement::CreateComponent(c) => assert!(c.fields.is_empty() && c.name.name == "Frozen"),
            other => panic!("{other:?}"),
        }
    }
    let all: Vec<String> = FieldType::ALL.iter().enumerate().map(|(i, t)| format!("f{i} {}", t.name())).collect();
    match stmt(&format!("CREATE COMPONENT Everything ({})", all.join(", "))) {
        Statement::CreateComponent(c) => {
            assert_eq!(c.fields.iter().map(|f| f.ty).collect::<Vec<_>>(), FieldType::ALL)
        }
        other => panic!("{other:?}"),
    }
    let e = err("CREATE COMPONENT X (a f23, b strnig)");
    assert_eq!((e.kind, e.span, e.suggestion.as_deref()), (ErrorKind::Type, Some(Span::new(22, 25)), Some("f32")));
}

#[test]
fn create_index() {
    let index = |src: &str| match stmt(src) {
        Statement::CreateIndex(c) => (
            c.name.map(|n| n.name),
            c.component.name,
            c.fields.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
            c.kind.name,
        ),
        other => panic!("{other:?}"),
    };
    assert_eq!(index("CREATE INDEX ON Position USING rtree"), (None, "Position".into(), vec![], "rtree".into()));
    assert_eq!(
        index("CREATE INDEX team_idx ON Team (name) USING bitmap"),
        (Some("team_idx".into()), "Team".into(), vec!["name".into()], "bitmap".into())
    );
    assert_eq!(
        index("create index on Health (hp, max) using BTREE"),
        (None, "Health".into(), vec!["hp".into(), "max".into()], "BTREE".into())
    );
}

#[test]
fn drop_show_describe() {
    match stmt("DROP INDEX team_idx") {
        Statement::DropIndex(d) => assert_eq!((d.name.name.as_str(), d.name.span), ("team_idx", Span::new(11, 19))),
        other => panic!("{other:?}"),
    }
    for (src, what) in [
        ("SHOW COMPONENTS", ShowWhat::Components),
        ("show tables", ShowWhat::Tables),
        ("Show Indexes", ShowWhat::Indexes),
    ] {
        match stmt(src) {
            Statement::Show(s) => assert_eq!((s.what, s.span), (what, Span::new(0, src.len()))),
            other => panic!("{other:?}"),
        }
    }
    match stmt("DESCRIBE Health;") {
        Statement::Describe(d) => assert_eq!((d.component.name.as_str(), d.span), ("Health", Span::new(0, 15))),
        other => panic!("{other:?}"),
    }
}

#[test]
fn keywords_are_case_insensitive_and_names_are_not() {
    let s = select(
        "sElEcT health.HP aS Hp FrOm Health wHeRe health.HP iS nOt NuLl AnD TRUE oR False OrDeR bY Hp DeSc LiMiT 1",
    );
    assert_eq!(s.items[0].column_name(), Some("Hp"));
    assert_eq!(sx(s.where_.as_ref().unwrap()), "(OR (AND (not-is-null health.HP) true) false)");
    assert!(s.order_by[0].desc);
    assert_eq!(sx_of("NULL"), "null");
    assert_eq!(sx_of("Entity"), "entity");
    assert_eq!(sx_of("a NoT bEtWeEn 1 AnD 2"), "(not-between a 1 2)");
    assert_eq!(sx_of("a not in (1) or b not like 'x%'"), "(OR (not-in a [1]) (not-like b \"x%\"))");
    assert_eq!(sx_of("COUNT(*) + Count(*)"), "(+ count(*) count(*))");
}

// ----- expressions -------------------------------------------------------------------

#[test]
fn every_binary_operator() {
    let cases = [
        ("a = b", "(= a b)"),
        ("a == b", "(= a b)"),
        ("a != b", "(!= a b)"),
        ("a <> b", "(!= a b)"),
        ("a < b", "(< a b)"),
        ("a <= b", "(<= a b)"),
        ("a > b", "(> a b)"),
        ("a >= b", "(>= a b)"),
        ("a AND b", "(AND a b)"),
        ("a OR b", "(OR a b)"),
        ("a + b", "(+ a b)"),
        ("a - b", "(- a b)"),
        ("a * b", "(* a b)"),
        ("a / b", "(/ a b)"),
        ("a % b", "(% a b)"),
        ("a || b", "(|| a b)"),
        ("a<=b", "(<= a b)"),
        ("a<-b", "(< a (neg b))"),
        ("a-1", "(- a 1)"),
        ("a- -1", "(- a -1)"),
    ];
    for (src, want) in cases {
        assert_eq!(sx_of(src), want, "{src}");
    }
}

#[test]
fn prefix_and_postfix_forms() {
    let cases = [
        ("NOT a", "(not a)"),
        ("NOT NOT a", "(not (not a))"),
        ("-a", "(neg a)"),
        ("- - a", "(neg (neg a))"),
        ("-(5)", "(neg 5)"),
        ("- -5", "(neg -5)"),
        ("a BETWEEN 1 AND 2", "(between a 1 2)"),
        ("a NOT BETWEEN -1 AND b + 1", "(not-between a -1 (+ b 1))"),
        ("a IN (1, 'x', b.c)", "(in a [1 \"x\" b.c])"),
        ("a NOT IN (1)", "(not-in a [1])"),
        ("a IN ()", "(in a [])"),
        ("a LIKE 'zig%'", "(like a \"zig%\")"),
        ("a NOT LIKE '_'", "(not-like a \"_\")"),
        ("a IS NULL", "(is-null a)"),
        ("a IS NOT NULL", "(not-is-null a)"),
        ("count(*)", "count(*)"),
        ("count(x)", "(count x)"),
        ("abs(-x)", "(abs (neg x))"),
        ("max(a, b)", "(max a b)"),
        ("now()", "(now )"),
        ("has(Frozen)", "(has Frozen)"),
        ("distance(Position, [1, 2, 3])", "(distance Position [1 2 3])"),
        ("within(P, [0, 0], 5.5)", "(within P [0 0] 5.5)"),
        ("[1.5, 2, -3]", "[1.5 2 -3]"),
        ("[a.x * 2, 1]", "[(* a.x 2) 1]"),
        ("entity = 3v0", "(= entity 3v0)"),
        ("Position", "Position"),
        ("Position.x", "Position.x"),
        ("$1 + $name", "(+ $1 $name)"),
        ("abs (x)", "(abs x)"),
    ];
    for (src, want) in cases {
        assert_eq!(sx_of(src), want, "{src}");
    }
}

#[test]
fn precedence_like_sqlite() {
    let cases = [
        ("a OR b AND c", "(OR a (AND b c))"),
        ("a AND b OR c", "(OR (AND a b) c)"),
        ("NOT a AND b", "(AND (not a) b)"),
        ("NOT a = b", "(not (= a b))"),
        ("NOT a IS NULL", "(not (is-null a))"),
        ("a = NOT b AND c", "(AND (= a (not b)) c)"),
        ("a = b || c", "(= a (|| b c))"),
        ("a || b + c", "(|| a (+ b c))"),
        ("a + b * c", "(+ a (* b c))"),
        ("a * b + c", "(+ (* a b) c)"),
        ("-a * b", "(* (neg a) b)"),
        ("-a IS NULL", "(is-null (neg a))"),
        ("a - b - c", "(- (- a b) c)"),
        ("a / b * c", "(* (/ a b) c)"),
        ("a || b || c", "(|| (|| a b) c)"),
        ("a < b = c", "(= (< a b) c)"),
        ("a + b IS NULL", "(is-null (+ a b))"),
        ("a = b IS NULL", "(is-null (= a b))"),
        ("a AND b IS NULL", "(AND a (is-null b))"),
        ("a LIKE b || c", "(like a (|| b c))"),
        ("a IN (1, 2) = true", "(= (in a [1 2]) true)"),
        ("x BETWEEN 1 + 1 AND 2 * 3 AND y", "(AND (between x (+ 1 1) (* 2 3)) y)"),
        ("x BETWEEN a || b AND -c OR y", "(OR (between x (|| a b) (neg c)) y)"),
        ("(a OR b) AND c", "(AND (OR a b) c)"),
        ("a * (b + c)", "(* a (+ b c))"),
        ("NOT (a AND b)", "(not (AND a b))"),
        ("a * NOT b + c", "(* a (not (+ b c)))"),
        ("-2 * 3", "(* -2 3)"),
        ("2 - 3 - -4", "(- (- 2 3) -4)"),
    ];
    for (src, want) in cases {
        assert_eq!(sx_of(src), want, "{src}");
    }
}

#[test]
fn integer_literals() {
    assert_eq!(sx_of("0"), "0");
    assert_eq!(sx_of("42"), "42");
    assert_eq!(sx_of("-7"), "-7");
    assert_eq!(expr("9223372036854775807").kind, ExprKind::Literal(Literal::Int(i64::MAX)));
    assert_eq!(expr("-9223372036854775808").kind, ExprKind::Literal(Literal::Int(i64::MIN)));
    assert_eq!(expr("- 9223372036854775808").kind, ExprKind::Literal(Literal::Int(i64::MIN)));
    assert_eq!(expr("007").kind, ExprKind::Literal(Literal::Int(7)));
    for src in ["9223372036854775808", "-9223372036854775809", "99999999999999999999999999999999999999999"] {
        let e = parse_expression(src).unwrap_err();
        assert_eq!((e.kind, e.span), (ErrorKind::Syntax, Some(Span::new(0, src.len()))), "{src}");
        assert!(e.message.contains("out of range"));
    }
}

#[test]
fn float_literals() {
    let float = |src: &str| match expr(src).kind {
        ExprKind::Literal(Literal::Float(x)) => x,
        other => panic!("{src}: {other:?}"),
    };
    assert_eq!(float("3.5"), 3.5);
    assert_eq!(float("-0.25"), -0.25);
    assert_eq!(float("1e-3"), 0.001);
    assert_eq!(float("1E3"), 1000.0);
    assert_eq!(float("2.5e+2"), 250.0);
    assert_eq!(float(".5"), 0.5);
    assert_eq!(float("-1.5"), -1.5);
    assert!(float("-0.0").is_sign_negative());
    assert_eq!(float("1e-400"), 0.0);
    for (src, end) in [("SELECT 2.", 9), ("SELECT 2.e5", 11), ("SELECT 2. + 1", 9), ("SELECT 12.x", 11)] {
        let e = err(src);
        assert_eq!(e.span, Some(Span::new(7, end)), "{src}");
        assert!(e.message.contains("not a number"), "{src}: {}", e.message);
    }
    assert!(err("SELECT 1e999").message.contains("out of range"));
    assert!(err("SELECT -1e999").message.contains("out of range"));
}

#[test]
fn strings_and_escapes() {
    let string = |src: &str| match expr(src).kind {
        ExprKind::Literal(Literal::Str(s)) => s,
        other => panic!("{src}: {other:?}"),
    };
    assert_eq!(string("'red'"), "red");
    assert_eq!(string("\"red\""), "red");
    assert_eq!(string("''"), "");
    assert_eq!(string(r"'it\'s'"), "it's");
    assert_eq!(string(r#""say \"hi\"""#), "say \"hi\"");
    assert_eq!(string(r#""it's""#), "it's");
    assert_eq!(string(r#"'say "hi"'"#), "say \"hi\"");
    assert_eq!(string(r"'a\\b'"), "a\\b");
    assert_eq!(string(r"'\n\t'"), "\n\t");
    assert_eq!(string(r#"'\"'"#), "\"");
    assert_eq!(string(r#""\'""#), "'");
    assert_eq!(string("'two\nlines -- not a comment'"), "two\nlines -- not a comment");
    assert_eq!(string("'日本語 ✓'"), "日本語 ✓");
    let e = err(r"SELECT 'a\qb'");
    assert_eq!((e.kind, e.span), (ErrorKind::Syntax, Some(Span::new(9, 11))));
    let e = err("SELECT 'é\\é'");
    assert_eq!(e.span, Some(Span::new(10, 13)));
    let e = err("SELECT 'abc");
    assert_eq!(
        (e.span, e.message.as_str()),
        (Some(Span::new(7, 8)), "unterminated string: this quote is never closed")
    );
    assert_eq!(err("SELECT \"abc\\\"").span, Some(Span::new(7, 8)));
    assert_eq!(err("SELECT 'abc\\").span, Some(Span::new(7, 8)));
}

#[test]
fn booleans_null_entities_and_parameters() {
    assert_eq!(sx_of("true"), "true");
    assert_eq!(sx_of("FALSE"), "false");
    assert_eq!(sx_of("Null"), "null");
    assert_eq!(expr("12v3").kind, ExprKind::EntityLit { index: 12, generation: 3 });
    assert_eq!(expr("0v0").kind, ExprKind::EntityLit { index: 0, generation: 0 });
    assert_eq!(expr("4294967294v4294967295").kind, ExprKind::EntityLit { index: u32::MAX - 1, generation: u32::MAX });
    for src in ["SELECT 4294967295v0", "SELECT 1v4294967296", "SELECT 99999999999999999999v0"] {
        let e = err(src);
        assert_eq!((e.kind, e.span), (ErrorKind::Syntax, Some(Span::new(7, src.len()))), "{src}");
    }
    assert_eq!(expr("$1").kind, ExprKind::Param(Param::Positional(1)));
    assert_eq!(expr("$42").kind, ExprKind::Param(Param::Positional(42)));
    assert_eq!(expr("$name").kind, ExprKind::Param(Param::Named("name".into())));
    assert_eq!(expr("$_x1").kind, ExprKind::Param(Param::Named("_x1".into())));
    let e = err("SELECT $0");
    assert_eq!((e.kind, e.span), (ErrorKind::Parameter, Some(Span::new(7, 9))));
    assert_eq!(err("SELECT $99999999999").kind, ErrorKind::Parameter);
    assert_eq!(err("SELECT $").kind, ErrorKind::Syntax);
}

#[test]
fn vectors_have_two_or_three_elements() {
    assert_eq!(sx_of("[1, 2]"), "[1 2]");
    assert_eq!(sx_of("[a, b, c]"), "[a b c]");
    let e = err("SELECT [1]");
    assert_eq!((e.message.as_str(), e.span), ("a vector has 2 or 3 elements, this one has 1", Some(Span::new(7, 10))));
    assert!(err("SELECT [1, 2, 3, 4]").message.contains("has 4"));
    assert_eq!(err("SELECT []").span, Some(Span::new(8, 9)));
}

// ----- spans and item text -----------------------------------------------------------

#[test]
fn expression_spans_cover_their_text() {
    let src = "a + b * c";
    let e = expr(src);
    assert_eq!(e.span, Span::new(0, 9));
    let ExprKind::Binary { lhs, rhs, .. } = &e.kind else { panic!() };
    assert_eq!((lhs.span, rhs.span), (Span::new(0, 1), Span::new(4, 9)));

    let src = "(a + b) * -c";
    let e = expr(src);
    let ExprKind::Binary { lhs, rhs, .. } = &e.kind else { panic!() };
    assert_eq!(lhs.span.text(src), "(a + b)");
    assert_eq!(rhs.span.text(src), "-c");
    assert_eq!(e.span.text(src), src);

    let src = "  Health.hp  IS NOT NULL";
    let e = expr(src);
    assert_eq!(e.span.text(src), "Health.hp  IS NOT NULL");
    let ExprKind::IsNull { expr: inner, .. } = &e.kind else { panic!() };
    let ExprKind::Field { component, field } = &inner.kind else { panic!() };
    assert_eq!((component.span, field.span), (Span::new(2, 8), Span::new(9, 11)));

    let cases = [
        ("- 5", "- 5"),
        ("NOT a", "NOT a"),
        ("x NOT BETWEEN 1 AND 2", "x NOT BETWEEN 1 AND 2"),
        ("x IN (1, 2)", "x IN (1, 2)"),
        ("f(1, g(2))", "f(1, g(2))"),
        ("count( * )", "count( * )"),
        ("[1, 2]", "[1, 2]"),
        ("'a' LIKE 'b'", "'a' LIKE 'b'"),
        ("((1))", "((1))"),
    ];
    for (src, text) in cases {
        assert_eq!(expr(src).span.text(src), text);
    }
    let src = "f(1, g(2))";
    let ExprKind::Call { name, args } = expr(src).kind else { panic!() };
    assert_eq!(name.span.text(src), "f");
    assert_eq!(args[1].span.text(src), "g(2)");
}

#[test]
fn statement_item_and_term_spans() {
    let src = "SELECT Health.hp + 1 AS h, * FROM Health, !Frozen, A | B WHERE x ORDER BY h DESC;";
    let s = select(src);
    assert_eq!(s.span.text(src), &src[..src.len() - 1]);
    assert_eq!(s.items[0].span().text(src), "Health.hp + 1 AS h");
    let SelectItem::Expr { expr, alias, text, .. } = &s.items[0] else { panic!() };
    assert_eq!(expr.span.text(src), "Health.hp + 1");
    assert_eq!(alias.as_ref().unwrap().span.text(src), "h");
    assert_eq!(text, "Health.hp + 1");
    assert_eq!(s.items[1].span().text(src), "*");
    let terms: Vec<_> = s.from.iter().map(|t| t.span.text(src)).collect();
    assert_eq!(terms, ["Health", "!Frozen", "A | B"]);
    assert_eq!(s.from[1].components()[0].span.text(src), "Frozen");
    assert_eq!(s.order_by[0].span.text(src), "h DESC");

    let src = "SPAWN Health {hp: 10}, Frozen";
    let Statement::Spawn(sp) = stmt(src) else { panic!() };
    assert_eq!(sp.components[0].span.text(src), "Health {hp: 10}");
    assert_eq!(sp.components[0].fields[0].span.text(src), "hp: 10");
    assert_eq!(sp.components[1].span.text(src), "Frozen");

    let src = "UPDATE H SET hp = 1 FROM A WHERE b";
    let Statement::Update(u) = stmt(src) else { panic!() };
    assert_eq!(u.assignments[0].span.text(src), "hp = 1");
    let Target::Filter(f) = &u.target else { panic!() };
    assert_eq!(f.span.text(src), "FROM A WHERE b");
}

#[test]
fn item_text_collapses_whitespace_and_comments() {
    let s = select(
        "SELECT  Health.hp   +\n\t1 ,count( * ) , 'a   b' ||  x, a -- note\n + b, max(a,b), \"q  -- \" || y FROM A",
    );
    let texts: Vec<_> = s.items.iter().map(|i| i.column_name().unwrap()).collect();
    assert_eq!(texts, ["Health.hp + 1", "count( * )", "'a   b' || x", "a + b", "max(a,b)", "\"q  -- \" || y"]);
    assert_eq!(collapse_whitespace("  a  \n b  "), "a b");
    assert_eq!(collapse_whitespace("'it\\'s  x'  y"), "'it\\'s  x' y");
    assert_eq!(collapse_whitespace("a--x"), "a");
    assert_eq!(collapse_whitespace("'unterminated  x"), "'unterminated  x");
}

// ----- scripts -----------------------------------------------------------------------

#[test]
fn scripts() {
    assert_eq!(parse_script("").unwrap(), []);
    assert_eq!(parse_script("  \n -- only a comment\n").unwrap(), []);
    assert_eq!(parse_script(";;  ; ").unwrap(), []);
    let src = "SHOW TABLES; ;DESCRIBE Health;\n-- done\nSELECT 1 -- trailing";
    let script = parse_script(src).unwrap();
    assert_eq!(script.len(), 3);
    let spans: Vec<_> = script.iter().map(|s| s.span().text(src)).collect();
    assert_eq!(spans, ["SHOW TABLES", "DESCRIBE Health", "SELECT 1"]);
    assert_eq!(parse_script("SELECT 1;").unwrap().len(), 1);

    let src = "SELECT 1;\nSELECT 2;\nSELEC 3";
    let e = parse_script(src).unwrap_err();
    assert_eq!(e.line_col(src), Some((3, 7)));
    assert_eq!(e.suggestion.as_deref(), Some("SELECT"));
}

/// Scripts are given to pest a statement at a time (see [`parse_script`]); nothing of
/// that shows: spans are in the whole script, errors point into it, a `;` in a string or
/// a comment does not cut, and a syntax error anywhere wins over an error found while
/// building an earlier statement, as when the whole script was parsed at once.
#[test]
fn long_scripts_are_parsed_in_pieces() {
    let statement = |i: usize| match i % 4 {
        0 => format!("SPAWN Position {{x: {i}, y: -1.5}}, Team {{name: 'a;b -- c'}}"),
        1 => format!("SELECT count(*) WHERE Health.hp < {i} -- not; a cut\n"),
        2 => format!("UPDATE Health SET hp = {i} WHERE Team.name = \"x;y\""),
        _ => String::new(),
    };
    let mut src = String::new();
    let mut starts = Vec::new();
    let mut i = 0;
    while src.len() < 80 << 10 {
        starts.push(src.len());
        src.push_str(&statement(i));
        src.push_str(if i % 7 == 0 { ";\n" } else { "; " });
        i += 1;
    }
    let script = parse_script(&src).unwrap();
    let expected: Vec<usize> = (0..i).filter(|i| i % 4 != 3).collect();
    assert_eq!(script.len(), expected.len());
    for (statement, &n) in script.iter().zip(&expected) {
        assert_eq!(statement.span().text(&src), statement_text(n).trim_end(), "statement {n}");
        assert_eq!(statement.span().start, starts[n]);
    }
    // The script parsed piece by piece is the script parsed at once.
    let mut builder = Builder::default();
    let text = prepare(&src).unwrap().text;
    let whole = Grammar::parse(Rule::script, &text).unwrap().next().unwrap();
    let at_once: Vec<String> = whole
        .into_inner()
        .filter(|p| !matches!(p.as_rule(), Rule::semicolon | Rule::EOI))
        .map(|p| format!("{:?}", builder.statement(p).unwrap()))
        .collect();
    assert_eq!(at_once, script.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>());

    // A syntax error near the end points into the whole script.
    let bad = format!("{src}SELECT 1;\nSELECT Health.hp +");
    let e = parse_script(&bad).unwrap_err();
    assert_eq!(e.message, "expected an expression, found end of input");
    assert_eq!(e.span, Some(Span::new(bad.len(), bad.len())));
    let lines = bad.lines().count();
    assert_eq!(e.line_col(&bad), Some((lines, "SELECT Health.hp +".len() + 1)));
    // It wins over an error found while building an earlier statement.
    let both = format!("SELECT 99999999999999999999; {bad}");
    assert_eq!(parse_script(&both).unwrap_err().message, "expected an expression, found end of input");
    let built_only = format!("SELECT 99999999999999999999; {src}");
    assert!(parse_script(&built_only).unwrap_err().message.contains("out of range"));
    // A build error in a later piece is found too, at its place.
    let late = format!("{src}SELECT 99999999999999999999");
    assert_eq!(parse_script(&late).unwrap_err().span, Some(Span::new(src.len() + 7, late.len())));

    fn statement_text(i: usize) -> String {
        match i % 4 {
            0 => format!("SPAWN Position {{x: {i}, y: -1.5}}, Team {{name: 'a;b -- c'}}"),
            1 => format!("SELECT count(*) WHERE Health.hp < {i}"),
            _ => format!("UPDATE Health SET hp = {i} WHERE Team.name = \"x;y\""),
        }
    }
}

/// Comments are blanked out before pest sees the text; nothing of that shows either.
#[test]
fn comments_are_whitespace_everywhere() {
    let src = "-- head\nSELECT--a\n x--b\n+--c\n-- d\n1, 'no -- comment', \"nor -- this\" -- e\nFROM--f\nA--g";
    let s = select(src);
    let texts: Vec<_> = s.items.iter().map(|i| i.column_name().unwrap()).collect();
    assert_eq!(texts, ["x + 1", "'no -- comment'", "\"nor -- this\""]);
    assert_eq!(s.items[0].span().text(src), "x--b\n+--c\n-- d\n1");
    assert_eq!(s.span.text(src), &src[8..src.len() - 3]);
    assert_eq!(term_sx(&s.from), ["A"]);
    // Errors quote the text as written, comments and all.
    let src = "SELECT x -- fine\nFROM -- still fine\n)";
    assert_eq!(rendered(src), "syntax error at line 3, column 1: expected a component name, found `)`\n)\n^");
    assert!(err("SELECT 'open -- not a comment").message.contains("unterminated string"));
    stmt("SELECT 1 -- é 日本 \u{0}");
}

#[test]
fn single_statements() {
    stmt("SELECT 1;");
    stmt("  SELECT 1  ;  -- fine");
    assert_eq!(err("SELECT 1;;").span, Some(Span::new(9, 10)));
    assert_eq!(err("SELECT 1; SELECT 2").message, "expected end of input, found `SELECT` (a reserved word)");
    assert_eq!(err("").message, "expected a statement, found end of input");
    assert_eq!(err(" -- nothing").message, "expected a statement, found end of input");
    assert_eq!(err(";").message, "expected a statement, found `;`");
}

// ----- errors ------------------------------------------------------------------------

#[test]
fn rendered_syntax_errors() {
    let cases: [(&str, &str); 14] = [
        (
            "SELECT a\nFROM Health\nWHERE Health.hp <",
            "syntax error at line 3, column 18: expected an expression, found end of input\n\
             WHERE Health.hp <\n                 ^",
        ),
        (
            "SELECT a FORM b",
            "syntax error at line 1, column 10: expected an operator, `AS`, `FROM`, `WHERE`, `GROUP BY`, \
             `ORDER BY`, `LIMIT`, `OFFSET`, `,`, `;` or end of input, found `FORM`\n\
             SELECT a FORM b\n         ^~~~\nhint: did you mean 'FROM'?",
        ),
        (
            "SELEC x FROM y",
            "syntax error at line 1, column 7: expected `,`, `|`, `;` or end of input, found `x`\n\
             SELEC x FROM y\n      ^\nhint: did you mean 'SELECT'?",
        ),
        (
            "SELECT x FROM A WHERE x = 1 ORDER x",
            "syntax error at line 1, column 35: expected `BY`, found `x`\n\
             SELECT x FROM A WHERE x = 1 ORDER x\n                                  ^",
        ),
        (
            "SELECT 'abc",
            "syntax error at line 1, column 8: unterminated string: this quote is never closed\n\
             SELECT 'abc\n       ^",
        ),
        (
            "SELECT 2.",
            "syntax error at line 1, column 8: '2.' is not a number: a float needs digits after the point \
             ('2.0', not '2.')\n\
             SELECT 2.\n       ^~",
        ),
        (
            "\tSELECT a\n\tFROM  é, 5",
            "syntax error at line 2, column 8: expected a component name, found `é`\n\
             \tFROM  é, 5\n\t      ^",
        ),
        (
            "CREATE COMPONENT X (hp flaot32)",
            "type error at line 1, column 24: unknown field type 'flaot32' (known: bool, i8, i16, i32, i64, u8, \
             u16, u32, u64, f32, f64, string, entity, vec2, vec3)\n\
             CREATE COMPONENT X (hp flaot32)\n                       ^~~~~~~",
        ),
        (
            "CREATE INDEX ON Health (hp)",
            "syntax error at line 1, column 28: expected `USING`, found end of input\n\
             CREATE INDEX ON Health (hp)\n                           ^",
        ),
        (
            "SHOW ME",
            "syntax error at line 1, column 6: expected `COMPONENTS`, `INDEXES`, `TABLES` or `SYSTEMS`, found `ME`\n\
             SHOW ME\n     ^~",
        ),
        (
            "DESPAWN 5",
            "syntax error at line 1, column 9: expected an entity (`12v0` or a parameter), `FROM`, `WHERE`, \
             `;` or end of input, found `5`\nDESPAWN 5\n        ^",
        ),
        (
            "SELECT a IS 5",
            "syntax error at line 1, column 13: expected `NOT` or `NULL`, found `5`\nSELECT a IS 5\n            ^",
        ),
        ("SPAWN A {x 1}", "syntax error at line 1, column 12: expected `:`, found `1`\nSPAWN A {x 1}\n           ^"),
        (
            "SELECT a FROM b WHERE c >= = 2",
            "syntax error at line 1, column 28: expected an expression, found `=`\n\
             SELECT a FROM b WHERE c >= = 2\n                           ^",
        ),
    ];
    for (src, want) in cases {
        assert_eq!(rendered(src), want, "\n{src}");
    }
}

#[test]
fn error_positions_and_found_tokens() {
    let cases = [
        ("SELECT a FROM select", "expected a component name, found `select` (a reserved word)", (1, 15)),
        ("SELECT (1", "expected `)`, found end of input", (1, 10)),
        ("SELECT (1 x", "expected an operator or `)`, found `x`", (1, 11)),
        ("SELECT a BETWEEN 1", "expected an operator or `AND`, found end of input", (1, 19)),
        ("SELECT a IN 5", "expected `(`, found `5`", (1, 13)),
        (
            "SELECT *x",
            "expected `FROM`, `WHERE`, `GROUP BY`, `ORDER BY`, `LIMIT`, `OFFSET`, `,`, `;` or end of input, found `x`",
            (1, 9),
        ),
        ("SELECT a AS", "expected an alias, found end of input", (1, 12)),
        ("SELECT a NOT b", "expected an operator, found `b`", (1, 14)),
        ("SELECT \u{a0}", "expected an expression or `*`, found character '\\u{a0}'", (1, 8)),
        ("SELECT é", "expected an expression or `*`, found `é`", (1, 8)),
        ("SELECT a ||| b", "expected an expression, found `|`", (1, 12)),
        (
            "SELECT a FROM A B",
            "expected `WHERE`, `GROUP BY`, `ORDER BY`, `LIMIT`, `OFFSET`, `,`, `|`, `;` or end of input, found `B`",
            (1, 17),
        ),
        ("SELECT 1 +\n\n", "expected an expression, found end of input", (1, 11)),
        ("CREATE FOO", "expected `COMPONENT`, `INDEX` or `SYSTEM`, found `FOO`", (1, 8)),
        ("EXPLAIN 5", "expected `SELECT`, a component name or `SCHEDULE`, found `5`", (1, 9)),
        ("UPDATE X SET", "expected a field name, found end of input", (1, 13)),
        ("REMOVE Frozen FROM 5", "expected a component name or an entity (`12v0` or a parameter), found `5`", (1, 20)),
        ("DROP INDEX ON", "expected an index name, found `ON` (a reserved word)", (1, 12)),
        ("SELECT 1 == == 2", "expected an expression, found `==`", (1, 13)),
        ("5", "expected a statement, found `5`", (1, 1)),
        ("SELECT x GROUP a", "expected `BY`, found `a`", (1, 16)),
        ("SELECT a FROM A WHERE b ORDER BY c LIMIT", "expected an expression, found end of input", (1, 41)),
    ];
    for (src, message, at) in cases {
        let e = err(src);
        assert_eq!((e.kind, e.message.as_str(), e.line_col(src)), (ErrorKind::Syntax, message, Some(at)), "\n{src}");
    }
}

#[test]
fn every_rule_has_a_name_for_people() {
    // Rules that never show up in "expected …": entry points' insides, whole statements
    // (which start with a keyword that is named instead) and containers.
    let unnamed = [
        "explain",
        "spawn",
        "despawn",
        "add",
        "remove",
        "update",
        "create_component",
        "create_index",
        "drop_index",
        "show",
        "describe",
        "filter",
        "statement",
        "term",
        "prefix",
        "postfix",
        "infix",
        "operand",
        "exponent",
        "ident_char",
        "ident_raw",
        "reserved",
        "operator_char",
        "operator_word",
        "literal_value",
        "system_clause",
        "system_statement",
        "block_statement",
        "block_spawn",
        "block_end",
        "WHITESPACE",
    ];
    for rule in Rule::all_rules() {
        let name = format!("{rule:?}");
        let labelled = expected_label(*rule).is_some();
        assert!(labelled || unnamed.contains(&name.as_str()), "rule {name} has no label");
        if let Some((_, label)) = expected_label(*rule) {
            assert!(!label.contains('_') || label.contains('`'), "{name}: {label}");
        }
    }
}

// ----- limits ------------------------------------------------------------------------

#[test]
fn nesting_limits() {
    let nested = |n: usize| format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
    assert_eq!(
        sx(&select(&nested(MAX_NESTING))
            .items
            .iter()
            .find_map(|i| match i {
                SelectItem::Expr { expr, .. } => Some(expr.clone()),
                _ => None,
            })
            .unwrap()),
        "1"
    );
    let e = err(&nested(MAX_NESTING + 1));
    assert_eq!(e.message, "brackets nested too deeply (more than 200 levels)");
    assert_eq!(e.span, Some(Span::new(7 + MAX_NESTING, 8 + MAX_NESTING)));
    // Brackets in strings and comments do not count.
    stmt(&format!("SELECT '{}'", "(".repeat(1000)));
    stmt(&format!("SELECT 1 -- {}\n", "[".repeat(1000)));
    stmt(&format!("SELECT \"{}\\\"\"", "{".repeat(1000)));
    // Every kind of bracket counts.
    assert_eq!(err(&format!("SELECT {}1", "[".repeat(201))).span, Some(Span::new(207, 208)));
    assert!(err(&format!("SPAWN A {{x: {}1{}}}", "(".repeat(200), ")".repeat(200))).message.contains("nested"));
}

#[test]
fn expression_height_limit() {
    let chain = |n: usize| format!("SELECT 1{}", " + 1".repeat(n));
    select(&chain(MAX_EXPR_DEPTH - 1));
    let e = err(&chain(MAX_EXPR_DEPTH));
    assert_eq!(e.message, "expression nested too deeply (more than 256 levels)");
    assert_eq!(e.line_col(&chain(MAX_EXPR_DEPTH)), Some((1, 8)));
    // Long prefix chains and long operator chains are rejected without recursion.
    for src in [
        format!("SELECT {}x", "NOT ".repeat(20_000)),
        format!("SELECT {}x", "- ".repeat(20_000)),
        format!("SELECT 1{}", " OR 1".repeat(20_000)),
        format!("SELECT x{}", " IS NULL".repeat(20_000)),
        format!("SELECT x{}", " BETWEEN 1 AND 2".repeat(20_000)),
    ] {
        let result = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || parse_statement(&src).map(|_| ()).map_err(|e| e.message))
            .expect("spawn")
            .join()
            .expect("no panic");
        assert_eq!(result, Err("expression nested too deeply (more than 256 levels)".into()));
    }
    // Long flat lists are fine.
    assert_eq!(select(&format!("Position{}", ", A".repeat(20_000))).from.len(), 20_001);
    let list = format!("SELECT x IN ({})", vec!["1"; 20_000].join(", "));
    match &select(&list).items[0] {
        SelectItem::Expr { expr: Expr { kind: ExprKind::InList { list, .. }, .. }, .. } => {
            assert_eq!(list.len(), 20_000)
        }
        other => panic!("{other:?}"),
    }
}

/// Maximal nesting of every bracketed form parses in 2 MiB of stack (a test thread's or
/// a tokio worker's), in debug builds too; most forms in 512 KiB. With less, pest's stack
/// guard turns it into an error, never a stack overflow.
#[test]
fn deep_nesting_fits_in_a_small_stack() {
    let n = MAX_NESTING;
    let cases = [
        (format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n)), true),
        (format!("SELECT {}1{}", "(-1 + ".repeat(n), ")".repeat(n)), true),
        (format!("SELECT {}1{}", "[1, ".repeat(n), "]".repeat(n)), true),
        (format!("SELECT {}1{}", "abs(".repeat(n), ")".repeat(n)), true),
        (format!("SELECT {}1{}", "a BETWEEN (".repeat(n), ") AND 3".repeat(n)), true),
        (format!("SELECT {}1{}", "a IN (1, ".repeat(n), ")".repeat(n)), true),
        (format!("SELECT {}1{}", "NOT (".repeat(n), ")".repeat(n)), true),
        (format!("SELECT {}1{}", "max(0, -(".repeat(n / 2), "))".repeat(n / 2)), true),
        (format!("SPAWN A {{x: {}1{}}}", "(".repeat(n - 1), ")".repeat(n - 1)), true),
        (format!("SELECT {}1{} x", "(".repeat(n), ")".repeat(n)), false),
        (format!("SELECT {}1 +{}", "(".repeat(n), ")".repeat(n)), false),
        (format!("SELECT {}", "(".repeat(n)), false),
        (format!("SELECT {}", "[".repeat(n)), false),
    ];
    let run = |src: &str, stack: usize| {
        let src = src.to_string();
        std::thread::Builder::new()
            .stack_size(stack)
            .spawn(move || parse_statement(&src).map(|_| ()).map_err(|e| e.message))
            .expect("spawn")
            .join()
            .expect("no panic")
    };
    for (i, (src, ok)) in cases.iter().enumerate() {
        let result = run(src, 2 << 20);
        assert_eq!(result.is_ok(), *ok, "case {i}: {result:?}");
        // Reaching the end of the test at all means no stack overflow.
        let _ = run(src, 1 << 20);
        let _ = run(src, 192 << 10);
    }
}

// ----- printing back -----------------------------------------------------------------

#[test]
fn display_reads_back_as_the_same_tree() {
    let cases = [
        "a OR b AND c",
        "(a OR b) AND c",
        "NOT (a AND b) = c",
        "a = (NOT b)",
        "-(5)",
        "-(-5)",
        "- -x",
        "a - (b - c)",
        "a || (b || c)",
        "x NOT BETWEEN (a OR b) AND c + 1",
        "x IN (1, 2.5, 'a', null, true, 3v1, $1, $n)",
        "(a = b) IS NOT NULL",
        "a LIKE (b LIKE c)",
        "count(*) + count(x)",
        "[1, -2.5, Position.x]",
        "distance(Position, [0, 0, 0]) < 5",
        "C.from = 'it\\'s\\n'",
        "-9223372036854775808",
        "1e300 * 1e-300",
    ];
    for src in cases {
        let first = expr(src);
        let printed = first.to_string();
        let second = expr(&printed);
        assert_eq!(sx(&first), sx(&second), "{src} printed as {printed}");
    }
    assert_eq!(expr("a   OR b and   c").to_string(), "a OR b AND c");
    assert_eq!(expr("((a + b)) * c").to_string(), "(a + b) * c");
    assert_eq!(expr("\"x\"").to_string(), "'x'");
}

// ----- never panics ------------------------------------------------------------------

const TOKENS: &[&str] = &[
    "SELECT",
    "select",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "ORDER",
    "ASC",
    "DESC",
    "LIMIT",
    "OFFSET",
    "AS",
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS",
    "NULL",
    "LIKE",
    "BETWEEN",
    "TRUE",
    "false",
    "entity",
    "EXPLAIN",
    "SPAWN",
    "DESPAWN",
    "ADD",
    "TO",
    "REMOVE",
    "UPDATE",
    "SET",
    "CREATE",
    "COMPONENT",
    "INDEX",
    "ON",
    "USING",
    "DROP",
    "SHOW",
    "COMPONENTS",
    "TABLES",
    "INDEXES",
    "DESCRIBE",
    "OPTIONAL",
    "count",
    "Position",
    "Health",
    "hp",
    "x",
    "Health.hp",
    "Position.x",
    "abs",
    "has",
    "1",
    "-7",
    "3.5",
    ".5",
    "1e-3",
    "2.",
    "9223372036854775808",
    "'str'",
    "\"dq\"",
    "'bad\\q'",
    "'open",
    "\"",
    "12v0",
    "4294967295v0",
    "$1",
    "$name",
    "$0",
    "$",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    ".",
    "*",
    "+",
    "-",
    "/",
    "%",
    "||",
    "|",
    "=",
    "==",
    "!=",
    "<>",
    "<",
    "<=",
    ">",
    ">=",
    "!",
    "?",
    "-- comment\n",
    "\n",
    "\t",
    "é",
    "日本",
    "\u{0}",
    "\\",
];

fn check_no_panic(src: &str) {
    for result in [parse_statement(src).map(|s| vec![s]), parse_script(src)] {
        match result {
            Ok(statements) => {
                for s in &statements {
                    let span = s.span();
                    assert!(span.start <= span.end && span.end <= src.len());
                    for e in statement_exprs(s) {
                        let mut ok = true;
                        e.walk(&mut |x| ok &= x.span.start < x.span.end && x.span.end <= src.len());
                        assert!(ok, "bad span in {src:?}");
                        let printed = e.to_string();
                        let again = parse_expression(&printed)
                            .unwrap_or_else(|err| panic!("{printed:?} (from {src:?}): {}", err.render(&printed)));
                        assert_eq!(sx(e), sx(&again), "{src:?} printed as {printed:?}");
                    }
                }
            }
            Err(e) => {
                let _ = e.render(src);
                if let Some(span) = e.span {
                    assert!(span.start <= span.end && span.end <= src.len(), "{src:?}: {e:?}");
                }
            }
        }
    }
    let _ = parse_expression(src).map(|e| e.to_string()).map_err(|e| e.render(src));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(src in "\\PC{0,80}") {
        check_no_panic(&src);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
        check_no_panic(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn token_soup_never_panics(
        tokens in proptest::collection::vec(proptest::sample::select(TOKENS), 0..40),
        spaced in proptest::collection::vec(any::<bool>(), 40),
    ) {
        let mut src = String::new();
        for (token, space) in tokens.iter().zip(&spaced) {
            src.push_str(token);
            if *space {
                src.push(' ');
            }
        }
        check_no_panic(&src);
    }

    #[test]
    fn statement_shaped_soup_never_panics(
        head in proptest::sample::select(&["SELECT ", "SELECT * FROM ", "UPDATE H SET x = ", "SPAWN A {x: ",
            "DESPAWN WHERE ", "ADD A TO ", "REMOVE A FROM ", "CREATE INDEX ON ", "EXPLAIN ", "SELECT x WHERE "][..]),
        tokens in proptest::collection::vec(proptest::sample::select(TOKENS), 0..25),
    ) {
        check_no_panic(&format!("{head}{}", tokens.join(" ")));
    }

    #[test]
    fn printed_expressions_read_back(e in arb_expr()) {
        let printed = e.to_string();
        let parsed = parse_expression(&printed)
            .unwrap_or_else(|err| panic!("{printed:?}: {}", err.render(&printed)));
        prop_assert_eq!(sx(&parsed), sx(&e), "printed as {}", printed);
    }
}

/// Random expression trees (spans left empty), for the print → parse round trip.
fn arb_expr() -> impl Strategy<Value = Expr> {
    let at = Span::default();
    let name = proptest::sample::select(&["a", "Health", "P_2", "_x"][..]).prop_map(move |n| Ident::new(n, at));
    let field = proptest::sample::select(&["x", "hp", "from", "entity"][..]).prop_map(move |n| Ident::new(n, at));
    let leaf = prop_oneof![
        any::<i64>().prop_map(|i| ExprKind::Literal(Literal::Int(i))),
        (-1e10f64..1e10).prop_map(|x| ExprKind::Literal(Literal::Float(x))),
        "[a-z '\"\\\\\n\té]{0,6}".prop_map(|s| ExprKind::Literal(Literal::Str(s))),
        any::<bool>().prop_map(|b| ExprKind::Literal(Literal::Bool(b))),
        Just(ExprKind::Literal(Literal::Null)),
        (0..u32::MAX, any::<u32>()).prop_map(|(index, generation)| ExprKind::EntityLit { index, generation }),
        (1..100u32).prop_map(|n| ExprKind::Param(Param::Positional(n))),
        Just(ExprKind::Param(Param::Named("who".into()))),
        (name.clone(), field).prop_map(|(component, field)| ExprKind::Field { component, field }),
        name.clone().prop_map(ExprKind::Component),
        Just(ExprKind::EntityId),
        Just(ExprKind::CountStar),
    ]
    .prop_map(move |kind| Expr::new(kind, at));
    let ops = [
        BinaryOp::Eq,
        BinaryOp::NotEq,
        BinaryOp::Lt,
        BinaryOp::LtEq,
        BinaryOp::Gt,
        BinaryOp::GtEq,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Mod,
        BinaryOp::Concat,
    ];
    leaf.prop_recursive(5, 40, 4, move |inner| {
        let b = |e: Expr| Box::new(e);
        prop_oneof![
            (proptest::sample::select(ops.to_vec()), inner.clone(), inner.clone())
                .prop_map(move |(op, l, r)| ExprKind::Binary { op, lhs: b(l), rhs: b(r) }),
            inner.clone().prop_map(move |e| ExprKind::Not(b(e))),
            inner.clone().prop_map(move |e| ExprKind::Unary { op: UnaryOp::Neg, expr: b(e) }),
            (inner.clone(), inner.clone(), inner.clone(), any::<bool>()).prop_map(move |(e, l, h, negated)| {
                ExprKind::Between { expr: b(e), low: b(l), high: b(h), negated }
            }),
            (inner.clone(), proptest::collection::vec(inner.clone(), 0..3), any::<bool>())
                .prop_map(move |(e, list, negated)| ExprKind::InList { expr: b(e), list, negated }),
            (inner.clone(), inner.clone(), any::<bool>()).prop_map(move |(e, p, negated)| ExprKind::Like {
                expr: b(e),
                pattern: b(p),
                negated
            }),
            (inner.clone(), any::<bool>()).prop_map(move |(e, negated)| ExprKind::IsNull { expr: b(e), negated }),
            (proptest::sample::select(&["abs", "max", "count"][..]), proptest::collection::vec(inner.clone(), 0..3))
                .prop_map(move |(n, args)| ExprKind::Call { name: Ident::new(n, Span::default()), args }),
            proptest::collection::vec(inner, 2..=3).prop_map(ExprKind::Vector),
        ]
        .prop_map(move |kind| Expr::new(kind, Span::default()))
    })
}

// ----- the lexer reads the grammar's atoms ---------------------------------------------

/// The lexer's numbers, entities, strings, parameters and names are exactly what the
/// grammar's own rules match at the same place, on text made of their pieces.
#[test]
fn lexer_atoms_are_the_grammars() {
    use crate::lex::{Lexer, TokenKind};
    use crate::test_rng::Rng;
    let pieces = [
        "1", "23", "0", ".", "5", "e", "E", "+", "-", "v", "x", "_", "'", "\"", "\\", "$", " ", "\n", "a", "é", "(",
        ";", "--", "v1", "e-", ".5",
    ];
    let matched = |rule: Rule, text: &str| {
        Grammar::parse(rule, text).ok().and_then(|mut p| p.next()).map(|p| p.as_span().end() - p.as_span().start())
    };
    let mut rng = Rng::new(46);
    for _ in 0..20_000 {
        let src: String = (0..1 + rng.below(8)).map(|_| rng.pick(&pieces)).collect();
        for t in Lexer::new(&src) {
            let rest = &src[t.span.start..];
            let len = Some(t.span.len());
            let expect = |rule: Rule| assert_eq!(matched(rule, rest), len, "{:?} in {src:?} as {rule:?}", t.kind);
            match t.kind {
                TokenKind::Number => expect(Rule::number),
                TokenKind::Entity => {
                    expect(Rule::number);
                    expect(Rule::entity_lit)
                }
                TokenKind::String => expect(Rule::string),
                TokenKind::UnterminatedString => {
                    assert_eq!(matched(Rule::string, rest), None, "{src:?}");
                    expect(Rule::unterminated_string)
                }
                TokenKind::Param => expect(Rule::param),
                TokenKind::Name | TokenKind::Keyword => expect(Rule::field_name),
                _ => {
                    for rule in [Rule::number, Rule::string, Rule::param, Rule::field_name] {
                        assert_eq!(matched(rule, rest), None, "{:?} in {src:?} as {rule:?}", t.kind);
                    }
                }
            }
        }
    }
}
