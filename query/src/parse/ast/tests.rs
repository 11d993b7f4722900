//! Tests of the syntax tree: how expressions print, how they are walked, and the helpers
//! of select items, terms and statements.

use super::*;

fn e(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::default())
}
fn int(i: i64) -> Expr {
    e(ExprKind::Literal(Literal::Int(i)))
}
fn name(n: &str) -> Ident {
    Ident::new(n, Span::default())
}
fn bin(op: BinaryOp, l: Expr, r: Expr) -> Expr {
    e(ExprKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) })
}

#[test]
fn display_adds_only_needed_parentheses() {
    let sum = bin(BinaryOp::Add, int(1), int(2));
    assert_eq!(bin(BinaryOp::Mul, sum.clone(), int(3)).to_string(), "(1 + 2) * 3");
    assert_eq!(bin(BinaryOp::Add, int(3), bin(BinaryOp::Mul, int(1), int(2))).to_string(), "3 + 1 * 2");
    // Left associativity: a right operand of the same level needs parentheses.
    assert_eq!(bin(BinaryOp::Sub, int(1), sum.clone()).to_string(), "1 - (1 + 2)");
    assert_eq!(bin(BinaryOp::Sub, sum.clone(), int(1)).to_string(), "1 + 2 - 1");
    let neg = |x: Expr| e(ExprKind::Unary { op: UnaryOp::Neg, expr: Box::new(x) });
    assert_eq!(neg(int(-5)).to_string(), "-(-5)");
    assert_eq!(neg(neg(int(5))).to_string(), "-(-(5))");
    assert_eq!(neg(int(5)).to_string(), "-(5)");
    assert_eq!(neg(e(ExprKind::EntityId)).to_string(), "-entity");
    assert_eq!(neg(sum.clone()).to_string(), "-(1 + 2)");
    assert_eq!(bin(BinaryOp::Sub, int(1), int(-2)).to_string(), "1 - -2");
    let not = |x: Expr| e(ExprKind::Not(Box::new(x)));
    assert_eq!(bin(BinaryOp::Eq, int(1), not(int(2))).to_string(), "1 = (NOT 2)");
    assert_eq!(not(bin(BinaryOp::Eq, int(1), int(2))).to_string(), "NOT 1 = 2");
    assert_eq!(not(bin(BinaryOp::And, int(1), int(2))).to_string(), "NOT (1 AND 2)");
}

#[test]
fn display_of_every_kind() {
    let c = || e(ExprKind::Component(name("C")));
    let cases: Vec<(Expr, &str)> = vec![
        (e(ExprKind::Literal(Literal::Float(1.0))), "1.0"),
        (e(ExprKind::Literal(Literal::Float(1e-7))), "1e-7"),
        (e(ExprKind::Literal(Literal::Str("it's\\\n\t\"".into()))), r#"'it\'s\\\n\t"'"#),
        (e(ExprKind::Literal(Literal::Bool(true))), "true"),
        (e(ExprKind::Literal(Literal::Null)), "null"),
        (e(ExprKind::EntityLit { index: 12, generation: 3 }), "12v3"),
        (e(ExprKind::Param(Param::Positional(2))), "$2"),
        (e(ExprKind::Param(Param::Named("who".into()))), "$who"),
        (e(ExprKind::Vector(vec![int(1), int(2), int(3)])), "[1, 2, 3]"),
        (e(ExprKind::Field { component: name("C"), field: name("from") }), "C.from"),
        (e(ExprKind::EntityId), "entity"),
        (e(ExprKind::CountStar), "count(*)"),
        (e(ExprKind::Call { name: name("max"), args: vec![int(1), c()] }), "max(1, C)"),
        (
            e(ExprKind::Between {
                expr: Box::new(c()),
                low: Box::new(bin(BinaryOp::Or, int(1), int(2))),
                high: Box::new(bin(BinaryOp::Concat, int(3), int(4))),
                negated: true,
            }),
            "C NOT BETWEEN (1 OR 2) AND 3 || 4",
        ),
        (e(ExprKind::InList { expr: Box::new(c()), list: vec![], negated: false }), "C IN ()"),
        (e(ExprKind::InList { expr: Box::new(c()), list: vec![int(1), int(2)], negated: true }), "C NOT IN (1, 2)"),
        (e(ExprKind::Like { expr: Box::new(c()), pattern: Box::new(c()), negated: true }), "C NOT LIKE C"),
        (e(ExprKind::IsNull { expr: Box::new(bin(BinaryOp::Eq, int(1), int(2))), negated: true }), "1 = 2 IS NOT NULL"),
        (
            e(ExprKind::IsNull { expr: Box::new(bin(BinaryOp::And, int(1), int(2))), negated: false }),
            "(1 AND 2) IS NULL",
        ),
    ];
    for (expr, text) in cases {
        assert_eq!(expr.to_string(), text);
    }
    assert_eq!(BinaryOp::NotEq.to_string(), "!=");
    assert!(BinaryOp::GtEq.is_comparison());
    assert!(!BinaryOp::Concat.is_comparison());
}

#[test]
fn walk_and_children() {
    let tree = bin(BinaryOp::Add, int(1), bin(BinaryOp::Mul, int(2), int(3)));
    let mut seen = Vec::new();
    tree.walk(&mut |x| seen.push(x.to_string()));
    assert_eq!(seen, ["1 + 2 * 3", "1", "2 * 3", "2", "3"]);
    assert_eq!(tree.children().len(), 2);
    let list = e(ExprKind::InList { expr: Box::new(int(0)), list: vec![int(1), int(2)], negated: false });
    assert_eq!(list.children().len(), 3);
}

#[test]
fn items_terms_and_statements() {
    let star = SelectItem::Star { span: Span::new(7, 8) };
    assert_eq!(star.column_name(), None);
    assert_eq!(star.span(), Span::new(7, 8));
    let item = SelectItem::Expr { expr: int(1), alias: None, text: "1".into(), span: Span::new(0, 1) };
    assert_eq!(item.column_name(), Some("1"));
    let item = SelectItem::Expr { expr: int(1), alias: Some(name("one")), text: "1".into(), span: Span::new(0, 1) };
    assert_eq!(item.column_name(), Some("one"));
    let term = Term { kind: TermKind::AnyOf(vec![name("A"), name("B")]), span: Span::default() };
    assert_eq!(term.components().len(), 2);
    let term = Term { kind: TermKind::Not(name("A")), span: Span::default() };
    assert_eq!(term.components()[0].as_str(), "A");
    let show = Statement::Show(Show { what: ShowWhat::Tables, span: Span::new(0, 11) });
    assert_eq!(show.span(), Span::new(0, 11));
}
