//! Systems: mutations run as text systems (`CREATE SYSTEM … AS …`, `BEGIN … END`) by `TICK`,
//! against a model that runs them one by one, as `docs/query-language.md` ("Systems") says the
//! scheduler must behave:
//! - phases in order; in a phase, systems in registration order, each block's statements in
//!   order; a failing statement changes nothing and ends its block, other systems go on;
//! - UPDATE writes at once (later systems and statements see it); SPAWN, DESPAWN, ADD and
//!   REMOVE pick their targets and compute their values when they run, and are applied at the
//!   end of the phase in system, then statement order: targets that died meanwhile are
//!   skipped, references are checked against the world being written (a stale target, an
//!   `ACYCLIC` loop: that statement changes nothing), DESPAWN applies `ON DELETE` then;
//! - SPAWN, ADD and UPDATE check the references they write when they run too, so such a
//!   refusal ends the block then (and a write that passed may still be refused when applied);
//! - TICK answers one row per failing statement, in the order they failed (those found at
//!   the phase's end after those found when the systems ran), each error as
//!   `kind error: message`.
//!
//! The statements aim at references: re-parenting (`reparent.rs`), despawning parents, new
//! children of live and dead entities, removing links, reading `depth` / paths after other
//! systems' UPDATEs, plus random mutations. SPAWN runs only in the last phase: the model
//! cannot know a new entity's id until TICK returns, and a later phase could tell ids apart.

use std::collections::{BTreeMap, BTreeSet};

use ecsdb::query::parse::{Statement, parse_statement};
use ecsdb::{Entity, Value};

use super::r#gen::{Case, Gen};
use super::model::{Fields, Model};
use super::mutate::{self, Effect};
use super::reference::{RefError, Reference};
use super::relations;
use super::reparent;
use super::rng::{Rng, mix};
use super::world_gen::{self, TestWorld};
use crate::{Api, Outcome, Report, error_kind, guarded, judge, record, run_engine, state_case};

/// Phases the generated systems use, in run order; SPAWN only in the last.
const PHASES: [&str; 2] = ["PreUpdate", "OnUpdate"];

/// Placeholder ids for entities the model spawns during a tick, far above any real one.
const PLACEHOLDER: u32 = 1 << 30;

/// One system as created.
struct System {
    name: String,
    phase: usize,
    statements: Vec<Statement>,
    text: String,
}

/// A statement's change, computed when it ran, applied at the end of its phase.
enum Staged {
    Spawn(Vec<(String, Fields)>),
    Despawn(Vec<Entity>),
    Add(Vec<Entity>, Vec<(String, Fields)>),
    Remove(Vec<Entity>, Vec<String>),
}

/// A failure as TICK reports it.
#[derive(Debug, PartialEq)]
struct Failure {
    system: String,
    /// The error kind, as the language names it.
    kind: &'static str,
    /// Found at the phase's end (applying a staged statement).
    at_end: bool,
}

/// Why the model has no answer for a tick.
enum Unsure {
    /// An int overflowed: the engine may refuse it (the world is left).
    Overflow,
    /// A bug in the test.
    TestBug(String),
}

fn kind(e: &RefError) -> Result<&'static str, Unsure> {
    match e {
        RefError::Overflow => Err(Unsure::Overflow),
        RefError::Invalid(why) => Err(Unsure::TestBug(why.clone())),
        other => error_kind(other).map(|k| k.as_str()).ok_or_else(|| Unsure::TestBug(format!("{other:?}"))),
    }
}

/// Runs one statement of a system: an UPDATE changes the model, the others are staged.
fn run_statement(
    model: &mut Model,
    stmt: &Statement,
    staged: &mut Vec<(usize, Staged)>,
    sys: usize,
) -> Result<(), RefError> {
    let r = Reference::new(model);
    let s = match stmt {
        Statement::Update(_) => {
            let Effect::Count(_, next) = mutate::effect(model, stmt)? else { unreachable!("an UPDATE") };
            *model = *next;
            return Ok(());
        }
        Statement::Spawn(_) => match mutate::effect(model, stmt)? {
            Effect::Spawn(values) => Staged::Spawn(values),
            Effect::Count(..) => unreachable!("a SPAWN"),
        },
        Statement::Despawn(d) => Staged::Despawn(mutate::targets(model, &r, &d.target, &[], &[])?),
        Statement::Add(a) => {
            // Every check of the ADD run alone (names, target, values, then the references it
            // writes, on its final state): a refusal is the statement's, ending its block.
            mutate::effect(model, stmt)?;
            let ts = mutate::targets(model, &r, &a.target, &[], &[])?;
            if ts.is_empty() {
                return Ok(());
            }
            Staged::Add(ts, mutate::build_values(model, &r, &a.components)?)
        }
        Statement::Remove(rm) => {
            let names: Vec<String> = rm.components.iter().map(|c| c.name.clone()).collect();
            Staged::Remove(mutate::targets(model, &r, &rm.target, &names, &[])?, names)
        }
        other => return Err(RefError::Invalid(format!("not a system statement: {other:?}"))),
    };
    staged.push((sys, s));
    Ok(())
}

/// Applies a staged change at the end of the phase.
fn apply(model: &mut Model, s: Staged, spawned: &mut u32) -> Result<(), RefError> {
    let alive =
        |model: &Model, ts: Vec<Entity>| -> Vec<Entity> { ts.into_iter().filter(|e| model.is_alive(*e)).collect() };
    match s {
        Staged::Spawn(values) => {
            relations::check_writes(model, model, &mutate::writes_of(None, &values))?;
            let e = Entity::from_parts(PLACEHOLDER + *spawned, 0);
            *spawned += 1;
            model.entities.insert(e, values.into_iter().collect());
        }
        Staged::Despawn(ts) => {
            let ts = alive(model, ts);
            *model = relations::despawn(model, &ts)?.0;
        }
        Staged::Add(ts, values) => {
            let ts = alive(model, ts);
            let mut next = model.clone();
            let mut writes = Vec::new();
            for e in &ts {
                let entry = next.entities.get_mut(e).expect("alive");
                for (c, fields) in &values {
                    entry.insert(c.clone(), fields.clone());
                }
                writes.extend(mutate::writes_of(Some(*e), &values));
            }
            relations::check_writes(model, &next, &writes)?;
            *model = next;
        }
        Staged::Remove(ts, names) => {
            for e in alive(model, ts) {
                let entry = model.entities.get_mut(&e).expect("alive");
                for c in &names {
                    entry.remove(c);
                }
            }
        }
    }
    Ok(())
}

/// One tick of `systems` on the model: the failures TICK must report.
fn tick(
    model: &mut Model,
    systems: &[System],
    spawned: &mut u32,
    tally: &mut BTreeMap<&'static str, usize>,
) -> Result<Vec<Failure>, Unsure> {
    let mut failures = Vec::new();
    for phase in 0..PHASES.len() {
        let mut staged = Vec::new();
        for (i, s) in systems.iter().enumerate().filter(|(_, s)| s.phase == phase) {
            for stmt in &s.statements {
                if let Err(e) = run_statement(model, stmt, &mut staged, i) {
                    failures.push(Failure { system: s.name.clone(), kind: kind(&e)?, at_end: false });
                    break;
                }
            }
        }
        for (i, s) in staged {
            if let Err(e) = apply(model, s, spawned) {
                let kind = kind(&e)?;
                *tally.entry(kind).or_default() += 1;
                failures.push(Failure { system: systems[i].name.clone(), kind, at_end: true });
            }
        }
    }
    Ok(failures)
}

// -------------------------------------------------------------------------------------------------
// Generating systems

/// The entities a round's statements mostly aim at (a parent, part of its subtree, a few
/// others), so that systems of one tick meet: a node re-parented under one another system
/// despawns, a child spawned under a parent despawned earlier in the phase, …
fn focus(rng: &mut Rng, model: &Model) -> Vec<Entity> {
    let live: Vec<Entity> = model.entities.keys().copied().collect();
    if live.is_empty() {
        return Vec::new();
    }
    let parents: Vec<Entity> = live
        .iter()
        .copied()
        .filter(|p| live.iter().any(|e| relations::live_target(model, *e, "ChildOf", "parent") == Some(*p)))
        .collect();
    let top = if parents.is_empty() { *rng.pick(&live) } else { *rng.pick(&parents) };
    let mut out = vec![top];
    for e in &live {
        if relations::chain(model, *e, "ChildOf", "parent").0.contains(&top) && rng.chance(0.5) {
            out.push(*e);
        }
    }
    for _ in 0..2 {
        out.push(*rng.pick(&live));
    }
    out
}

/// An entity for a statement: the focus's parent often (one system despawns it, another
/// writes references to it), the rest of the focus, any live one, now and then a dead one.
fn entity(rng: &mut Rng, focus: &[Entity], model: &Model, dead: &[Entity]) -> String {
    let live: Vec<Entity> = model.entities.keys().copied().collect();
    match rng.weighted(&[4, 4, 3, 1]) {
        0 if !focus.is_empty() => focus[0].to_string(),
        1 if !focus.is_empty() => rng.pick(focus).to_string(),
        3 if !dead.is_empty() => rng.pick(dead).to_string(),
        _ if !live.is_empty() => rng.pick(&live).to_string(),
        _ => "0v0".into(),
    }
}

/// One statement of a system body (SPAWN only where `spawn_ok`).
fn statement(g: &mut Gen, rng: &mut Rng, model: &Model, dead: &[Entity], focus: &[Entity], spawn_ok: bool) -> String {
    let (c, f) = if rng.chance(0.8) { ("ChildOf", "parent") } else { ("Link", "to") };
    let mut x = || entity(rng, focus, model, dead);
    let (a, b) = (x(), x());
    match rng.weighted(&[28, 16, 12, 8, 12, 6, 18]) {
        0 => reparent::reparent(g, model, dead).0.0,
        // Despawning parents: ON DELETE at the phase's end, RESTRICT refusals, stale targets.
        1 => match rng.below(4) {
            0 | 1 => format!("DESPAWN {a}"),
            2 => format!("DESPAWN WHERE {c}.{f} = {a}"),
            _ => format!("DESPAWN WHERE descendant_of({c}.{f}, {a}, 1) AND Level.value > {}", rng.range(0, 20)),
        },
        2 if spawn_ok => {
            let more = if c == "ChildOf" && rng.chance(0.3) { format!(", Link {{to: {b}}}") } else { String::new() };
            let name = *rng.pick(&["kid", "zig", ""]);
            format!("SPAWN {c} {{{f}: {a}}}, Name {{value: {}}}{more}", g.str_text(name))
        }
        3 => match rng.below(2) {
            0 => format!("REMOVE {c} FROM {a}"),
            _ => format!("REMOVE {c} WHERE {c}.{f} = {a}"),
        },
        // Reading the hierarchy after other systems' UPDATEs (and in the same batch).
        4 => match rng.below(3) {
            0 => format!("UPDATE Level SET value = depth({c}.{f}) WHERE depth({c}.{f}) IS NOT NULL"),
            1 => format!("UPDATE Name SET value = {c}.{f}.Name.value || '+' WHERE {c}.{f}.Name.value IS NOT NULL"),
            _ => format!("UPDATE Level SET value = Level.value + 1 WHERE descendant_of({c}.{f}, {a})"),
        },
        // Re-parenting several entities by ADD (overwriting the component).
        5 => format!("ADD {c} {{{f}: {a}}} WHERE descendant_of({c}.{f}, {b}, 1) OR entity = {b}"),
        _ => loop {
            let s = mutate::mutation(g, model, dead);
            if spawn_ok || !s.starts_with("SPAWN") {
                break s;
            }
        },
    }
}

/// A system body: one to three statements (and now and then a bare SPAWN), parsed.
fn body(
    g: &mut Gen,
    rng: &mut Rng,
    model: &Model,
    dead: &[Entity],
    focus: &[Entity],
    spawn_ok: bool,
) -> Result<Vec<(String, Statement)>, String> {
    let n = *rng.pick(&[1, 1, 1, 2, 2, 3]);
    let mut out = Vec::new();
    for _ in 0..n {
        let text = statement(g, rng, model, dead, focus, spawn_ok);
        let stmt = parse_statement(&text)
            .map_err(|e| format!("TEST BUG: the parser rejects a generated statement:\n{}", e.render(&text)))?;
        out.push((text, stmt));
    }
    // Now and then a bare SPAWN last, which may end a block without its `;` (`… SPAWN END`).
    if spawn_ok && rng.chance(0.15) {
        out.push(("SPAWN".into(), parse_statement("SPAWN").expect("SPAWN parses")));
    }
    Ok(out)
}

// -------------------------------------------------------------------------------------------------
// Comparing

/// Checks TICK's failure rows against the model's, in order (`tick`: the tick's `$tick`).
fn check_failures(expected: &[Failure], got: &ecsdb::query::ResultSet, tick: u64) -> Result<(), String> {
    let show = || format!("expected failures: {expected:?}\nTICK answered: {:?}", got.rows);
    if got.columns != ["tick", "system", "error"] || got.rows.len() != expected.len() {
        return Err(format!("TICK's failures differ (columns {:?})\n{}", got.columns, show()));
    }
    for (f, row) in expected.iter().zip(&got.rows) {
        let (Some(Value::Str(system)), Some(Value::Str(error))) = (row.get(1), row.get(2)) else {
            return Err(format!("a failure row is not (tick, system, error)\n{}", show()));
        };
        // Every failure, found when its statement ran or at the phase's end, is
        // `kind error: message`.
        let same_kind = error.split_once(" error: ").is_some_and(|(k, message)| k == f.kind && !message.is_empty());
        if *system != f.system || !same_kind || row[0] != Value::Int(tick as i64) {
            return Err(format!("TICK's failures differ\n{}", show()));
        }
    }
    Ok(())
}

/// Gives the entities the model spawned during a tick (placeholder ids) the ids the engine
/// gave them, matching them by their components (any two that match alike are alike: no
/// statement of the tick could name them).
fn adopt_spawned(db: &mut ecsdb::query::Database, model: &mut Model) -> Result<(), String> {
    let case = state_case(model);
    let Ok(Statement::Select(sel)) = parse_statement(&case.text) else {
        return Err("TEST BUG: the world query".into());
    };
    let exp = Reference::new(model).select(&sel, &case.text).map_err(|e| format!("TEST BUG: {e:?}"))?;
    let rs = guarded(|| db.query(&case.text, ()))?.map_err(|e| format!("the whole-world query failed: {e}"))?;
    if rs.columns != exp.columns {
        return Err(format!("the whole-world query's columns: {:?}, expected {:?}", rs.columns, exp.columns));
    }
    let id = |row: &[Value]| match row.first() {
        Some(Value::Entity(e)) => Some(*e),
        _ => None,
    };
    let mut wanted: Vec<(Entity, &[Value])> =
        exp.rows.iter().filter_map(|r| id(r).filter(|e| e.index() >= PLACEHOLDER).map(|e| (e, &r[1..]))).collect();
    let new: Vec<(Entity, &[Value])> =
        rs.rows.iter().filter_map(|r| id(r).filter(|e| !model.is_alive(*e)).map(|e| (e, &r[1..]))).collect();
    let listing = |xs: &[(Entity, &[Value])]| xs.iter().map(|(e, r)| format!("\n  {e}: {r:?}")).collect::<String>();
    let problem = format!("the model spawned:{}\nthe engine's new entities:{}", listing(&wanted), listing(&new));
    if wanted.len() != new.len() {
        return Err(format!("the tick spawned {} entities, the model {}\n{problem}", new.len(), wanted.len()));
    }
    for (e, row) in new {
        let at = wanted
            .iter()
            .position(|(_, w)| *w == row)
            .ok_or_else(|| format!("{e} matches no spawned entity\n{problem}"))?;
        let (p, _) = wanted.swap_remove(at);
        let comps = model.entities.remove(&p).expect("a placeholder");
        model.entities.insert(e, comps);
    }
    Ok(())
}

// -------------------------------------------------------------------------------------------------
// The test

/// One world: `rounds` times, replace the systems by one to three new ones and run two ticks,
/// comparing TICK's failures, the whole world and a few queries after each.
pub fn systems_world(seed: u64, rounds: usize, report: &mut Report) {
    let mut w = match world_gen::build(seed) {
        Ok(w) => w,
        Err(why) => return report.fail(seed, None, format!("building the world failed: {why}")),
    };
    let setup = match crate::world_indexes(seed, &mut w.db) {
        Ok(label) => label,
        Err(why) => return report.fail(seed, None, why),
    };
    let mut rng = Rng::new(mix(seed, 3_000_000));
    let mut history: Vec<String> = Vec::new();
    let mut systems: Vec<System> = Vec::new();
    let fail = |report: &mut Report, model: &Model, history: &[String], why: String| {
        report.fail(
            seed,
            Some(model),
            format!("index setup: {setup}\n{why}\nstatements so far:\n  {}", history.join("\n  ")),
        );
    };
    for round in 0..rounds {
        for s in systems.drain(..) {
            let text = format!("DROP SYSTEM {}", s.name);
            if let Err(e) = w.db.execute(&text, ()) {
                return fail(report, &w.model, &history, format!("`{text}` failed: {e}"));
            }
            history.push(text);
        }
        let focus = focus(&mut rng, &w.model);
        // In a third of the rounds the first system despawns the focus's parent, which the
        // others are likely to write references to: refused when they run (a later phase) or
        // when they are applied (the same phase).
        let despawner = !focus.is_empty() && rng.chance(0.35);
        for k in 0..rng.range(1, 3) as u64 + despawner as u64 {
            let phase = if rng.chance(0.3) { 0 } else { PHASES.len() - 1 };
            let mut g = Gen::new(Rng::new(mix(seed, 4_000_000 + 16 * round as u64 + k)), &w.model, &w.dead);
            g.allow_params = false;
            let stmts = if k == 0 && despawner {
                let text = format!("DESPAWN {}", focus[0]);
                vec![(text.clone(), parse_statement(&text).expect("DESPAWN e parses"))]
            } else {
                match body(&mut g, &mut rng, &w.model, &w.dead, &focus, phase == PHASES.len() - 1) {
                    Ok(b) => b,
                    Err(why) => return fail(report, &w.model, &history, why),
                }
            };
            let name = format!("s{round}_{k}");
            let texts: Vec<&str> = stmts.iter().map(|(t, _)| t.as_str()).collect();
            // (A bare SPAWN may end a block without its `;`: `BEGIN SPAWN END`.)
            let semicolon = rng.chance(0.5);
            let body = if texts.len() == 1 && rng.chance(0.8) {
                texts[0].to_string()
            } else {
                format!("BEGIN {}{} END", texts.join("; "), if semicolon { ";" } else { "" })
            };
            let in_phase = if PHASES[phase] == "OnUpdate" && rng.chance(0.5) {
                String::new()
            } else {
                format!(" IN PHASE {}", PHASES[phase])
            };
            let text = format!("CREATE SYSTEM {name}{in_phase} AS {body}");
            history.push(text.clone());
            let statements: Vec<Statement> = stmts.into_iter().map(|(_, s)| s).collect();
            match guarded(|| w.db.execute(&text, ())) {
                Err(panic) => return fail(report, &w.model, &history, panic),
                Ok(Ok(_)) => systems.push(System { name, phase, statements, text }),
                Ok(Err(e)) => {
                    // Refused when created: a name or a type no world could make right; the
                    // model must refuse one of its statements too.
                    let static_kind = ["unknown_component", "unknown_field", "type"].contains(&e.kind.as_str());
                    let refused = statements.iter().any(|s| mutate::effect(&w.model, s).is_err());
                    report.mutations.entry("system refused at CREATE").or_default().1 += 1;
                    if !static_kind || !refused {
                        return fail(report, &w.model, &history, format!("CREATE SYSTEM failed: {}", e.render(&text)));
                    }
                }
            }
        }
        for _ in 0..2 {
            if !run_tick(seed, &mut w, &systems, &setup, &mut history, report) {
                return;
            }
        }
    }
}

/// One TICK on the engine and the model, compared; `false` when the world is left.
fn run_tick(
    seed: u64,
    w: &mut TestWorld,
    systems: &[System],
    setup: &str,
    history: &mut Vec<String>,
    report: &mut Report,
) -> bool {
    let fail = |report: &mut Report, model: &Model, history: &[String], why: String| {
        let defs: Vec<&str> = systems.iter().map(|s| s.text.as_str()).collect();
        report.fail(
            seed,
            Some(model),
            format!(
                "index setup: {setup}\n{why}\nsystems:\n  {}\nstatements so far:\n  {}",
                defs.join("\n  "),
                history.join("\n  ")
            ),
        );
    };
    let before = w.model.clone();
    let mut next = w.model.clone();
    let mut spawned = 0;
    let mut at_end = BTreeMap::new();
    let expected = tick(&mut next, systems, &mut spawned, &mut at_end);
    history.push("TICK".into());
    let ticks_before = w.db.ticks_run();
    let got = match guarded(|| w.db.execute("TICK", ())) {
        Ok(Ok(rs)) => rs,
        Ok(Err(e)) => {
            fail(report, &before, history, format!("TICK failed: {e}"));
            return false;
        }
        Err(panic) => {
            fail(report, &before, history, panic);
            return false;
        }
    };
    let expected = match expected {
        Ok(f) => f,
        Err(Unsure::Overflow) => {
            report.skipped += 1;
            return false;
        }
        Err(Unsure::TestBug(why)) => {
            fail(report, &before, history, format!("TEST BUG (model or generator): {why}"));
            return false;
        }
    };
    for (kind, n) in at_end {
        report
            .mutations
            .entry(if kind == "constraint" {
                "refused at the phase's end: constraint"
            } else {
                "refused at the phase's end: other"
            })
            .or_default()
            .1 += n;
    }
    for s in systems {
        let tally = report.mutations.entry(system_kind(s)).or_default();
        match expected.iter().any(|f| f.system == s.name) {
            false => tally.0 += 1,
            true => tally.1 += 1,
        }
    }
    if let Err(why) = check_failures(&expected, &got, ticks_before) {
        fail(report, &before, history, why);
        return false;
    }
    if let Err(why) = adopt_spawned(&mut w.db, &mut next) {
        fail(report, &before, history, why);
        return false;
    }
    let gone: BTreeSet<Entity> = w.model.entities.keys().filter(|e| !next.is_alive(**e)).copied().collect();
    w.dead.extend(gone);
    w.model = next;
    // The whole world, then a query about references and a random one.
    let mut cases = vec![(state_case(&w.model), Api::Execute)];
    let mut g = Gen::new(Rng::new(mix(seed, 5_000_000 + history.len() as u64)), &w.model, &w.dead);
    cases.push((g.relation_query(), Api::Query));
    cases.push((g.query(), Api::Prepared));
    let mut ok = true;
    for (case, api) in cases {
        let outcome = judge(&w.model, &case, run_engine(&mut w.db, &case, api));
        ok &= !matches!(outcome, Outcome::Fail(_));
        let case = Case { shape: if case.shape == "whole world" { "world after TICK" } else { case.shape }, ..case };
        record(report, seed, &w.model, &case, &format!("after TICK #{} via {api:?}", history.len()), setup, outcome);
    }
    if !ok {
        fail(report, &w.model, history, "after the TICK above".into());
    }
    ok
}

/// The tally a system's runs count under: its block's first statement kind, or `block`.
fn system_kind(s: &System) -> &'static str {
    match s.statements.as_slice() {
        [_, _, ..] => "system: block",
        [Statement::Update(_)] => "system: update",
        [Statement::Spawn(_)] => "system: spawn",
        [Statement::Despawn(_)] => "system: despawn",
        [Statement::Add(_)] => "system: add",
        [Statement::Remove(_)] => "system: remove",
        _ => "system: other",
    }
}

/// The model itself against a hand-worked tick: staging, ON DELETE at the phase's end, the
/// checks of staged writes, a failing statement ending its block.
#[test]
fn reference_systems_staging() {
    use super::model::{RefDecl, Schema};
    let mut schema = Schema::standard();
    schema.declare("ChildOf", "parent", RefDecl { on_delete: ecsdb::OnDelete::Cascade, acyclic: true });
    let mut m = Model::new(schema);
    let e = |i: u32| Entity::from_parts(i, 0);
    // 0v0 <- 1v0 <- 2v0, and 3v0 alone.
    for (i, parent) in [(0, None), (1, Some(0)), (2, Some(1)), (3, None)] {
        let comps = m.entities.entry(e(i)).or_default();
        if let Some(p) = parent {
            comps.insert("ChildOf".into(), vec![("parent".into(), Value::Entity(e(p)))]);
        }
    }
    let system = |name: &str, phase: usize, body: &[&str]| System {
        name: name.into(),
        phase,
        statements: body.iter().map(|s| parse_statement(s).unwrap()).collect(),
        text: String::new(),
    };
    let systems = [
        system("pre", 0, &["ADD Level {value: 1} TO 1v0"]),
        system("kill", 1, &["DESPAWN 0v0"]),
        // Runs while 0v0 and 1v0 live; 2v0 moves under 0v0 at once; the child of 1v0 is
        // refused at the phase's end (1v0 went with 0v0).
        system("kids", 1, &["SPAWN ChildOf {parent: 1v0}", "UPDATE ChildOf SET parent = 0v0 WHERE entity = 2v0"]),
        // A loop, found when the ADD runs: the block ends there.
        system("loop", 1, &["ADD ChildOf {parent: 3v0} TO 3v0", "SPAWN Frozen"]),
        // 1v0 lives when this runs; refused at the phase's end (it went with 0v0).
        system("adopt", 1, &["ADD ChildOf {parent: 1v0} TO 3v0"]),
        // A stale target when it runs: the block ends there.
        system("stale", 1, &["DESPAWN 9v0", "SPAWN Frozen"]),
    ];
    let mut spawned = 0;
    let Ok(failures) = tick(&mut m, &systems, &mut spawned, &mut BTreeMap::new()) else { panic!("no answer") };
    let f = |s: &str, kind: &'static str, at_end: bool| Failure { system: s.into(), kind, at_end };
    assert_eq!(
        failures,
        [
            f("loop", "constraint", false),
            f("stale", "stale_entity", false),
            f("kids", "stale_entity", true),
            f("adopt", "stale_entity", true)
        ]
    );
    assert_eq!(m.entities.keys().copied().collect::<Vec<_>>(), [e(3)], "the cascade took 1v0 and 2v0");
    assert!(m.entities[&e(3)].is_empty());
    assert_eq!(spawned, 0);
}
