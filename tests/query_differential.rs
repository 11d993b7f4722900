//! Differential test of the query engine: random worlds, random queries over the whole SELECT
//! grammar, each run by the engine (`Database`) and by a deliberately simple reference evaluator
//! that walks the parsed AST row by row over a plain model of the same data
//! (`differential/reference.rs`). Results must agree: same columns, the same rows as multisets,
//! as sequences under ORDER BY (the tie rule makes every ordered plain query deterministic).
//!
//! - `differential_select`: 40 worlds × 100 queries, every query run with no index and then
//!   again with each index kind the build supports (see [`INDEXES`]);
//! - references between entities throughout: worlds link entities through `ChildOf.parent`
//!   and `Link.to` (declared `REFERENCES … ON DELETE … [ACYCLIC]` in some worlds, plain in
//!   others; forests, loops, null and stale targets), queries follow them with paths and
//!   `depth` / `root` / `descendant_of` (`differential/relations.rs` models them naively), with
//!   and without relation, btree, bitmap and skip indexes on the fields, and DESPAWN applies
//!   the `ON DELETE` policies in the mutation test; `ChildOf` and `Link` are sparse in some
//!   worlds, and some worlds spread their ids over several skip-index blocks;
//! - `differential_mutations`: 12 worlds × 40 mutation statements (SPAWN, DESPAWN, ADD, REMOVE,
//!   UPDATE, some failing; one in four a targeted re-parenting of `differential/reparent.rs`:
//!   subtree moves, loops, dead targets, some with `$` parameters) applied to both the
//!   database and the model, with the whole world
//!   compared after each (a failed statement must change nothing), random queries and three
//!   prepared statements run in between; each world lives with one index kind (round robin) once
//!   the kind is supported;
//! - `differential_systems`: 24 worlds × 4 rounds of one to four text systems (mostly writes
//!   to references, re-parenting, despawns of parents; some `BEGIN … END` blocks, two
//!   phases) run by two `TICK`s each, against a model that stages their writes as the
//!   language says (`differential/systems.rs`): TICK's failures, the whole world and a few
//!   queries are compared after every tick;
//! - `differential_select_sparse`, `differential_mutations_sparse`: the same with every
//!   component sparse (12 and 6 worlds): created `STORAGE SPARSE`, or moved there by
//!   `ALTER COMPONENT … SET STORAGE SPARSE` once the world is built;
//! - `reference_*` (in `differential/hand_cases.rs`, `differential/hand_relations.rs`): the
//!   reference itself against hand-worked answers.
//!
//! Everything is a pure function of a seed. A failure prints the world seed, the world and the
//! query; rerun just that world with
//! `DIFF_SEED=<seed> cargo test -p ecsdb --test query_differential <test name>`.
//! Other knobs: `DIFF_WORLDS=n`, `DIFF_QUERIES=n` (queries per world, or steps per world for the
//! mutation test), `DIFF_BASE=n` (a different family of seeds), `DIFF_REPORT=n` (failures
//! printed in full; 25 by default), `DIFF_PRINT=1` (print every query as it runs).

mod common;
#[path = "differential/compare.rs"]
mod compare;
#[path = "differential/gen.rs"]
mod r#gen;
#[path = "differential/hand_cases.rs"]
mod hand_cases;
#[path = "differential/hand_relations.rs"]
mod hand_relations;
#[path = "differential/model.rs"]
mod model;
#[path = "differential/mutate.rs"]
mod mutate;
#[path = "differential/reference.rs"]
mod reference;
#[path = "differential/relations.rs"]
mod relations;
#[path = "differential/reparent.rs"]
mod reparent;
#[path = "differential/systems.rs"]
mod systems;
use common::rng;
#[path = "differential/world_gen.rs"]
mod world_gen;

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use ecsdb::Value;
use ecsdb::query::parse::{Statement, parse_statement};
use ecsdb::query::{Database, Error, ErrorKind, PlanOptions, Prepared, ResultSet};

use compare::{compare, describe_expected, describe_got};
use r#gen::{Case, Expect, Gen};
use model::Model;
use mutate::Effect;
use reference::{RefError, Reference};
use rng::{Rng, mix};
use world_gen::{Storage, TestWorld};

/// The secondary indexes the queries are run again with, one at a time and then all together:
/// `(name, indexed component, CREATE INDEX statement)`. **The hook for indexes**: add entries
/// here for new kinds. Every entry must be created: a kind the build refuses (an `Unsupported`
/// error, or any other) fails the test. An index never changes an answer, so every
/// run is compared with the same reference result. With one index present, only the queries
/// that name its component are run again (no other query can use it); with all present, all.
const INDEXES: [(&str, &str, &str); 14] = [
    ("dq_position_rtree", "Position", "CREATE INDEX dq_position_rtree ON Position USING rtree"),
    ("dq_hp_btree", "Health", "CREATE INDEX dq_hp_btree ON Health (hp) USING btree"),
    ("dq_level_btree", "Level", "CREATE INDEX dq_level_btree ON Level (value) USING btree"),
    ("dq_team_bitmap", "Team", "CREATE INDEX dq_team_bitmap ON Team (name) USING bitmap"),
    ("dq_flags_bitmap", "Flags", "CREATE INDEX dq_flags_bitmap ON Flags (a) USING bitmap"),
    ("dq_frozen_bitmap", "Frozen", "CREATE INDEX dq_frozen_bitmap ON Frozen USING bitmap"),
    ("dq_target_w_btree", "Target", "CREATE INDEX dq_target_w_btree ON Target (w) USING btree"),
    // References: target -> referrers (answers `C.f = e`, `IN`, `descendant_of`), and the
    // kinds that take any orderable field, entity fields included.
    ("dq_parent_relation", "ChildOf", "CREATE INDEX dq_parent_relation ON ChildOf (parent) USING relation"),
    ("dq_link_relation", "Link", "CREATE INDEX dq_link_relation ON Link (to) USING relation"),
    ("dq_parent_btree", "ChildOf", "CREATE INDEX dq_parent_btree ON ChildOf (parent) USING btree"),
    ("dq_parent_bitmap", "ChildOf", "CREATE INDEX dq_parent_bitmap ON ChildOf (parent) USING bitmap"),
    // Skip indexes (per block of 1024 ids; some worlds spread their ids over several blocks):
    // on the reference field and on value fields that paths and filters read.
    ("dq_parent_skip", "ChildOf", "CREATE INDEX dq_parent_skip ON ChildOf (parent) USING skip"),
    ("dq_level_skip", "Level", "CREATE INDEX dq_level_skip ON Level (value) USING skip"),
    ("dq_name_skip", "Name", "CREATE INDEX dq_name_skip ON Name USING skip"),
];

/// An index setup: its label, and the component of its one index (`None`: no index, or all).
#[derive(Clone, Copy)]
struct Setup {
    label: &'static str,
    component: Option<&'static str>,
}

impl Setup {
    /// Whether a query can be affected by this setup's index.
    fn concerns(&self, text: &str) -> bool {
        self.component.is_none_or(|c| text.contains(c))
    }
}

// -------------------------------------------------------------------------------------------------
// Configuration and reporting

struct Config {
    seeds: Vec<u64>,
    per_world: usize,
}

fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn config(test: &str, worlds: usize, per_world: usize) -> Config {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| parse_u64(&v));
    let per_world = env("DIFF_QUERIES").map_or(per_world, |n| n as usize);
    if let Some(seed) = env("DIFF_SEED") {
        return Config { seeds: vec![seed], per_world };
    }
    let worlds = env("DIFF_WORLDS").map_or(worlds, |n| n as usize);
    let salt = test.bytes().fold(env("DIFF_BASE").unwrap_or(0), |h, b| mix(h, b as u64));
    Config { seeds: (0..worlds as u64).map(|i| mix(salt, i)).collect(), per_world }
}

/// What a run did, and what went wrong.
struct Report {
    test: &'static str,
    started: Instant,
    failures: Vec<String>,
    failed: usize,
    failing_worlds: BTreeSet<u64>,
    /// Compared cases, by shape.
    shapes: BTreeMap<&'static str, usize>,
    /// Cases compared under each index setup.
    setups: BTreeMap<String, usize>,
    /// Rows-expected cases whose answer had at least one row.
    non_empty: usize,
    /// Cases skipped because an int overflowed (the engine may refuse those).
    skipped: usize,
    /// Compared cases that follow references (paths, hierarchy functions).
    relational: usize,
    /// Per skip index, sampled cases whose plan (EXPLAIN) uses it: a setup whose index is
    /// never chosen compares nothing the no-index run did not.
    used: BTreeMap<&'static str, usize>,
    mutations: BTreeMap<&'static str, (usize, usize)>,
}

/// How many failures are printed in full (`DIFF_REPORT=n` for more).
fn max_reported() -> usize {
    std::env::var("DIFF_REPORT").ok().and_then(|v| parse_u64(&v)).map_or(25, |n| n as usize)
}

impl Report {
    fn new(test: &'static str) -> Report {
        Report {
            test,
            started: Instant::now(),
            failures: Vec::new(),
            failed: 0,
            failing_worlds: BTreeSet::new(),
            shapes: BTreeMap::new(),
            setups: BTreeMap::new(),
            non_empty: 0,
            skipped: 0,
            relational: 0,
            used: BTreeMap::new(),
            mutations: BTreeMap::new(),
        }
    }

    fn fail(&mut self, seed: u64, model: Option<&Model>, what: String) {
        self.failed += 1;
        let first_of_world = self.failing_worlds.insert(seed);
        if self.failures.len() >= max_reported() {
            return;
        }
        let mut msg = format!(
            "--- [{}] world seed {seed:#x}   (rerun: DIFF_SEED={seed:#x} cargo test -p ecsdb --test query_differential {})\n",
            self.test, self.test
        );
        if let (true, Some(m)) = (first_of_world, model) {
            let dump = m.dump();
            let lines: Vec<&str> = dump.lines().collect();
            msg += &format!("world: {}\n", m.summary());
            for l in lines.iter().take(150) {
                msg += l;
                msg.push('\n');
            }
            if lines.len() > 150 {
                msg += &format!("  … {} more entities\n", lines.len() - 150);
            }
        }
        msg += &what;
        self.failures.push(msg);
    }

    fn finish(self) {
        let total: usize = self.shapes.values().sum();
        let mut summary = format!(
            "[{}] {total} cases compared in {:.1}s over {} index setups ({} with rows, {} following references, {} skipped for int overflow)\n  shapes: {:?}\n  setups: {:?}\n",
            self.test,
            self.started.elapsed().as_secs_f64(),
            self.setups.len(),
            self.non_empty,
            self.relational,
            self.skipped,
            self.shapes,
            self.setups,
        );
        if !self.used.is_empty() {
            summary += &format!("  sampled plans using each skip index: {:?}\n", self.used);
        }
        if !self.mutations.is_empty() {
            summary += &format!("  mutations (ok, error): {:?}\n", self.mutations);
        }
        eprintln!("{summary}");
        // A run that compared nothing (a generator or a setup gone wrong) proves nothing.
        assert!(total > 0, "{summary}no case was compared");
        if self.failed > 0 {
            panic!(
                "{summary}{} failures in {} worlds; the first {}:\n\n{}",
                self.failed,
                self.failing_worlds.len(),
                self.failures.len(),
                self.failures.join("\n\n")
            );
        }
    }
}

// -------------------------------------------------------------------------------------------------
// Running one case

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// Runs `f`, turning a panic into an `Err` with its message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| format!("the engine PANICKED: {}", panic_message(p)))
}

/// How a query reaches the engine.
#[derive(Clone, Copy, Debug)]
enum Api {
    Execute,
    Query,
    Prepared,
    /// Prepared, rows streamed through `query_each` and collected here.
    Streamed,
}

fn run_engine(db: &mut Database, case: &Case, api: Api) -> Result<Result<ResultSet, Error>, String> {
    let (text, params) = (&case.text, case.bound());
    if std::env::var_os("DIFF_PRINT").is_some() {
        eprintln!("{api:?}: {text}   {:?}", case.params);
    }
    guarded(|| match api {
        Api::Execute => db.execute(text, &params),
        Api::Query => db.query(text, &params),
        Api::Prepared => db.prepare(text).and_then(|mut p| p.query(db, &params)),
        Api::Streamed => db.prepare(text).and_then(|mut p| {
            let mut rows = Vec::new();
            let n = p.query_each(db, &params, |r| rows.push(r.to_vec()))?;
            assert_eq!(n, rows.len(), "query_each's count");
            Ok(ResultSet { columns: p.columns().to_vec(), rows })
        }),
    })
}

enum Outcome {
    Pass { rows: usize },
    Skip,
    Fail(String),
}

/// What the reference says about a rows-expected case.
fn expected(model: &Model, case: &Case) -> Result<reference::Expected, Outcome> {
    let stmt = parse_statement(&case.text).map_err(|e| {
        Outcome::Fail(format!("the parser rejects a query the generator considers valid:\n{}", e.render(&case.text)))
    })?;
    let Statement::Select(sel) = stmt else {
        return Err(Outcome::Fail("parsed as something other than a SELECT".into()));
    };
    match Reference::with_params(model, &case.params).select(&sel, &case.text) {
        Ok(exp) => Ok(exp),
        Err(RefError::Overflow) => Err(Outcome::Skip),
        Err(other) => Err(Outcome::Fail(format!(
            "TEST BUG (reference or generator, not the engine): the reference cannot evaluate this query: {other:?}"
        ))),
    }
}

/// Compares the engine's answer with what is expected.
fn judge(model: &Model, case: &Case, got: Result<Result<ResultSet, Error>, String>) -> Outcome {
    let got = match got {
        Ok(r) => r,
        Err(panic) => return Outcome::Fail(panic),
    };
    match &case.expect {
        Expect::Error(kind) => match got {
            Err(e) if kind.is_none_or(|k| e.kind == k) => Outcome::Pass { rows: 0 },
            Err(e) => Outcome::Fail(format!(
                "expected a {} error, got a {} error: {}",
                kind.map_or("(any)", |k| k.as_str()),
                e.kind.as_str(),
                e.render(&case.text)
            )),
            Ok(rs) => Outcome::Fail(format!(
                "expected a {} error, the engine answered:\n{}",
                kind.map_or("(any)", |k| k.as_str()),
                describe_got(&rs.columns, &rs.rows)
            )),
        },
        Expect::Rows => {
            let exp = match expected(model, case) {
                Ok(exp) => exp,
                Err(outcome) => return outcome,
            };
            match got {
                Err(e) => Outcome::Fail(format!(
                    "the engine failed where rows were expected: {} error: {}\n{}",
                    e.kind.as_str(),
                    e.render(&case.text),
                    describe_expected(&exp)
                )),
                Ok(rs) => match compare(&exp, &rs.columns, &rs.rows) {
                    Ok(()) => Outcome::Pass { rows: rs.len() },
                    Err(why) => Outcome::Fail(format!(
                        "MISMATCH: {why}\n{}{}",
                        describe_expected(&exp),
                        describe_got(&rs.columns, &rs.rows)
                    )),
                },
            }
        }
    }
}

/// Whether a query follows references: a hierarchy function, or a path through one of the
/// entity fields.
fn follows_references(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ["depth(", "root(", "descendant_of(", ".parent.", ".to.", ".who."].iter().any(|p| lower.contains(p))
}

fn record(report: &mut Report, seed: u64, model: &Model, case: &Case, where_: &str, setup: &str, outcome: Outcome) {
    *report.setups.entry(setup.to_string()).or_default() += 1;
    if !matches!(outcome, Outcome::Skip) && follows_references(&case.text) {
        report.relational += 1;
    }
    match outcome {
        Outcome::Pass { rows } => {
            *report.shapes.entry(case.shape).or_default() += 1;
            if rows > 0 {
                report.non_empty += 1;
            }
        }
        Outcome::Skip => report.skipped += 1,
        Outcome::Fail(why) => {
            *report.shapes.entry(case.shape).or_default() += 1;
            report.fail(seed, Some(model), format!("{where_}, index setup: {setup}\nquery: {}\n{why}", case.text));
        }
    }
}

/// `SELECT * FROM ?C, …` over every component: the whole world, compared entity by entity.
fn state_case(model: &Model) -> Case {
    let terms: Vec<String> = model.schema.comps.iter().map(|c| format!("?{}", c.name)).collect();
    Case::new(format!("SELECT * FROM {}", terms.join(", ")), Expect::Rows, "whole world")
}

// -------------------------------------------------------------------------------------------------
// Index setups

/// Runs `run` with no secondary index, then with each index of [`INDEXES`] (one at a time),
/// then with all of them at once. An index that cannot be created is a failure.
fn with_each_index(
    db: &mut Database,
    seed: u64,
    report: &mut Report,
    mut run: impl FnMut(&mut Database, Setup, &mut Report),
) {
    run(db, Setup { label: "none", component: None }, report);
    // Worlds here are small, where the cost model would mostly scan: make the planner take
    // every index that applies, so the index paths are what gets compared.
    db.set_plan_options(PlanOptions { prefer_indexes: true });
    for (name, component, create) in INDEXES {
        if let Err(why) = create_index(db, name, create) {
            report.fail(seed, None, why);
            return;
        }
        run(db, Setup { label: name, component: Some(component) }, report);
        if let Err(why) = drop_index(db, name) {
            report.fail(seed, None, why);
            return;
        }
    }
    for (name, _, create) in INDEXES {
        if let Err(why) = create_index(db, name, create) {
            report.fail(seed, None, why);
            return;
        }
    }
    run(db, Setup { label: "all indexes", component: None }, report);
    db.set_plan_options(PlanOptions::default());
}

/// Whether the plan of `case` names index `name` (a case the engine refuses uses none).
fn uses_index(db: &mut Database, case: &Case, name: &str) -> bool {
    let explain = format!("EXPLAIN {}", case.text);
    let Ok(Ok(rs)) = guarded(|| db.execute(&explain, case.bound())) else { return false };
    rs.rows.iter().flatten().any(|v| matches!(v, Value::Str(line) if line.contains(name)))
}

/// Creates one of [`INDEXES`]; any error (`Unsupported` included) is the test's failure.
fn create_index(db: &mut Database, name: &str, create: &str) -> Result<(), String> {
    match guarded(|| db.execute(create, ()))? {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("creating index {name} failed: {}", e.render(create))),
    }
}

fn drop_index(db: &mut Database, name: &str) -> Result<(), String> {
    let text = format!("DROP INDEX {name}");
    match guarded(|| db.execute(&text, ()))? {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("`{text}` failed: {}", e.render(&text))),
    }
}

// -------------------------------------------------------------------------------------------------
// The SELECT differential

fn select_world(seed: u64, storage: Storage, queries: usize, report: &mut Report) {
    let mut w = match world_gen::build_with(seed, storage) {
        Ok(w) => w,
        Err(why) => return report.fail(seed, None, format!("building the world failed: {why}")),
    };
    let mut cases = vec![state_case(&w.model)];
    for i in 0..queries {
        let mut g = Gen::new(Rng::new(mix(seed, i as u64 + 1)), &w.model, &w.dead);
        // One in six shaped for the index paths (ordered walks, intersections, unions), one
        // in six around references between entities.
        cases.push(match i % 6 {
            5 => g.index_query(),
            2 => g.relation_query(),
            _ => g.query(),
        });
    }
    let TestWorld { db, model, .. } = &mut w;
    let model = &*model;
    with_each_index(db, seed, report, |db, setup, report| {
        for (i, case) in cases.iter().enumerate() {
            if !setup.concerns(&case.text) {
                continue;
            }
            let api = [Api::Execute, Api::Query, Api::Prepared, Api::Streamed][i % 4];
            // EXPLAIN costs about as much as the run: only the index-shaped cases (`i % 6 ==
            // 0`), for the skip indexes only (the kind the planner declines most often; their
            // use is checked below).
            if setup.label.ends_with("_skip") && i % 6 == 0 && uses_index(db, case, setup.label) {
                *report.used.entry(setup.label).or_default() += 1;
            }
            let got = run_engine(db, case, api);
            let outcome = judge(model, case, got);
            let at = if i == 0 { "whole-world check".to_string() } else { format!("query #{} via {api:?}", i - 1) };
            record(report, seed, model, case, &at, setup.label, outcome);
        }
    });
}

#[test]
fn differential_select() {
    let cfg = config("differential_select", 40, 100);
    let mut report = Report::new("differential_select");
    for &seed in &cfg.seeds {
        select_world(seed, Storage::Mixed, cfg.per_world, &mut report);
    }
    // Over many worlds, every index must have answered some cases (one world alone, as
    // DIFF_SEED reruns, may not name every indexed component), and the planner must have
    // taken each skip index for some (it declines more predicates than the other kinds).
    if cfg.seeds.len() > 1 {
        for (name, _, _) in INDEXES {
            if report.setups.get(name).is_none_or(|&n| n == 0) {
                report.fail(0, None, format!("no case was compared with index {name}"));
            }
        }
    }
    if cfg.seeds.len() >= 20 {
        for (name, _, _) in INDEXES.iter().filter(|(name, _, _)| name.ends_with("_skip")) {
            if report.used.get(name).is_none_or(|&n| n == 0) {
                report.fail(0, None, format!("no plan used index {name}"));
            }
        }
    }
    report.finish();
}

// -------------------------------------------------------------------------------------------------
// The mutation differential

fn error_kind(e: &RefError) -> Option<ErrorKind> {
    match e {
        RefError::Unknown("component", _) => Some(ErrorKind::UnknownComponent),
        RefError::Unknown("field", _) => Some(ErrorKind::UnknownField),
        RefError::Unknown(_, _) => Some(ErrorKind::UnknownFunction),
        RefError::Stale(_) => Some(ErrorKind::StaleEntity),
        RefError::Store(_) => Some(ErrorKind::Type),
        RefError::Constraint(_) => Some(ErrorKind::Constraint),
        RefError::Overflow | RefError::Invalid(_) => None,
    }
}

fn statement_kind(text: &str) -> &'static str {
    let first = text.split_whitespace().next().unwrap_or("");
    match first {
        "SPAWN" => "spawn",
        "DESPAWN" => "despawn",
        "ADD" => "add",
        "REMOVE" => "remove",
        "UPDATE" => "update",
        _ => "other",
    }
}

/// Applies one mutation to the database and the model. `Err` when they disagree (and from
/// then on may differ, so the world is abandoned).
fn apply_mutation(w: &mut TestWorld, case: &Case, report: &mut Report) -> Result<(), String> {
    let text = case.text.as_str();
    let stmt =
        parse_statement(text).map_err(|e| format!("the parser rejects a generated mutation:\n{}", e.render(text)))?;
    let effect = mutate::effect_with(&w.model, &stmt, &case.params);
    let got = guarded(|| w.db.execute(text, case.bound()))?;
    let tally =
        report.mutations.entry(if case.shape == "mutation" { statement_kind(text) } else { case.shape }).or_default();
    match (effect, got) {
        (Ok(Effect::Spawn(values)), Ok(rs)) => {
            tally.0 += 1;
            match (rs.columns.as_slice(), rs.rows.as_slice()) {
                ([c], [row]) if c == "entity" => match row.as_slice() {
                    [Value::Entity(e)] if !w.model.is_alive(*e) => {
                        w.model.entities.insert(*e, values.into_iter().collect());
                        Ok(())
                    }
                    other => Err(format!("SPAWN returned {other:?}: not a new entity")),
                },
                _ => Err(format!("SPAWN returned {}", describe_got(&rs.columns, &rs.rows))),
            }
        }
        (Ok(Effect::Count(n, next)), Ok(rs)) => {
            tally.0 += 1;
            if rs.columns != ["count"] || rs.rows != [[Value::Int(n as i64)]] {
                return Err(format!("expected count {n}, {}", describe_got(&rs.columns, &rs.rows)));
            }
            for e in w.model.entities.keys() {
                if !next.entities.contains_key(e) {
                    w.dead.push(*e);
                }
            }
            w.model = *next;
            Ok(())
        }
        (Err(RefError::Invalid(why)), _) => Err(format!("TEST BUG (reference or generator): {why}")),
        (Err(expected), Err(e)) => {
            tally.1 += 1;
            match error_kind(&expected) {
                Some(k) if k != e.kind => Err(format!(
                    "expected a {} error ({expected:?}), got a {} error: {}",
                    k.as_str(),
                    e.kind.as_str(),
                    e.render(text)
                )),
                _ => Ok(()),
            }
        }
        (Err(expected), Ok(rs)) => Err(format!(
            "expected an error ({expected:?}), the engine succeeded: {}",
            describe_got(&rs.columns, &rs.rows)
        )),
        (Ok(_), Err(e)) => Err(format!("the engine failed where the statement should succeed: {}", e.render(text))),
    }
}

/// The indexes a world of the write tests keeps for its whole life, so index maintenance
/// under every kind of write is exercised: one of [`INDEXES`] (round robin, or none), and in
/// two worlds in five the skip indexes on `ChildOf.parent` and `Level.value` as well. Returns
/// the setup's label.
fn world_indexes(seed: u64, db: &mut Database) -> Result<String, String> {
    let pick = (seed % (INDEXES.len() as u64 + 1)) as usize;
    let mut chosen: Vec<(&str, &str)> = Vec::new();
    if pick > 0 {
        chosen.push((INDEXES[pick - 1].0, INDEXES[pick - 1].2));
    }
    if mix(seed, 0x5c1b) % 5 < 2 {
        for (name, _, create) in INDEXES.iter().filter(|(n, _, _)| ["dq_parent_skip", "dq_level_skip"].contains(n)) {
            if !chosen.iter().any(|(n, _)| n == name) {
                chosen.push((name, create));
            }
        }
    }
    for (name, create) in &chosen {
        create_index(db, name, create)?;
    }
    if chosen.is_empty() {
        return Ok("none".into());
    }
    db.set_plan_options(PlanOptions { prefer_indexes: true });
    Ok(chosen.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(" + "))
}

fn reparent_shape(aim: reparent::Aim) -> &'static str {
    match aim {
        reparent::Aim::Move => "re-parent: move",
        reparent::Aim::Cycle => "re-parent: loop",
        reparent::Aim::Stale => "re-parent: dead target",
        reparent::Aim::Detach => "re-parent: detach",
    }
}

fn mutation_world(seed: u64, storage: Storage, steps: usize, report: &mut Report) {
    let mut w = match world_gen::build_with(seed, storage) {
        Ok(w) => w,
        Err(why) => return report.fail(seed, None, format!("building the world failed: {why}")),
    };
    let setup = match world_indexes(seed, &mut w.db) {
        Ok(label) => label,
        Err(why) => return report.fail(seed, None, why),
    };
    let setup = setup.as_str();
    // Prepared once, run after every step: they must pick up new tables and data.
    let mut prepared: Vec<(Case, Prepared)> = Vec::new();
    for i in 0..3u64 {
        let mut g = Gen::new(Rng::new(mix(seed, 500_000 + i)), &w.model, &w.dead);
        let case = g.plain_query();
        match guarded(|| w.db.prepare(&case.text)) {
            Ok(Ok(p)) => prepared.push((case, p)),
            Ok(Err(e)) => record(report, seed, &w.model, &case, "prepare", setup, judge(&w.model, &case, Ok(Err(e)))),
            Err(panic) => record(report, seed, &w.model, &case, "prepare", setup, Outcome::Fail(panic)),
        }
    }
    let mut history: Vec<String> = Vec::new();
    for step in 0..steps {
        let mut g = Gen::new(Rng::new(mix(seed, 1_000_000 + step as u64)), &w.model, &w.dead);
        // One step in four moves a subtree (or tries to: loops, dead targets).
        let case = if step % 4 == 3 {
            let ((text, params), aim) = reparent::reparent(&mut g, &w.model, &w.dead);
            Case { params, ..Case::new(text, Expect::Rows, reparent_shape(aim)) }
        } else {
            Case::new(mutate::mutation(&mut g, &w.model, &w.dead), Expect::Rows, "mutation")
        };
        let text = case.text.clone();
        let before = w.model.clone();
        history.push(if case.params.is_empty() { text.clone() } else { format!("{text}   {:?}", case.params) });
        if let Err(why) = apply_mutation(&mut w, &case, report) {
            let at = format!("step {step}: mutation\n{why}\nstatements so far:\n  {}", history.join("\n  "));
            record(report, seed, &before, &case, &at, setup, Outcome::Fail(String::new()));
            return;
        }
        let mut cases = vec![(state_case(&w.model), Api::Execute)];
        for (k, api) in [Api::Query, Api::Prepared].into_iter().enumerate() {
            let mut g = Gen::new(Rng::new(mix(seed, 2_000_000 + 2 * step as u64 + k as u64)), &w.model, &w.dead);
            // Now and then a query about references: policies and writes change the links.
            cases.push((if k == 1 && step % 3 == 0 { g.relation_query() } else { g.query() }, api));
        }
        let mut failed = false;
        for (case, api) in cases {
            let got = run_engine(&mut w.db, &case, api);
            let outcome = judge(&w.model, &case, got);
            failed |= matches!(outcome, Outcome::Fail(_));
            let at = format!("after step {step} (last statement: {text}), via {api:?}");
            record(report, seed, &w.model, &case, &at, setup, outcome);
        }
        for (case, p) in &mut prepared {
            let got = guarded(|| p.query(&w.db, case.bound()));
            let outcome = judge(&w.model, case, got);
            failed |= matches!(outcome, Outcome::Fail(_));
            let at = format!("prepared statement re-run after step {step} (last statement: {text})");
            let case = Case { shape: "prepared", ..case.clone() };
            record(report, seed, &w.model, &case, &at, setup, outcome);
        }
        if failed {
            report.fail(seed, None, format!("statements up to the failure:\n  {}", history.join("\n  ")));
            return;
        }
    }
}

#[test]
fn differential_mutations() {
    let cfg = config("differential_mutations", 12, 40);
    let mut report = Report::new("differential_mutations");
    for &seed in &cfg.seeds {
        mutation_world(seed, Storage::Mixed, cfg.per_world, &mut report);
    }
    report.finish();
}

/// Every world's storage for the sparse runs: every component created `STORAGE SPARSE`, or
/// moved there by `ALTER COMPONENT … SET STORAGE SPARSE` once built (alternately).
fn sparse_storage(i: usize) -> Storage {
    if i.is_multiple_of(2) { Storage::AllSparse } else { Storage::MovedToSparse }
}

#[test]
fn differential_select_sparse() {
    let cfg = config("differential_select_sparse", 12, 100);
    let mut report = Report::new("differential_select_sparse");
    for (i, &seed) in cfg.seeds.iter().enumerate() {
        select_world(seed, sparse_storage(i), cfg.per_world, &mut report);
    }
    report.finish();
}

#[test]
fn differential_mutations_sparse() {
    let cfg = config("differential_mutations_sparse", 6, 40);
    let mut report = Report::new("differential_mutations_sparse");
    for (i, &seed) in cfg.seeds.iter().enumerate() {
        mutation_world(seed, sparse_storage(i), cfg.per_world, &mut report);
    }
    report.finish();
}

#[test]
fn differential_systems() {
    let cfg = config("differential_systems", 24, 4);
    let mut report = Report::new("differential_systems");
    for &seed in &cfg.seeds {
        systems::systems_world(seed, cfg.per_world, &mut report);
    }
    report.finish();
}
