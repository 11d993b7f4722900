//! The random query generator: type-directed, over the whole SELECT grammar of
//! `docs/query-language.md`.
//!
//! Queries are well-typed by construction (each expression is generated for a wanted type),
//! except the deliberately broken ones of [`Gen::broken_query`], which say which error kind
//! the engine must answer with. The text varies keyword case, whitespace, quote style and
//! redundant parentheses, so the parser and the column naming (an item's source text with
//! whitespace collapsed) are exercised too.

use ecsdb::query::{ErrorKind, Params};
use ecsdb::{Entity, FieldType, Value};

use super::model::{Model, Schema};
use super::rng::Rng;

#[path = "gen_relations.rs"]
mod relation_exprs;

/// The static type of a generated expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Bool,
    Int,
    Float,
    Str,
    Ent,
    V2,
    V3,
}

impl Ty {
    fn orderable(self) -> bool {
        !matches!(self, Ty::V2 | Ty::V3)
    }

    pub fn of_field_type(t: FieldType) -> Ty {
        match t {
            FieldType::Bool => Ty::Bool,
            FieldType::F32 | FieldType::F64 => Ty::Float,
            FieldType::String => Ty::Str,
            FieldType::Entity => Ty::Ent,
            FieldType::Vec2 => Ty::V2,
            FieldType::Vec3 => Ty::V3,
            _ => Ty::Int,
        }
    }
}

/// What the engine must answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    /// The reference evaluator's rows.
    Rows,
    /// An error; of this kind when `Some`.
    Error(Option<ErrorKind>),
}

/// A generated statement.
#[derive(Clone, Debug)]
pub struct Case {
    pub text: String,
    pub expect: Expect,
    /// What the case exercises (for coverage counts in the test output).
    pub shape: &'static str,
    /// Parameter values: `("1", v)` for `$1`, `("name", v)` for `$name`.
    pub params: Vec<(String, Value)>,
}

impl Case {
    pub fn new(text: String, expect: Expect, shape: &'static str) -> Case {
        Case { text, expect, shape, params: Vec::new() }
    }

    /// The parameters as the API takes them.
    pub fn bound(&self) -> Params {
        let mut p = Params::new();
        for (key, v) in &self.params {
            p = if key.starts_with(|c: char| c.is_ascii_digit()) { p.bind(v.clone()) } else { p.set(key, v.clone()) };
        }
        p
    }
}

/// A piece of generated text; `atom` when it needs no parentheses as an operand.
#[derive(Clone, Debug)]
pub struct G {
    pub text: String,
    pub atom: bool,
}

impl G {
    fn atom(text: impl Into<String>) -> G {
        G { text: text.into(), atom: true }
    }
    fn op(text: impl Into<String>) -> G {
        G { text: text.into(), atom: false }
    }
}

/// String values the world uses (also used as literals, so equalities hit).
pub const TEAMS: [&str; 6] = ["red", "blue", "green", "gold", "", "Red"];
pub const NAMES: [&str; 12] = ["zig", "ziggy", "Zag", "zag", "a_b", "100%", "", "o'neil", "héllo", "bob", "alice", "z"];
const PATTERNS: [&str; 21] = [
    "r%",
    "%e%",
    "_ed",
    "zig%",
    "%",
    "",
    "z_g%",
    "%g",
    "a_b",
    "100%",
    "%'%",
    "h_llo",
    "___",
    "Z%",
    "red",
    "ziggy",
    "%ggy",
    "hé%",
    "%llo",
    "o'neil%",
    "ziggyziggy%",
];

/// A FROM term as generated.
#[derive(Clone, Debug)]
enum GTerm {
    Req(String),
    Opt(String),
    Not(String),
    Any(Vec<String>),
}

pub struct Gen<'a> {
    pub rng: Rng,
    schema: &'a Schema,
    live: Vec<Entity>,
    dead: Vec<Entity>,
    /// Per entity field (`"C.f"`), every entity it holds somewhere (live or stale): ancestors
    /// worth asking about.
    link_targets: relation_exprs::LinkTargets,
    /// Per entity field, the live targets at the top of their chain (whole trees below).
    link_tops: relation_exprs::LinkTargets,
    /// Components this query mostly reads.
    scope: Vec<String>,
    aliases: usize,
    /// Parameters used by the query being generated.
    params: Vec<(String, Value)>,
    /// Whether literals may become parameters (not in mutations, which run without).
    pub allow_params: bool,
}

impl<'a> Gen<'a> {
    pub fn new(rng: Rng, model: &'a Model, dead: &[Entity]) -> Gen<'a> {
        let (link_targets, link_tops) = relation_exprs::link_targets(model);
        Gen {
            rng,
            schema: &model.schema,
            live: model.entities.keys().copied().collect(),
            dead: dead.to_vec(),
            link_targets,
            link_tops,
            scope: Vec::new(),
            aliases: 0,
            params: Vec::new(),
            allow_params: true,
        }
    }

    /// Makes the generated expressions read mostly these components.
    pub fn focus(&mut self, comps: &[&str]) {
        self.scope = comps.iter().map(|c| c.to_string()).collect();
    }

    // -----------------------------------------------------------------------------------------
    // Text helpers

    /// A keyword in a random case now and then.
    fn kw(&mut self, k: &str) -> String {
        match self.rng.below(12) {
            0 => k.to_ascii_lowercase(),
            1 => {
                let lower = k.to_ascii_lowercase();
                let mut c = lower.chars();
                c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
            }
            _ => k.to_string(),
        }
    }

    /// Whitespace: one space mostly, sometimes a run or a newline.
    fn sp(&mut self) -> &'static str {
        match self.rng.below(25) {
            0 => "  ",
            1 => "\n  ",
            2 => " \t",
            _ => " ",
        }
    }

    fn paren(&mut self, g: G) -> String {
        if g.atom && !self.rng.chance(0.04) { g.text } else { format!("({})", g.text) }
    }

    fn bin(&mut self, a: G, op: &str, b: G) -> G {
        let (a, b) = (self.paren(a), self.paren(b));
        let (s1, s2) = (self.sp(), self.sp());
        G::op(format!("{a}{s1}{op}{s2}{b}"))
    }

    fn call(&mut self, name: &str, args: Vec<G>) -> G {
        let name = if self.rng.chance(0.05) { name.to_ascii_uppercase() } else { name.to_string() };
        let args: Vec<String> = args.into_iter().map(|a| a.text).collect();
        G::atom(format!("{name}({})", args.join(", ")))
    }

    fn alias(&mut self) -> String {
        self.aliases += 1;
        let stems = ["a", "val", "k", "Total", "x_"];
        format!("{}{}", self.rng.pick(&stems), self.aliases)
    }

    // -----------------------------------------------------------------------------------------
    // Literals

    pub fn int_lit(&mut self) -> i64 {
        match self.rng.below(10) {
            0 => 0,
            1 => *self.rng.pick(&[1000, -1000, 255, 100, -100]),
            2 | 3 => self.rng.range(-20, -1),
            _ => self.rng.range(-3, 30),
        }
    }

    pub fn float_lit(&mut self) -> f64 {
        match self.rng.below(10) {
            0 => 0.0,
            1 => *self.rng.pick(&[0.1, 0.25, 1e-3, 25.0, 100.0, -0.75, 3.3, -0.0]),
            _ => self.rng.range(-40, 40) as f64 / 2.0,
        }
    }

    fn float_text(&mut self, x: f64) -> String {
        if x == 25.0 && self.rng.chance(0.5) {
            return "2.5e1".into();
        }
        if x == 100.0 && self.rng.chance(0.5) {
            return "1E2".into();
        }
        format!("{x:?}")
    }

    pub fn str_text(&mut self, s: &str) -> String {
        let q = if self.rng.chance(0.2) { '"' } else { '\'' };
        let mut out = String::new();
        out.push(q);
        for c in s.chars() {
            if c == q || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push(q);
        out
    }

    fn str_lit(&mut self) -> String {
        let s = match self.rng.below(3) {
            0 => *self.rng.pick(&TEAMS),
            1 => *self.rng.pick(&NAMES),
            _ => *self.rng.pick(&["x", "red!", "-", "zig", "7"]),
        };
        self.str_text(s)
    }

    pub fn entity_lit(&mut self) -> String {
        if !self.live.is_empty() && self.rng.chance(0.7) {
            self.rng.pick(&self.live).to_string()
        } else if !self.dead.is_empty() && self.rng.chance(0.6) {
            self.rng.pick(&self.dead).to_string()
        } else {
            format!("{}v0", self.rng.range(0, 300))
        }
    }

    fn vec_lit(&mut self, n: usize) -> G {
        let mut xs = Vec::new();
        for _ in 0..n {
            xs.push(if self.rng.chance(0.3) {
                self.rng.range(-10, 10).to_string()
            } else {
                let x = self.rng.range(-30, 30) as f64 / 2.0;
                self.float_text(x)
            });
        }
        G::atom(format!("[{}]", xs.join(", ")))
    }

    // -----------------------------------------------------------------------------------------
    // Names

    /// A component (`C.f`) field of type `ty`: from the scope mostly, else any component.
    fn field(&mut self, ty: Ty) -> Option<G> {
        let mut pool = Vec::new();
        let mut anywhere = Vec::new();
        for c in &self.schema.comps {
            for (f, t) in &c.fields {
                if Ty::of_field_type(*t) == ty {
                    anywhere.push(format!("{}.{f}", c.name));
                    if self.scope.contains(&c.name) {
                        pool.push(format!("{}.{f}", c.name));
                    }
                }
            }
        }
        let from = if pool.is_empty() || self.rng.chance(0.08) { anywhere } else { pool };
        (!from.is_empty()).then(|| G::atom(self.rng.pick(&from).clone()))
    }

    /// A vector-like component of size `n`.
    fn vector_comp(&mut self, n: usize) -> Option<G> {
        let all: Vec<String> =
            self.schema.comps.iter().filter(|c| c.vector_len() == Some(n)).map(|c| c.name.clone()).collect();
        let scoped: Vec<String> = all.iter().filter(|c| self.scope.contains(c)).cloned().collect();
        let from = if scoped.is_empty() || self.rng.chance(0.1) { all } else { scoped };
        (!from.is_empty()).then(|| G::atom(self.rng.pick(&from).clone()))
    }

    fn any_comp(&mut self) -> String {
        if !self.scope.is_empty() && self.rng.chance(0.6) {
            self.rng.pick(&self.scope).clone()
        } else {
            self.rng.pick(&self.schema.comps).name.clone()
        }
    }

    // -----------------------------------------------------------------------------------------
    // Expressions

    /// A leaf of type `ty`.
    fn leaf(&mut self, ty: Ty) -> G {
        if self.rng.chance(0.03) {
            return G::atom(self.kw("NULL"));
        }
        if self.rng.chance(0.06)
            && let Some(g) = self.relation_leaf(ty)
        {
            return g;
        }
        let want_field = self.rng.chance(0.6);
        match ty {
            Ty::Int | Ty::Float | Ty::Str if want_field => match self.field(ty) {
                Some(g) => g,
                None => self.literal(ty),
            },
            Ty::Bool => match self.rng.below(4) {
                0 => self.field(Ty::Bool).unwrap_or_else(|| G::atom("true")),
                1 | 2 => {
                    let c = self.any_comp();
                    self.call("has", vec![G::atom(c)])
                }
                _ => self.literal(Ty::Bool),
            },
            Ty::Ent => match self.rng.below(5) {
                0 | 1 => G::atom(if self.rng.chance(0.9) { "entity".to_string() } else { "ENTITY".to_string() }),
                2 | 3 => self.field(Ty::Ent).unwrap_or_else(|| G::atom("entity")),
                _ => self.literal(Ty::Ent),
            },
            Ty::V2 | Ty::V3 => {
                let n = if ty == Ty::V2 { 2 } else { 3 };
                match self.rng.below(10) {
                    0..=4 => self.vector_comp(n).unwrap_or_else(|| self.vec_lit(n)),
                    5 | 6 => self.field(ty).unwrap_or_else(|| self.vec_lit(n)),
                    _ => self.vec_lit(n),
                }
            }
            _ => self.literal(ty),
        }
    }

    fn literal(&mut self, ty: Ty) -> G {
        if self.allow_params && ty != Ty::V2 && ty != Ty::V3 && self.rng.chance(0.05) {
            return self.param(ty);
        }
        match ty {
            Ty::Int => G::atom(self.int_lit().to_string()),
            Ty::Float => {
                let x = self.float_lit();
                G::atom(self.float_text(x))
            }
            Ty::Str => G::atom(self.str_lit()),
            Ty::Bool => {
                let b = if self.rng.chance(0.5) { "TRUE" } else { "FALSE" };
                G::atom(self.kw(b))
            }
            Ty::Ent => G::atom(self.entity_lit()),
            Ty::V2 => self.vec_lit(2),
            Ty::V3 => self.vec_lit(3),
        }
    }

    /// A parameter (`$3` or `$p3`) holding a value of type `ty`.
    fn param(&mut self, ty: Ty) -> G {
        let v = match ty {
            Ty::Int => Value::Int(self.int_lit()),
            Ty::Float => Value::Float(self.float_lit()),
            Ty::Str => Value::Str(self.rng.pick(&NAMES).to_string()),
            Ty::Bool => Value::Bool(self.rng.chance(0.5)),
            _ => {
                let text = self.entity_lit();
                Value::Entity(text.parse().expect("entity literal"))
            }
        };
        self.bind(v)
    }

    /// A new parameter holding `v`.
    fn bind(&mut self, v: Value) -> G {
        let n = self.params.len() + 1;
        // Positional parameters are numbered in order; a named one may come between them.
        let key = if self.rng.chance(0.3) {
            format!("p{n}")
        } else {
            (self.params.iter().filter(|(k, _)| k.starts_with(|c: char| c.is_ascii_digit())).count() + 1).to_string()
        };
        self.params.push((key.clone(), v));
        G::atom(format!("${key}"))
    }

    /// Starts a new query: no aliases, no parameters yet.
    fn begin(&mut self) {
        self.aliases = 0;
        self.params.clear();
    }

    /// The finished case, with the parameters it uses.
    fn case(&mut self, text: String, expect: Expect, shape: &'static str) -> Case {
        Case { text, expect, shape, params: std::mem::take(&mut self.params) }
    }

    /// A number: int or float (its type returned).
    fn num(&mut self, d: u32) -> (G, Ty) {
        let ty = if self.rng.chance(0.5) { Ty::Int } else { Ty::Float };
        (self.expr(ty, d), ty)
    }

    /// An expression of type `ty`, at most `d` operators deep.
    pub fn expr(&mut self, ty: Ty, d: u32) -> G {
        if d == 0 || self.rng.chance(0.25) {
            return self.leaf(ty);
        }
        let d1 = d - 1;
        match ty {
            Ty::Int => match self.rng.weighted(&[30, 10, 10, 4, 5, 8, 10, 3]) {
                0 => {
                    let op = *self.rng.pick(&["+", "-", "*"]);
                    let (a, b) = (self.expr(Ty::Int, d1), self.expr(Ty::Int, d1));
                    self.bin(a, op, b)
                }
                1 | 2 => {
                    let op = if self.rng.chance(0.5) { "/" } else { "%" };
                    let a = self.expr(Ty::Int, d1);
                    let b = if self.rng.chance(0.3) { G::atom("0") } else { self.expr(Ty::Int, d1) };
                    self.bin(a, op, b)
                }
                3 => {
                    let a = self.expr(Ty::Int, d1);
                    G::op(format!("-({})", a.text))
                }
                4 => {
                    let a = self.expr(Ty::Int, d1);
                    self.call("abs", vec![a])
                }
                5 => {
                    let f = if self.rng.chance(0.5) { "min" } else { "max" };
                    let (a, b) = (self.expr(Ty::Int, d1), self.expr(Ty::Int, d1));
                    self.call(f, vec![a, b])
                }
                6 => {
                    let s = self.expr(Ty::Str, d1);
                    self.call("len", vec![s])
                }
                _ => {
                    let f = *self.rng.pick(&["floor", "ceil", "round"]);
                    let a = self.expr(Ty::Int, d1);
                    self.call(f, vec![a])
                }
            },
            Ty::Float => match self.rng.weighted(&[35, 10, 5, 12, 8, 6, 10, 15]) {
                0 | 1 => {
                    let op = if self.rng.below(2) == 0 {
                        *self.rng.pick(&["+", "-", "*"])
                    } else {
                        *self.rng.pick(&["/", "%", "/"])
                    };
                    let a = self.expr(Ty::Float, d1);
                    let (b, _) = if (op == "/" || op == "%") && self.rng.chance(0.2) {
                        (G::atom(if self.rng.chance(0.5) { "0" } else { "0.0" }), Ty::Int)
                    } else {
                        self.num(d1)
                    };
                    if self.rng.chance(0.5) && op != "/" && op != "%" { self.bin(b, op, a) } else { self.bin(a, op, b) }
                }
                2 => {
                    let a = self.expr(Ty::Float, d1);
                    G::op(format!("-({})", a.text))
                }
                3 => {
                    let f = *self.rng.pick(&["abs", "floor", "ceil", "round"]);
                    let a = self.expr(Ty::Float, d1);
                    self.call(f, vec![a])
                }
                4 => {
                    let (a, _) = self.num(d1);
                    self.call("sqrt", vec![a])
                }
                5 => {
                    let f = if self.rng.chance(0.5) { "min" } else { "max" };
                    let a = self.expr(Ty::Float, d1);
                    let (b, _) = self.num(d1);
                    if self.rng.chance(0.5) { self.call(f, vec![a, b]) } else { self.call(f, vec![b, a]) }
                }
                6 => {
                    let vt = if self.rng.chance(0.5) { Ty::V2 } else { Ty::V3 };
                    let (a, b) = (self.expr(vt, d1), self.expr(vt, d1));
                    self.call("distance", vec![a, b])
                }
                _ => self.leaf(Ty::Float),
            },
            Ty::Str => match self.rng.weighted(&[20, 20, 10, 40]) {
                0 => {
                    let f = if self.rng.chance(0.5) { "lower" } else { "upper" };
                    let a = self.expr(Ty::Str, d1);
                    self.call(f, vec![a])
                }
                1 => {
                    let (a, b) = (self.expr(Ty::Str, d1), self.expr(Ty::Str, d1));
                    self.bin(a, "||", b)
                }
                2 => {
                    let (a, b) = (self.expr(Ty::Str, d1), self.expr(Ty::Int, d1));
                    if self.rng.chance(0.5) { self.bin(a, "||", b) } else { self.bin(b, "||", a) }
                }
                _ => self.leaf(Ty::Str),
            },
            Ty::Bool => self.cond(d),
            Ty::V2 | Ty::V3 => match self.rng.weighted(&[60, 15, 15, 10]) {
                0 => self.leaf(ty),
                1 => {
                    let op = if self.rng.chance(0.5) { "+" } else { "-" };
                    let (a, b) = (self.vec_operand(ty, d1), self.vec_operand(ty, d1));
                    self.bin(a, op, b)
                }
                2 => {
                    let (v, (k, _)) = (self.vec_operand(ty, d1), self.num(d1.min(1)));
                    if self.rng.chance(0.5) { self.bin(v, "*", k) } else { self.bin(k, "*", v) }
                }
                _ => {
                    let v = self.vec_operand(ty, d1);
                    let k = if self.rng.chance(0.2) { G::atom("0") } else { self.num(d1.min(1)).0 };
                    self.bin(v, "/", k)
                }
            },
            Ty::Ent => self.leaf(ty),
        }
    }

    /// A vector operand of vector arithmetic: never a bare `null` (the binder types
    /// `null * 2` as a number, so the vector context would be lost).
    fn vec_operand(&mut self, ty: Ty, d: u32) -> G {
        let g = self.expr(ty, d);
        if g.text.trim().eq_ignore_ascii_case("null") { self.vec_lit(if ty == Ty::V2 { 2 } else { 3 }) } else { g }
    }

    /// A condition (a bool expression), at most `d` deep.
    pub fn cond(&mut self, d: u32) -> G {
        if d == 0 {
            return self.leaf(Ty::Bool);
        }
        let d1 = d - 1;
        match self.rng.weighted(&[35, 15, 7, 8, 8, 8, 8, 4, 4, 3]) {
            0 => self.comparison(d1),
            1 => {
                let op = if self.rng.chance(0.55) { "AND" } else { "OR" };
                let op = self.kw(op);
                let (a, b) = (self.cond(d1), self.cond(d1));
                self.bin(a, &op, b)
            }
            2 => {
                let not = self.kw("NOT");
                let a = self.cond(d1);
                let a = self.paren(a);
                G::op(format!("{not} {a}"))
            }
            3 => {
                let (x, ty) = match self.rng.below(3) {
                    0 => (self.expr(Ty::Str, d1), Ty::Str),
                    _ => self.num(d1),
                };
                let (lt, ht) = if ty == Ty::Str { (Ty::Str, Ty::Str) } else { (self.num_ty(), self.num_ty()) };
                let lo = self.expr(lt, d1);
                let hi = self.expr(ht, d1);
                let not = if self.rng.chance(0.3) { format!("{} ", self.kw("NOT")) } else { String::new() };
                let (x, lo, hi) = (self.paren(x), self.paren(lo), self.paren(hi));
                let (between, and) = (self.kw("BETWEEN"), self.kw("AND"));
                G::op(format!("{x} {not}{between} {lo} {and} {hi}"))
            }
            4 => {
                let ty = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Str, Ty::Ent, Ty::Bool, Ty::Int]);
                let x = self.expr(ty, d1);
                let n = if self.rng.chance(0.05) { 0 } else { self.rng.range(1, 4) as usize };
                let mut items = Vec::new();
                for _ in 0..n {
                    let t = match ty {
                        Ty::Int | Ty::Float => self.num_ty(),
                        t => t,
                    };
                    items.push(if self.rng.chance(0.08) {
                        "null".to_string()
                    } else if self.rng.chance(0.8) {
                        self.literal(t).text
                    } else {
                        self.expr(t, d1.min(1)).text
                    });
                }
                let not = if self.rng.chance(0.3) { format!("{} ", self.kw("NOT")) } else { String::new() };
                let x = self.paren(x);
                let kw_in = self.kw("IN");
                G::op(format!("{x} {not}{kw_in} ({})", items.join(", ")))
            }
            5 => {
                let x = self.expr(Ty::Str, d1);
                let p = *self.rng.pick(&PATTERNS);
                let p = if self.rng.chance(0.1) { self.expr(Ty::Str, 0).text } else { self.str_text(p) };
                let not = if self.rng.chance(0.3) { format!("{} ", self.kw("NOT")) } else { String::new() };
                let x = self.paren(x);
                let like = self.kw("LIKE");
                G::op(format!("{x} {not}{like} {p}"))
            }
            6 => {
                let x = if self.rng.chance(0.2) {
                    G::atom(self.any_comp())
                } else {
                    let ty = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Str, Ty::Ent, Ty::Bool, Ty::V2, Ty::V3]);
                    self.expr(ty, d1)
                };
                let x = self.paren(x);
                let is = self.kw("IS");
                let not = if self.rng.chance(0.5) { format!("{} ", self.kw("NOT")) } else { String::new() };
                let null = self.kw("NULL");
                G::op(format!("{x} {is} {not}{null}"))
            }
            7 => {
                let vt = if self.rng.chance(0.5) { Ty::V2 } else { Ty::V3 };
                let (p, c) = (self.expr(vt, d1), self.expr(vt, d1));
                let (r, _) = self.num(d1.min(1));
                self.call("within", vec![p, c, r])
            }
            8 => {
                let vt = if self.rng.chance(0.5) { Ty::V2 } else { Ty::V3 };
                let (p, lo, hi) = (self.expr(vt, d1), self.expr(vt, d1), self.expr(vt, d1));
                self.call("inside", vec![p, lo, hi])
            }
            _ => self.leaf(Ty::Bool),
        }
    }

    fn num_ty(&mut self) -> Ty {
        if self.rng.chance(0.5) { Ty::Int } else { Ty::Float }
    }

    fn comparison(&mut self, d: u32) -> G {
        let ops = ["=", "==", "!=", "<>", "<", "<=", ">", ">="];
        let (a, b, eq_only) = match self.rng.weighted(&[25, 25, 12, 15, 5, 10, 6]) {
            0 => (self.expr(Ty::Int, d), self.expr(Ty::Int, d), false),
            1 => (self.expr(Ty::Float, d), self.expr(Ty::Float, d), false),
            2 => (self.expr(Ty::Int, d), self.expr(Ty::Float, d), false),
            3 => (self.expr(Ty::Str, d), self.expr(Ty::Str, d), false),
            4 => (self.expr(Ty::Bool, d.min(1)), self.expr(Ty::Bool, d.min(1)), false),
            5 => (self.expr(Ty::Ent, d), self.expr(Ty::Ent, d), false),
            _ => {
                let vt = if self.rng.chance(0.5) { Ty::V2 } else { Ty::V3 };
                (self.expr(vt, d), self.expr(vt, d), true)
            }
        };
        let op = if eq_only { *self.rng.pick(&ops[..4]) } else { *self.rng.pick(&ops) };
        if self.rng.chance(0.5) { self.bin(a, op, b) } else { self.bin(b, op, a) }
    }

    /// An ORDER BY or GROUP BY key: never a bare integer literal, which SQL (and the engine)
    /// reads as an item's position rather than as a constant.
    fn key_expr(&mut self, ty: Ty, d: u32) -> G {
        loop {
            let g = self.expr(ty, d);
            if g.text.trim_start_matches('-').parse::<i64>().is_err() {
                return g;
            }
        }
    }

    fn orderable_ty(&mut self) -> Ty {
        *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Str, Ty::Bool, Ty::Ent, Ty::Float, Ty::Int])
    }

    // -----------------------------------------------------------------------------------------
    // Terms and clauses

    fn terms(&mut self) -> Vec<GTerm> {
        let n = *self.rng.pick(&[0, 0, 1, 1, 1, 2, 2, 2, 3, 3]);
        let mut names: Vec<String> = self.schema.names().map(String::from).collect();
        self.rng.shuffle(&mut names);
        let mut terms = Vec::new();
        while terms.len() < n && !names.is_empty() {
            let kind = self.rng.weighted(&[55, 17, 13, 15]);
            if kind == 3 && names.len() >= 2 {
                let k = if names.len() >= 3 && self.rng.chance(0.3) { 3 } else { 2 };
                terms.push(GTerm::Any(names.drain(..k).collect()));
                continue;
            }
            let c = names.remove(0);
            terms.push(match kind {
                1 => GTerm::Opt(c),
                2 => GTerm::Not(c),
                _ => GTerm::Req(c),
            });
        }
        terms
    }

    fn terms_text(&mut self, terms: &[GTerm]) -> String {
        let mut out = Vec::new();
        for t in terms {
            out.push(match t {
                GTerm::Req(c) => c.clone(),
                GTerm::Opt(c) => {
                    if self.rng.chance(0.2) {
                        format!("{} {c}", self.kw("OPTIONAL"))
                    } else {
                        format!("?{c}")
                    }
                }
                GTerm::Not(c) => {
                    if self.rng.chance(0.2) {
                        format!("{} {c}", self.kw("NOT"))
                    } else {
                        format!("!{c}")
                    }
                }
                GTerm::Any(cs) => {
                    let sep = if self.rng.chance(0.7) { " | " } else { "|" };
                    cs.join(sep)
                }
            });
        }
        out.join(", ")
    }

    /// Sets the scope from the terms: the components whose fields the query reads.
    fn set_scope(&mut self, terms: &[GTerm]) {
        self.scope.clear();
        for t in terms {
            match t {
                GTerm::Req(c) | GTerm::Opt(c) => self.scope.push(c.clone()),
                GTerm::Not(c) => {
                    if self.rng.chance(0.15) {
                        self.scope.push(c.clone())
                    }
                }
                GTerm::Any(cs) => self.scope.extend(cs.iter().cloned()),
            }
        }
        if self.scope.is_empty() || self.rng.chance(0.2) {
            let extra = self.rng.below(2) + 1;
            for _ in 0..extra {
                let c = self.rng.pick(&self.schema.comps).name.clone();
                if !self.scope.contains(&c) && !terms.iter().any(|t| matches!(t, GTerm::Not(n) if *n == c)) {
                    self.scope.push(c);
                }
            }
        }
    }

    fn limit_offset(&mut self, out: &mut String) {
        if self.rng.chance(0.3) {
            let n = if self.rng.chance(0.1) { 0 } else { self.rng.range(1, 10) };
            out.push_str(&format!(" {} {n}", self.kw("LIMIT")));
        }
        if self.rng.chance(0.15) {
            let n = self.rng.range(0, 6);
            out.push_str(&format!(" {} {n}", self.kw("OFFSET")));
        }
    }

    fn direction(&mut self) -> String {
        match self.rng.below(10) {
            0..=3 => format!(" {}", self.kw("DESC")),
            4 => format!(" {}", self.kw("ASC")),
            _ => String::new(),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Queries

    /// A random query of any shape.
    pub fn query(&mut self) -> Case {
        match self.rng.weighted(&[55, 5, 12, 18, 10]) {
            0 => self.plain_query(),
            1 => self.bare_query(),
            2 => self.aggregate_query(false),
            3 => self.aggregate_query(true),
            _ => self.broken_query(),
        }
    }

    fn clause_from(&mut self, terms: &[GTerm]) -> String {
        if terms.is_empty() {
            String::new()
        } else {
            let t = self.terms_text(terms);
            format!(" {} {t}", self.kw("FROM"))
        }
    }

    /// `SELECT items [FROM] [WHERE] [ORDER BY] [LIMIT] [OFFSET]`.
    pub fn plain_query(&mut self) -> Case {
        self.begin();
        let terms = self.terms();
        self.set_scope(&terms);
        let mut items: Vec<String> = Vec::new();
        // (alias, orderable) of aliased items.
        let mut aliased: Vec<String> = Vec::new();
        let n = self.rng.range(1, 4);
        let mut star = false;
        for _ in 0..n {
            match self.rng.weighted(&[10, 10, 25, 45, 6]) {
                0 => items.push(if self.rng.chance(0.1) { "ENTITY".into() } else { "entity".into() }),
                1 => items.push(self.any_comp()),
                2 => {
                    let ty = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Str, Ty::Bool, Ty::Ent, Ty::V2]);
                    let f = self.field(ty).map(|g| g.text).unwrap_or_else(|| "entity".into());
                    if self.rng.chance(0.2) {
                        let a = self.alias();
                        items.push(format!("{f} {} {a}", self.kw("AS")));
                        if ty.orderable() {
                            aliased.push(a);
                        }
                    } else {
                        items.push(f);
                    }
                }
                3 => {
                    let ty = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Str, Ty::Bool, Ty::Float, Ty::Int, Ty::Ent]);
                    let d = self.rng.range(0, 3) as u32;
                    let e = self.expr(ty, d);
                    if self.rng.chance(0.35) {
                        let a = self.alias();
                        items.push(format!("{} {} {a}", e.text, self.kw("AS")));
                        aliased.push(a);
                    } else {
                        items.push(e.text);
                    }
                }
                _ if !star => {
                    star = true;
                    items.push("*".into());
                }
                _ => items.push("entity".into()),
            }
        }
        let mut q = format!("{} {}", self.kw("SELECT"), items.join(", "));
        q += &self.clause_from(&terms);
        if self.rng.chance(0.8) {
            let d = self.rng.range(1, 3) as u32;
            let c = self.cond(d);
            q += &format!(" {} {}", self.kw("WHERE"), c.text);
        }
        if self.rng.chance(0.5) {
            let k = self.rng.range(1, 3);
            let mut keys = Vec::new();
            for _ in 0..k {
                let key = if !aliased.is_empty() && self.rng.chance(0.3) {
                    self.rng.pick(&aliased).clone()
                } else {
                    let ty = self.orderable_ty();
                    let d = self.rng.range(0, 1) as u32;
                    self.key_expr(ty, d).text
                };
                keys.push(key + &self.direction());
            }
            q += &format!(" {} {} {}", self.kw("ORDER"), self.kw("BY"), keys.join(", "));
        }
        self.limit_offset(&mut q);
        self.case(q, Expect::Rows, if star { "select *" } else { "select" })
    }

    /// A query shaped for the index paths (with the differential's indexes present): ORDER BY
    /// an indexed field or a distance, with and without more keys, LIMIT and OFFSET and a
    /// range on the same field; ORs and ANDs of indexable predicates; `!=`; presence of a
    /// tag. The random queries reach these shapes too, but rarely.
    pub fn index_query(&mut self) -> Case {
        self.begin();
        let pred = |g: &mut Gen| -> String {
            match g.rng.below(9) {
                0 => format!("Health.hp {} {}", g.rng.pick(&["<", "<=", ">", ">=", "=", "!="]), g.float_lit()),
                1 => format!("Level.value {} {}", g.rng.pick(&["<", ">=", "=", "!="]), g.int_lit()),
                2 => {
                    let t = g.str_lit();
                    format!("Team.name {} {t}", g.rng.pick(&["=", "!="]))
                }
                3 => format!("Health.hp BETWEEN {} AND {}", g.float_lit(), g.float_lit()),
                4 => {
                    let v = g.vec_lit(3).text;
                    format!("within(Position, {v}, {})", g.rng.range(1, 20))
                }
                5 => format!("Flags.a = {}", g.rng.chance(0.5)),
                // For the skip indexes.
                6 | 7 => g.skip_pred(),
                _ => "has(Frozen)".to_string(),
            }
        };
        let mut wheres: Vec<String> = Vec::new();
        for _ in 0..self.rng.range(0, 3) {
            let p = if self.rng.chance(0.3) { format!("({} OR {})", pred(self), pred(self)) } else { pred(self) };
            wheres.push(p);
        }
        let (key, items) = match self.rng.below(4) {
            0 => {
                let v = self.vec_lit(3).text;
                (format!("distance(Position, {v})"), format!("entity, distance(Position, {v}) AS d, Health.hp"))
            }
            1 => ("Level.value".to_string(), "entity, Level.value, Team.name".to_string()),
            _ => {
                if self.rng.chance(0.5) {
                    wheres.push(format!("Health.hp {} {}", self.rng.pick(&[">", "<="]), self.float_lit()));
                }
                ("Health.hp".to_string(), "entity, Health.hp, Level.value".to_string())
            }
        };
        let dir = if key.starts_with("distance") { String::new() } else { self.direction() };
        let mut keys = vec![format!("{key}{dir}")];
        if self.rng.chance(0.5) {
            let more = self.rng.pick(&["Team.name", "Level.value DESC", "Health.max", "Name.value DESC"]);
            keys.push(more.to_string());
        }
        let from = if self.rng.chance(0.2) { " FROM Frozen" } else { "" };
        let mut q = format!("SELECT {items}{from}");
        if !wheres.is_empty() {
            q += &format!(" WHERE {}", wheres.join(" AND "));
        }
        q += &format!(" ORDER BY {}", keys.join(", "));
        q += &format!(" LIMIT {}", self.rng.range(1, 12));
        if self.rng.chance(0.3) {
            q += &format!(" OFFSET {}", self.rng.range(0, 5));
        }
        self.case(q, Expect::Rows, "index-shaped")
    }

    /// A bare term list: `Position, ?Velocity, !Frozen`.
    pub fn bare_query(&mut self) -> Case {
        self.begin();
        let mut terms = self.terms();
        if terms.is_empty() {
            terms.push(GTerm::Req(self.rng.pick(&self.schema.comps).name.clone()));
        }
        let text = self.terms_text(&terms);
        self.case(text, Expect::Rows, "bare terms")
    }

    /// An aggregate of a row expression: `(text, type)`.
    fn aggregate(&mut self) -> (G, Ty) {
        match self.rng.weighted(&[20, 15, 20, 15, 20]) {
            0 => (G::atom(if self.rng.chance(0.1) { "COUNT(*)" } else { "count(*)" }), Ty::Int),
            1 => {
                let ty = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Str, Ty::Ent, Ty::Bool]);
                let d = self.rng.range(0, 1) as u32;
                let x = self.expr(ty, d);
                (self.call("count", vec![x]), Ty::Int)
            }
            2 => {
                let d = self.rng.range(0, 2) as u32;
                let (x, ty) = self.num(d);
                (self.call("sum", vec![x]), ty)
            }
            3 => {
                let d = self.rng.range(0, 2) as u32;
                let (x, _) = self.num(d);
                (self.call("avg", vec![x]), Ty::Float)
            }
            _ => {
                let f = if self.rng.chance(0.5) { "min" } else { "max" };
                let ty = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Str]);
                let d = self.rng.range(0, 1) as u32;
                let x = self.expr(ty, d);
                (self.call(f, vec![x]), ty)
            }
        }
    }

    /// An aggregate, or arithmetic over aggregates.
    fn aggregate_expr(&mut self) -> (G, Ty) {
        let (a, ta) = self.aggregate();
        if !self.rng.chance(0.25) || ta == Ty::Str {
            return (a, ta);
        }
        let (b, tb) = match self.rng.below(2) {
            0 => {
                let (b, tb) = self.aggregate();
                if tb == Ty::Str {
                    return (a, ta);
                }
                (b, tb)
            }
            _ => {
                let t = self.num_ty();
                (self.literal(t), t)
            }
        };
        let op = *self.rng.pick(&["+", "-", "*", "/"]);
        let ty = if ta == Ty::Int && tb == Ty::Int { Ty::Int } else { Ty::Float };
        (self.bin(a, op, b), ty)
    }

    /// `SELECT aggregates [GROUP BY keys] …`.
    pub fn aggregate_query(&mut self, grouped: bool) -> Case {
        self.begin();
        let terms = self.terms();
        self.set_scope(&terms);
        // GROUP BY keys: (text, type).
        let mut keys: Vec<(String, Ty)> = Vec::new();
        if grouped {
            let n = if self.rng.chance(0.7) { 1 } else { 2 };
            for _ in 0..n {
                let ty = *self.rng.pick(&[Ty::Str, Ty::Int, Ty::Bool, Ty::Int, Ty::Float, Ty::Ent]);
                let d = if self.rng.chance(0.6) { 0 } else { 1 };
                let k = self.key_expr(ty, d).text;
                if !keys.iter().any(|(t, _)| *t == k) {
                    keys.push((k, ty));
                }
            }
        }
        let mut items: Vec<String> = Vec::new();
        let mut order_pool: Vec<String> = Vec::new();
        for (k, _) in &keys {
            if self.rng.chance(0.7) {
                items.push(k.clone());
            }
            order_pool.push(k.clone());
        }
        let n = self.rng.range(1, 3);
        for _ in 0..n {
            let (text, alias) = if !keys.is_empty() && self.rng.chance(0.15) {
                // An expression over a grouped key.
                let (k, ty) = self.rng.pick(&keys).clone();
                let k = format!("({k})");
                let e = match ty {
                    Ty::Int | Ty::Float => format!("{k} + 1"),
                    Ty::Str => format!("{k} || '!'"),
                    Ty::Bool => format!("{} {k}", self.kw("NOT")),
                    _ => format!("{k} IS NULL"),
                };
                (e, self.rng.chance(0.3).then(|| self.alias()))
            } else {
                let (g, _) = self.aggregate_expr();
                (g.text, self.rng.chance(0.4).then(|| self.alias()))
            };
            match alias {
                Some(a) => {
                    items.push(format!("{text} {} {a}", self.kw("AS")));
                    order_pool.push(a);
                }
                None => {
                    items.push(text.clone());
                    order_pool.push(text);
                }
            }
        }
        let mut q = format!("{} {}", self.kw("SELECT"), items.join(", "));
        q += &self.clause_from(&terms);
        if self.rng.chance(0.7) {
            let d = self.rng.range(1, 2) as u32;
            let c = self.cond(d);
            q += &format!(" {} {}", self.kw("WHERE"), c.text);
        }
        if !keys.is_empty() {
            let ks: Vec<String> = keys.iter().map(|(k, _)| k.clone()).collect();
            q += &format!(" {} {} {}", self.kw("GROUP"), self.kw("BY"), ks.join(", "));
        }
        if self.rng.chance(if grouped { 0.6 } else { 0.15 }) {
            let k = self.rng.range(1, 2);
            let mut ks = Vec::new();
            for _ in 0..k {
                let key =
                    if self.rng.chance(0.2) { self.aggregate().0.text } else { self.rng.pick(&order_pool).clone() };
                ks.push(key + &self.direction());
            }
            q += &format!(" {} {} {}", self.kw("ORDER"), self.kw("BY"), ks.join(", "));
        }
        self.limit_offset(&mut q);
        self.case(q, Expect::Rows, if grouped { "group by" } else { "aggregate" })
    }

    /// A query with one deliberate mistake, and the error kind it must produce (`None`: any).
    pub fn broken_query(&mut self) -> Case {
        self.begin();
        use ErrorKind as K;
        let with_where = |w: &str| format!("SELECT entity WHERE {w}");
        let (text, kind): (String, Option<ErrorKind>) = match self.rng.below(35) {
            0 => ("SELECT Team.name + 1".into(), Some(K::Type)),
            1 => (with_where("Level.value LIKE 'a%'"), Some(K::Type)),
            2 => (with_where("NOT Level.value"), Some(K::Type)),
            3 => (with_where("Position < [1, 2, 3]"), Some(K::Type)),
            4 => (with_where("Position = [1, 2]"), Some(K::Type)),
            5 => ("SELECT sum(Team.name)".into(), Some(K::Type)),
            6 => ("SELECT abs(Name.value) FROM Name".into(), Some(K::Type)),
            7 => (with_where("Flags.a + 1 > 0"), Some(K::Type)),
            8 => (with_where("Level.value"), Some(K::Type)),
            9 => (with_where("distance(Position, Health) < 1"), Some(K::Type)),
            10 => (with_where("Team.name < 3"), Some(K::Type)),
            11 => (with_where("Level.value IN ('a', 1)"), Some(K::Type)),
            12 => ("SELECT len(Level.value)".into(), Some(K::Type)),
            13 => (with_where("Helth.hp > 0"), Some(K::UnknownComponent)),
            14 => ("SELECT Health.hpp".into(), Some(K::UnknownField)),
            15 => ("SELECT entity FROM Positon".into(), Some(K::UnknownComponent)),
            16 => ("SELECT nosuch(1) FROM Level".into(), Some(K::UnknownFunction)),
            17 => ("SELECT Level.value, count(*)".into(), None),
            18 => ("SELECT Team.name, count(*) GROUP BY Level.value".into(), None),
            19 => (with_where("count(*) > 1"), None),
            20 => ("SELECT sum(count(*)) FROM Level".into(), None),
            21 => (with_where("within(Position, [0, 0, 0], 'x')"), Some(K::Type)),
            22 => ("SELECT FROM Health".into(), Some(K::Syntax)),
            23 => ("SELECT Level.value + FROM Level".into(), Some(K::Syntax)),
            24 => ("SELECT 2. FROM Level".into(), Some(K::Syntax)),
            25 => (with_where("Health.hp > 1 AND 'x'"), Some(K::Type)),
            26 => (with_where("Level.value > $1"), Some(K::Parameter)),
            // References: hierarchy functions follow an entity field; paths step through one.
            28 => ("SELECT depth(Level.value)".into(), Some(K::Type)),
            29 => ("SELECT root(ChildOf)".into(), Some(K::Type)),
            30 => (with_where("descendant_of(ChildOf.parent, 'x')"), Some(K::Type)),
            31 => (with_where("descendant_of(Link.to, entity, 'x')"), Some(K::Type)),
            32 => ("SELECT Level.value.Name.value".into(), Some(K::Type)),
            33 => ("SELECT depth(ChildOf.parent, entity)".into(), Some(K::Type)),
            34 => ("SELECT ChildOf.parent.Nme.value".into(), Some(K::UnknownComponent)),
            _ => ("SELECT Health.hp FROM Health ORDER BY Health.hp LIMIT 'x'".into(), None),
        };
        self.case(text, Expect::Error(kind), "error")
    }
}
