//! Running ticks: phases, batches, staging, FixedUpdate's accumulator, failures.

use std::time::{Duration, Instant};

use ecsdb_engine::{Value, World};
use rayon::prelude::*;

use super::{Body, MAX_FIXED_RUNS, Phase, Schedule, Step, System};
use crate::execute::mutate::Staged;
use crate::params::Params;

/// A statement of a system that failed during a tick (TICK returns one row per failure).
#[derive(Clone, Debug, PartialEq)]
pub struct TickFailure {
    /// The `$tick` of the tick it failed in.
    pub tick: u64,
    /// The system.
    pub system: String,
    /// The error, rendered.
    pub error: String,
}

/// What one system's run produced before its writes were applied.
#[derive(Default)]
struct Outcome {
    /// UPDATEs, applied right after the system's batch.
    updates: Vec<Staged>,
    /// Structural writes, applied at the end of the phase.
    staged: Vec<Staged>,
    rows: u64,
    error: Option<String>,
    time: Duration,
}

/// The parameters every statement of a system may use this run.
fn system_params(tick: u64, time_ns: u64, dt_ns: u64) -> Params {
    Params::new()
        .set("dt", Value::Float(dt_ns as f64 / 1e9))
        .set("tick", Value::Int(tick as i64))
        .set("time", Value::Float(time_ns as f64 / 1e9))
}

/// A system's error as SHOW SYSTEMS and TICK report it, wherever it was found (when its
/// statement ran, or when its writes were applied): `kind error: message`, without the
/// position (spans point into the text the system was created from, which a later reader
/// does not have).
pub(crate) fn render(e: &crate::Error) -> String {
    format!("{} error: {e}", e.kind)
}

/// Runs a non-exclusive system's statements against `world` without writing anything. Its
/// UPDATE, if any, is its last statement (otherwise it would be exclusive), so every
/// statement sees the state the batch started from, as it would running alone. With
/// `in_place`, its UPDATE may be left to be rewritten in place when it is applied: only for
/// a system whose batch writes nothing else before it.
fn check_system(system: &mut System, world: &World, params: &Params, in_place: bool) -> Outcome {
    let started = Instant::now();
    let mut out = Outcome::default();
    match &mut system.body {
        Body::Text { statements, .. } => {
            for p in statements.iter_mut() {
                match p.stage(world, params, in_place) {
                    Ok(Step::Read(n)) => out.rows += n as u64,
                    Ok(Step::Staged(s)) => {
                        out.rows += s.len() as u64;
                        if s.is_update() {
                            out.updates.push(s);
                        } else {
                            out.staged.push(s);
                        }
                    }
                    Err(e) => {
                        out.error = Some(render(&e));
                        break;
                    }
                }
            }
        }
        Body::Rust(_) => out.error = Some(render(&crate::Error::internal("a Rust system is not checked, it runs"))),
        Body::Broken { error, .. } => out.error = Some(error.clone()),
    }
    out.time = started.elapsed();
    out
}

/// The systems of `members`, in that order, each borrowed once.
fn members_of<'a>(systems: &'a mut [System], members: &[usize]) -> Vec<(usize, &'a mut System)> {
    let mut found: Vec<(usize, &mut System)> =
        systems.iter_mut().enumerate().filter(|(i, _)| members.contains(i)).collect();
    found.sort_by_key(|(i, _)| members.iter().position(|x| x == i));
    found
}

/// Checks the text systems of a batch against the same world, on rayon when `parallel`. The
/// UPDATE of a batch's only text system may be rewritten in place when it is applied: the
/// batch's Rust systems, which run before that, write nothing it reads (they do not conflict).
/// Several text systems' UPDATEs are written side by side, each through a writer of its own
/// component, so they are staged.
fn check_systems(
    systems: &mut [System],
    text: &[usize],
    world: &World,
    params: &Params,
    parallel: bool,
) -> Vec<(usize, Outcome)> {
    let members = members_of(systems, text);
    let in_place = members.len() == 1;
    if parallel && members.len() > 1 {
        members.into_par_iter().map(|(i, s)| (i, check_system(s, world, params, false))).collect()
    } else {
        members.into_iter().map(|(i, s)| (i, check_system(s, world, params, in_place))).collect()
    }
}

/// Runs the Rust systems of a batch. With `parallel`, each is prepared in batch order on
/// this thread (its access checked against the others', its fetches made), then all run on
/// the rayon pool; one the engine will not run beside the others (it writes a sparse
/// component) runs alone afterwards. Otherwise they run one by one.
fn run_rust_systems(
    systems: &mut [System],
    rust: &[usize],
    world: &mut World,
    params: &Params,
    ctx: &super::SystemContext,
    parallel: bool,
) -> Vec<(usize, Outcome)> {
    let mut outcomes = Vec::with_capacity(rust.len());
    let mut alone = Vec::new();
    if parallel && rust.len() > 1 {
        let mut runs = world.disjoint_runs();
        let mut jobs = Vec::with_capacity(rust.len());
        for (i, s) in members_of(systems, rust) {
            match &mut s.body {
                Body::Rust(Some(f)) => match f.prepare(&mut runs) {
                    Ok(run) => jobs.push((i, run)),
                    Err(_) => alone.push(i),
                },
                _ => alone.push(i),
            }
        }
        outcomes = jobs
            .into_par_iter()
            .map(|(i, run)| {
                let started = Instant::now();
                let rows = run(ctx) as u64;
                (i, Outcome { rows, time: started.elapsed(), ..Outcome::default() })
            })
            .collect();
    } else {
        alone.extend_from_slice(rust);
    }
    for i in alone {
        outcomes.push((i, run_exclusive(&mut systems[i], world, params, ctx)));
    }
    outcomes
}

/// Writes a batch's UPDATEs side by side on the rayon pool, each through a writer of its own
/// component, and takes them out of `outcomes`; a failed write becomes its system's error.
/// The systems of a batch do not conflict, so their UPDATEs write distinct components and
/// the world ends exactly as when they are written one by one in system order. Leaves
/// `outcomes` as they are (to be written one by one) when there are fewer than two UPDATEs.
fn apply_updates_together(world: &mut World, outcomes: &mut [(usize, Outcome)]) {
    let count: usize = outcomes.iter().map(|(_, o)| o.updates.len()).sum();
    if count < 2 {
        return;
    }
    let ids: Vec<_> = outcomes
        .iter()
        .flat_map(|(_, o)| &o.updates)
        .filter_map(|u| match u {
            Staged::Update(u) => Some(u.component()),
            _ => None,
        })
        .collect();
    if ids.len() != count {
        return;
    }
    // Distinct components (which the batching guarantees) or nothing: the writers check.
    let Ok(writers) = world.component_writers(&ids) else { return };
    let mut jobs = Vec::with_capacity(count);
    for (at, (_, out)) in outcomes.iter_mut().enumerate() {
        for u in out.updates.drain(..) {
            if let Staged::Update(u) = u {
                jobs.push((at, u));
            }
        }
    }
    let failures: Vec<(usize, crate::Error)> = writers
        .into_par_iter()
        .zip(jobs)
        .filter_map(|(mut writer, (at, u))| u.apply_to(&mut writer).err().map(|e| (at, e)))
        .collect();
    for (at, e) in failures {
        outcomes[at].1.error.get_or_insert_with(|| render(&e));
    }
}

/// Runs an exclusive system: statement by statement, UPDATEs applied as they come.
fn run_exclusive(system: &mut System, world: &mut World, params: &Params, ctx: &super::SystemContext) -> Outcome {
    let started = Instant::now();
    let mut out = Outcome::default();
    match &mut system.body {
        Body::Text { statements, .. } => {
            for p in statements.iter_mut() {
                let step = p.stage(world, params, true).and_then(|step| match step {
                    Step::Staged(s) if s.is_update() => {
                        let n = s.len() as u64;
                        s.apply(world).map(|_| Step::Read(n as usize))
                    }
                    other => Ok(other),
                });
                match step {
                    Ok(Step::Read(n)) => out.rows += n as u64,
                    Ok(Step::Staged(s)) => {
                        out.rows += s.len() as u64;
                        out.staged.push(s);
                    }
                    Err(e) => {
                        out.error = Some(render(&e));
                        break;
                    }
                }
            }
        }
        Body::Rust(Some(f)) => out.rows = f.run_alone(world, ctx) as u64,
        Body::Rust(None) => {
            out.error = Some(render(&crate::Error::new(
                crate::ErrorKind::Constraint,
                format!("Rust system '{}' is not registered by this program", system.name),
            )))
        }
        Body::Broken { error, .. } => out.error = Some(error.clone()),
    }
    out.time = started.elapsed();
    out
}

impl Schedule {
    /// The names of saved Rust systems this program has not registered.
    pub(crate) fn unbound_rust_systems(&self) -> Vec<String> {
        self.systems.iter().filter(|s| matches!(s.body, Body::Rust(None))).map(|s| s.name.clone()).collect()
    }

    /// Runs `count` ticks of `dt_ns` each. Returns the failures, in the order they happened.
    /// With Rust systems the program has not registered, nothing runs and that is the error.
    pub(crate) fn run_ticks(
        &mut self,
        world: &mut World,
        count: u64,
        dt_ns: u64,
        parallel: bool,
    ) -> Result<Vec<TickFailure>, crate::Error> {
        let missing = self.unbound_rust_systems();
        if !missing.is_empty() {
            return Err(crate::Error::new(
                crate::ErrorKind::Constraint,
                format!(
                    "the schedule has Rust systems this program has not registered: {} (register them or DROP SYSTEM them)",
                    missing.join(", ")
                ),
            ));
        }
        let mut failures = Vec::new();
        for _ in 0..count {
            self.run_tick(world, dt_ns, parallel, &mut failures);
        }
        Ok(failures)
    }

    fn run_tick(&mut self, world: &mut World, dt_ns: u64, parallel: bool, failures: &mut Vec<TickFailure>) {
        let fixed_step = 1_000_000_000 / u64::from(self.fixed_hz.max(1));
        for (p, phase) in Phase::ALL.into_iter().enumerate() {
            if phase == Phase::FixedUpdate {
                self.accumulator_ns = self.accumulator_ns.saturating_add(dt_ns);
                let mut runs = 0;
                while self.accumulator_ns >= fixed_step && runs < MAX_FIXED_RUNS {
                    self.accumulator_ns -= fixed_step;
                    runs += 1;
                    self.run_phase(p, world, fixed_step, parallel, failures);
                }
                if self.accumulator_ns >= fixed_step {
                    // More than the most runs a tick allows: the rest of the time is dropped.
                    self.accumulator_ns %= fixed_step;
                }
            } else {
                self.run_phase(p, world, dt_ns, parallel, failures);
            }
        }
        self.tick += 1;
        self.time_ns = self.time_ns.saturating_add(dt_ns);
    }

    /// Runs phase `p` once: its batches in order, then its staged writes.
    fn run_phase(&mut self, p: usize, world: &mut World, dt_ns: u64, parallel: bool, failures: &mut Vec<TickFailure>) {
        if self.batches[p].is_empty() {
            return;
        }
        let params = system_params(self.tick, self.time_ns, dt_ns);
        let ctx = super::SystemContext { dt: dt_ns as f64 / 1e9, tick: self.tick, time: self.time_ns as f64 / 1e9 };
        let mut staged: Vec<(usize, Staged)> = Vec::new();
        for b in 0..self.batches[p].len() {
            let batch = &self.batches[p][b];
            let outcomes: Vec<(usize, Outcome)> = if let [i] = batch[..] {
                // One system: run as it would be alone, with nothing to split or sort.
                let system = &mut self.systems[i];
                let out = if system.exclusive || matches!(system.body, Body::Rust(_)) {
                    run_exclusive(system, world, &params, &ctx)
                } else {
                    // Its UPDATE is applied right after, before anything else writes.
                    check_system(system, world, &params, true)
                };
                vec![(i, out)]
            } else {
                // Text systems check against the batch's world, then Rust systems write
                // theirs: the batch's members do not conflict, so this is any order's result.
                let (rust, text): (Vec<usize>, Vec<usize>) =
                    batch.iter().partition(|&&i| matches!(self.systems[i].body, Body::Rust(_)));
                let mut outcomes = check_systems(&mut self.systems, &text, world, &params, parallel);
                outcomes.extend(run_rust_systems(&mut self.systems, &rust, world, &params, &ctx, parallel));
                outcomes.sort_by_key(|(i, _)| batch.iter().position(|x| x == i));
                outcomes
            };
            let mut outcomes = outcomes;
            if parallel {
                apply_updates_together(world, &mut outcomes);
            }
            for (i, mut out) in outcomes {
                // The system's time includes an UPDATE rewritten in place, whose values are
                // computed as it is applied (a clock read a system costs more than the
                // writes of a hundred idle ones, so other writes go untimed).
                let applying = out.updates.iter().any(Staged::is_in_place).then(Instant::now);
                for u in out.updates.drain(..) {
                    if let Err(e) = u.apply(world) {
                        out.error.get_or_insert_with(|| render(&e));
                    }
                }
                out.time += applying.map_or(Duration::ZERO, |t| t.elapsed());
                staged.extend(out.staged.drain(..).map(|s| (i, s)));
                self.record_run(i, out, failures);
            }
        }
        for (i, s) in staged {
            if let Err(e) = s.apply(world) {
                let system = &mut self.systems[i];
                let error = render(&e);
                system.stats.last_error = Some(error.clone());
                failures.push(TickFailure { tick: self.tick, system: system.name.clone(), error });
            }
        }
    }

    fn record_run(&mut self, i: usize, out: Outcome, failures: &mut Vec<TickFailure>) {
        let system = &mut self.systems[i];
        system.stats.runs += 1;
        system.stats.rows += out.rows;
        system.stats.total += out.time;
        if let Some(error) = out.error {
            system.stats.last_error = Some(error.clone());
            failures.push(TickFailure { tick: self.tick, system: system.name.clone(), error });
        }
    }
}
