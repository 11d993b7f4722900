//! The schedule: named systems in phases, ordered, run every tick, in parallel where their
//! data does not overlap.
//!
//! A **text system** is a statement or a `BEGIN … END` block, prepared once and run every
//! tick with `$dt`, `$tick` and `$time`; its access set comes from its bound plans. A **Rust
//! system** is a closure over a typed query; its access set comes from the query's types.
//! The world keeps the definitions as plain records ([`ecsdb_engine::ScheduleRecord`]), so
//! snapshots save them; the schedule here is their runnable form.
//!
//! How a phase runs (`run.rs`): its systems, in order, are cut into *batches* of consecutive
//! systems that do not conflict ([`Access::conflicts_with`]). Every text system of a batch
//! checks its statements against the same world (on rayon, when the batch has several), then
//! the batch's Rust systems run side by side on rayon, each writing its own components
//! through a query prepared by the engine ([`ecsdb_engine::DisjointRuns`]); then the batch's
//! UPDATEs are applied in system order. SPAWN, DESPAWN, ADD and REMOVE are staged and applied
//! at the end of the phase in system, then statement order. Since the systems of a batch
//! touch nothing another of them writes, this is exactly running them one by one, and the
//! same work is done for any thread count. A system that must see its own UPDATE in a later
//! statement of its block, and a Rust system whose query writes a sparse component, runs in
//! a batch of its own.

mod access;
mod phase;
mod run;
mod rust;
mod show;

use std::time::Duration;

use ecsdb_engine::{ScheduleRecord, SystemBody, SystemRecord};

use ecsdb_engine::World;

use crate::error::{Error, ErrorKind, Span};
use crate::execute::mutate;
use crate::params::Params;
use crate::parse::ast;

pub use access::Access;
pub use phase::Phase;
pub use run::TickFailure;
pub(crate) use run::render;
pub(crate) use rust::RustPlacement;
pub use rust::{RustSystemFn, SystemContext};

/// The most FixedUpdate runs in one tick; time beyond them is dropped.
pub const MAX_FIXED_RUNS: u32 = 8;

/// One system.
pub(crate) struct System {
    pub(crate) name: String,
    pub(crate) phase: Phase,
    pub(crate) after: Vec<String>,
    pub(crate) before: Vec<String>,
    pub(crate) body: Body,
    pub(crate) access: Access,
    /// Runs alone: a block whose later statements must see its UPDATEs, a Rust system
    /// writing a sparse component, or a saved Rust system not registered yet.
    pub(crate) exclusive: bool,
    pub(crate) stats: Stats,
}

/// A statement a text system runs every tick: the database prepares it from the system's
/// text; the schedule only asks it to run against a world.
pub(crate) trait SystemStatement: Send + Sync {
    /// Runs it against `world` without writing: a read gives its row count, a write its
    /// change, checked and staged for the schedule to apply. With `in_place`, an UPDATE that
    /// can be rewritten in place is left to be rewritten when it is applied: only for a
    /// caller that applies it to this world before anything else writes what it reads.
    fn stage(&mut self, world: &World, params: &Params, in_place: bool) -> Result<Step, Error>;
}

/// What one statement of a system did: a change to apply, or rows read.
pub(crate) enum Step {
    /// The checked change (UPDATE, or a structural write staged to the phase's end).
    Staged(mutate::Staged),
    /// A read: how many rows it returned.
    Read(usize),
}

/// What a system runs.
pub(crate) enum Body {
    /// Statements prepared once; `text` is what the world saves.
    Text { text: String, statements: Vec<Box<dyn SystemStatement>> },
    /// A Rust system; `None` until the program registers it.
    Rust(Option<RustSystemFn>),
    /// A saved text system that no longer binds (its error is reported by every TICK).
    Broken { text: String, error: String },
}

/// Run statistics (not saved).
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) runs: u64,
    pub(crate) rows: u64,
    pub(crate) total: Duration,
    pub(crate) last_error: Option<String>,
}

/// The runnable schedule of a database.
pub(crate) struct Schedule {
    /// In registration order.
    pub(crate) systems: Vec<System>,
    /// Per phase (in [`Phase::ALL`] order), batches of indexes into `systems`, in run order.
    pub(crate) batches: Vec<Vec<Vec<usize>>>,
    pub(crate) fixed_hz: u32,
    pub(crate) accumulator_ns: u64,
    /// Ticks run so far (`$tick` of the next tick).
    pub(crate) tick: u64,
    /// Simulated time so far (`$time` of the next tick), in nanoseconds.
    pub(crate) time_ns: u64,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule::from_record(&ScheduleRecord::default())
    }
}

fn constraint(message: impl Into<String>, span: Span) -> Error {
    Error::new(ErrorKind::Constraint, message).with_span(span)
}

/// A system's placement as written: phase and AFTER/BEFORE names with their spans.
pub(crate) struct Placement<'a> {
    pub(crate) name: &'a str,
    pub(crate) name_span: Span,
    pub(crate) phase: Phase,
    pub(crate) after: Vec<(String, Span)>,
    pub(crate) before: Vec<(String, Span)>,
}

impl Schedule {
    /// The schedule of saved records, without binding text bodies yet (see
    /// [`Schedule::bind_all`]).
    pub(crate) fn from_record(record: &ScheduleRecord) -> Schedule {
        let systems = record
            .systems
            .iter()
            .map(|r| System {
                name: r.name.clone(),
                phase: Phase::from_name(&r.phase).unwrap_or_default(),
                after: r.after.clone(),
                before: r.before.clone(),
                body: match &r.body {
                    SystemBody::Text(text) => {
                        Body::Broken { text: text.clone(), error: run::render(&Error::internal("not bound yet")) }
                    }
                    SystemBody::Rust => Body::Rust(None),
                },
                access: Access::default(),
                exclusive: matches!(r.body, SystemBody::Rust),
                stats: Stats::default(),
            })
            .collect();
        let mut s = Schedule {
            systems,
            batches: Vec::new(),
            fixed_hz: record.fixed_hz.max(1),
            accumulator_ns: record.accumulator_ns,
            tick: record.tick,
            time_ns: record.time_ns,
        };
        // Saved orders were acyclic when saved; a damaged record falls back to registration order.
        if s.rebuild_batches().is_err() {
            s.batches = Phase::ALL
                .iter()
                .map(|p| s.systems.iter().enumerate().filter(|(_, x)| x.phase == *p).map(|(i, _)| vec![i]).collect())
                .collect();
        }
        s
    }

    /// The plain records the world saves.
    pub(crate) fn record(&self) -> ScheduleRecord {
        ScheduleRecord {
            systems: self
                .systems
                .iter()
                .map(|s| SystemRecord {
                    name: s.name.clone(),
                    phase: s.phase.name().to_string(),
                    after: s.after.clone(),
                    before: s.before.clone(),
                    body: match &s.body {
                        Body::Text { text, .. } | Body::Broken { text, .. } => SystemBody::Text(text.clone()),
                        Body::Rust(_) => SystemBody::Rust,
                    },
                })
                .collect(),
            fixed_hz: self.fixed_hz,
            accumulator_ns: self.accumulator_ns,
            tick: self.tick,
            time_ns: self.time_ns,
        }
    }

    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        self.systems.iter().position(|s| s.name == name)
    }

    /// Checks a new system's placement: a new name, AFTER/BEFORE naming systems of its phase.
    pub(crate) fn check_placement(&self, p: &Placement<'_>) -> Result<(), Error> {
        if self.find(p.name).is_some() {
            return Err(constraint(format!("a system named '{}' already exists", p.name), p.name_span));
        }
        for (other, span) in p.after.iter().chain(&p.before) {
            match self.find(other) {
                None if other == p.name => {
                    return Err(constraint(format!("system '{other}' cannot be ordered against itself"), *span));
                }
                None => return Err(constraint(format!("no system named '{other}'"), *span)),
                Some(i) if self.systems[i].phase != p.phase => {
                    return Err(constraint(
                        format!(
                            "system '{other}' is in phase {}, not {}: order applies within a phase",
                            self.systems[i].phase, p.phase
                        ),
                        *span,
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Adds a system (placement already checked) and reorders; a cycle takes it out again
    /// and is an error at `span`, leaving the schedule as it was.
    pub(crate) fn insert(&mut self, system: System, span: Span) -> Result<(), Error> {
        self.systems.push(system);
        if let Err(cycle) = self.rebuild_batches() {
            self.systems.pop();
            self.rebuild_batches().map_err(|_| Error::internal("schedule: a cycle without the new system"))?;
            return Err(constraint(format!("ordering cycle: {}", cycle.join(" -> ")), span));
        }
        Ok(())
    }

    /// Removes a system; orders naming it lose that constraint.
    pub(crate) fn remove(&mut self, index: usize) -> System {
        let system = self.systems.remove(index);
        for s in &mut self.systems {
            s.after.retain(|n| *n != system.name);
            s.before.retain(|n| *n != system.name);
        }
        // (Removing a node and its edges cannot make a cycle.)
        let _ = self.rebuild_batches();
        system
    }

    /// The run order of each phase: registration order, stably reordered so that every
    /// AFTER/BEFORE holds (at each step the earliest-registered system whose predecessors
    /// have all run). Returns the systems of a cycle when there is one.
    fn orders(&self) -> Result<Vec<Vec<usize>>, Vec<String>> {
        let n = self.systems.len();
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, s) in self.systems.iter().enumerate() {
            for a in &s.after {
                if let Some(j) = self.find(a) {
                    preds[i].push(j);
                }
            }
            for b in &s.before {
                if let Some(j) = self.find(b) {
                    preds[j].push(i);
                }
            }
        }
        let mut out = Vec::with_capacity(Phase::ALL.len());
        for phase in Phase::ALL {
            let members: Vec<usize> = (0..n).filter(|&i| self.systems[i].phase == phase).collect();
            let mut done = vec![false; n];
            let mut order = Vec::with_capacity(members.len());
            while order.len() < members.len() {
                let next = members.iter().copied().find(|&i| !done[i] && preds[i].iter().all(|&p| done[p]));
                match next {
                    Some(i) => {
                        done[i] = true;
                        order.push(i);
                    }
                    None => return Err(self.cycle(&members, &done, &preds)),
                }
            }
            out.push(order);
        }
        Ok(out)
    }

    /// A cycle among the systems not yet placed, by name, first name repeated at the end.
    fn cycle(&self, members: &[usize], done: &[bool], preds: &[Vec<usize>]) -> Vec<String> {
        let start = members.iter().copied().find(|&i| !done[i]).unwrap_or(0);
        let mut path = vec![start];
        let mut at = start;
        while let Some(p) = preds[at].iter().copied().find(|&p| !done[p]) {
            if let Some(k) = path.iter().position(|&x| x == p) {
                let mut names: Vec<String> = path[k..].iter().rev().map(|&i| self.systems[i].name.clone()).collect();
                names.push(names[0].clone());
                return names;
            }
            path.push(p);
            at = p;
        }
        path.iter().map(|&i| self.systems[i].name.clone()).collect()
    }

    /// Recomputes the run order and the batches of every phase.
    pub(crate) fn rebuild_batches(&mut self) -> Result<(), Vec<String>> {
        let orders = self.orders()?;
        self.batches = orders
            .into_iter()
            .map(|order| {
                let mut batches: Vec<Vec<usize>> = Vec::new();
                for i in order {
                    let s = &self.systems[i];
                    let joins = batches.last().is_some_and(|b| {
                        !s.exclusive
                            && b.iter().all(|&j| {
                                !self.systems[j].exclusive && !self.systems[j].access.conflicts_with(&s.access)
                            })
                    });
                    match batches.last_mut() {
                        Some(b) if joins => b.push(i),
                        _ => batches.push(vec![i]),
                    }
                }
                batches
            })
            .collect();
        Ok(())
    }

    /// Each system's position in its phase's run order (0-based).
    pub(crate) fn positions(&self) -> Vec<usize> {
        let mut pos = vec![0; self.systems.len()];
        for batches in &self.batches {
            for (k, i) in batches.iter().flatten().enumerate() {
                pos[*i] = k;
            }
        }
        pos
    }
}

/// Placement of a `CREATE SYSTEM`.
pub(crate) fn placement(c: &ast::CreateSystem) -> Result<Placement<'_>, Error> {
    let phase = match &c.phase {
        None => Phase::OnUpdate,
        Some(p) => Phase::from_name(&p.name).ok_or_else(|| {
            let names: Vec<&str> = Phase::ALL.iter().map(|p| p.name()).collect();
            constraint(format!("unknown phase '{}' (phases: {})", p.name, names.join(", ")), p.span)
        })?,
    };
    let names = |v: &[ast::Ident]| v.iter().map(|i| (i.name.clone(), i.span)).collect();
    Ok(Placement {
        name: &c.name.name,
        name_span: c.name.span,
        phase,
        after: names(&c.after),
        before: names(&c.before),
    })
}
