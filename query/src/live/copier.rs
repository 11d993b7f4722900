//! The publisher's copier thread: makes the states readers share out of the writer's world,
//! copying only what changed since the last state whenever it can.
//!
//! The writer lends its world ([`WorldLoan`]) at a tick boundary and goes on; only its next
//! write waits, and only until the copier has read what it needs. Two read-only copies take
//! turns: readers query the newer one while the copier brings the other up to date.
//!
//! - **Incremental** (whenever the schema, indexes, references and systems are the ones the
//!   copies were made with): the copier brings the spare copy up to date with
//!   [`World::mirror_from`]: rows whose change ticks are newer than the spare's last copy,
//!   and, in tables whose entities changed (spawned, despawned, moved between tables), every
//!   row whose entity differs; the copy's change ticks and indexes follow. Then it gives the
//!   world back. The copy is made while the writer is between ticks and no reader holds the
//!   spare: the copier waits for readers to let go of it before it says it is ready for the
//!   next state, and the writer does not lend its world before that.
//! - **Filled** (the first state, or after components, indexes, references or systems were
//!   defined): two empty copies are made from a snapshot of the writer's schema alone
//!   ([`SaveOptions::schema_only`]), and the first is filled by the same mirror, from no
//!   rows. The readers keep the older state (or wait for a first one) until it is complete;
//!   the second copy fills as the spare at the next state. Only a world the mirror cannot
//!   follow (see [`World::mirror_from`]) is copied from a snapshot of all of it, which the
//!   writer cannot recall.
//!
//! A writer that writes again before a copy is done recalls its world: the copier stops
//! within one chunk of rows (values copied or rows moved), gives it back, and that state is
//! skipped (for at most [`SKIP_LIMIT`] in a row, so that a writer that never pauses still
//! lets readers see new states). What a stopped copy did is kept: rows moved stay moved, and
//! a copy stopped while appending rows takes the next try's window from where it stopped
//! ([`Mirrored::Stopped`]), so a copy being filled goes on from its last row rather than
//! starting over.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ecsdb_engine::index::IndexDef;
use ecsdb_engine::{ComponentId, IndexBuild, LoadOptions, Mirrored, ReferenceDef, SaveOptions, SystemRecord, World};

use super::{ChangeLog, Published, Shared, lock};
use crate::Database;
use crate::database::WorldLoan;

/// One state to make: the writer's world at the end of live tick `tick`.
pub(crate) struct Job {
    pub(crate) tick: u64,
    pub(crate) loan: WorldLoan,
    /// The writer's registered functions and planner settings, over an empty world.
    pub(crate) template: Database,
}

/// What the copier keeps between jobs.
#[derive(Default)]
pub(crate) struct Copier {
    pair: Option<Pair>,
    /// Copies being filled from the writer's schema, for a first state or a new layout.
    filling: Option<Filling>,
    /// When the first state skipped since the last one published was skipped (the writer
    /// recalled its world). Once that is [`SKIP_LIMIT`] ago, the next state is made even if
    /// the writer recalls it again: a writer that never pauses long enough would otherwise
    /// starve the readers of new states; it waits for one incremental copy instead.
    skipping_since: Option<Instant>,
    /// When each component last changed, for the published states.
    log: ChangeLog,
}

/// The two read-only copies.
struct Pair {
    /// What readers see now (also in `Shared::state`).
    current: Copy,
    /// The other copy, which no reader holds between jobs.
    spare: Copy,
    /// What a copy cannot follow incrementally, as of the last full copy.
    layout: Layout,
    /// Writer component id → the copies' id (`None`: not in the copies, such as an opaque one).
    components: Vec<Option<ComponentId>>,
}

struct Copy {
    state: Arc<Published>,
    /// The writer's change run this copy is current as of (rows stamped later changed
    /// since); `None`: it holds no rows yet.
    synced_run: Option<u64>,
}

/// Two copies made from the writer's schema alone, the first being filled.
struct Filling {
    first: World,
    /// The writer's change run `first` is current as of (`None`: nothing copied yet).
    first_synced: Option<u64>,
    /// Empty: the spare once `first` is published.
    second: World,
    layout: Layout,
    components: Vec<Option<ComponentId>>,
}

impl Copy {
    /// A copy of `world` published as the state of live tick `tick`.
    fn new(world: World, tick: u64, template: &Database, changes: &ChangeLog, synced_run: Option<u64>) -> Copy {
        let state = Arc::new(Published { tick, db: template.with_world(world), changes: changes.clone() });
        Copy { state, synced_run }
    }
}

impl Filling {
    /// Two empty copies of `writer`'s schema (components that a snapshot cannot carry left
    /// out), with the map from the writer's component ids to theirs.
    fn start(writer: &World) -> Option<Filling> {
        let opts = SaveOptions { skip_opaque: true, schema_only: true, ..SaveOptions::default() };
        let bytes = writer.save_to_vec(&opts).ok()?;
        let (first, second) = (load_copy(&bytes).ok()?, load_copy(&bytes).ok()?);
        let components = component_map(&copied_names(writer), &first);
        Some(Filling { first, first_synced: None, second, layout: Layout::of(writer), components })
    }
}

/// A read-only copy from a snapshot. Its indexes are built when a reader first wants them,
/// in the reader's statement: a copy's indexes that nobody reads cost nothing.
fn load_copy(bytes: &[u8]) -> Result<World, ecsdb_engine::SnapshotError> {
    let mut world = World::new();
    let opts = LoadOptions { indexes: IndexBuild::Deferred, ..LoadOptions::default() };
    world.load_bytes_into(bytes, &opts).map(|_| world)
}

/// By component of `world`: its name, if copies hold its values (`None` for an opaque one,
/// which they never do).
fn copied_names(world: &World) -> Vec<Option<String>> {
    world.components().iter().map(|c| (!c.is_opaque()).then(|| c.name().to_string())).collect()
}

/// Component id in the world `names` came from → the id in `copy` of the component with
/// that name.
fn component_map(names: &[Option<String>], copy: &World) -> Vec<Option<ComponentId>> {
    names.iter().map(|n| n.as_deref().and_then(|n| copy.component_id(n).ok())).collect()
}

/// How long states may be skipped in a row because the writer wanted its world back before
/// the copy was done (about 6 ticks at 60 Hz): the most a published state lags behind the
/// writer beyond one copy. Skipping a state costs the readers freshness; making it costs
/// the writer a wait, so a few are skipped first.
const SKIP_LIMIT: Duration = Duration::from_millis(100);

/// How long the copier waits for readers to let go of the older copy before it gives up on
/// it (longer than any query should hold a state; a holder keeps it alive regardless).
const SPARE_WAIT: Duration = Duration::from_millis(250);

/// The parts of the writer's world whose change makes the next copy a full one.
#[derive(PartialEq)]
struct Layout {
    /// [`ecsdb_engine::Components::version`]: components defined, or their fields or
    /// defaults changed.
    catalog: u64,
    indexes: Vec<IndexDef>,
    references: Vec<ReferenceDef>,
    systems: Vec<SystemRecord>,
    fixed_hz: u32,
}

impl Layout {
    fn of(writer: &World) -> Layout {
        let schedule = writer.schedule_record();
        Layout {
            catalog: writer.components().version(),
            indexes: writer.index_definitions(),
            references: writer.reference_definitions(),
            systems: schedule.systems.clone(),
            fixed_hz: schedule.fixed_hz,
        }
    }

    /// Whether `writer` still has this layout (component ids are never reused, so the same
    /// count means the same components).
    fn holds_for(&self, writer: &World) -> bool {
        let schedule = writer.schedule_record();
        self.catalog == writer.components().version()
            && self.fixed_hz == schedule.fixed_hz
            && self.systems == schedule.systems
            && self.indexes == writer.index_definitions()
            && self.references == writer.reference_definitions()
    }
}

impl Copier {
    /// Makes the state of `job` and publishes it, then waits until no reader holds the older
    /// copy. False if it published nothing (the writer recalled its world first, or a
    /// snapshot failed): the readers keep the older state.
    pub(crate) fn run(&mut self, job: Job, shared: &Shared) -> bool {
        let Job { tick, loan, template } = job;
        let may_stop = self.skipping_since.is_none_or(|t| t.elapsed() < SKIP_LIMIT);
        let outcome = match self.sync_spare(&loan, may_stop) {
            Synced::NeedsFull => self.fill(&loan, may_stop),
            synced => synced,
        };
        let published = match outcome {
            Synced::To(this_run, changed) => {
                drop(loan);
                for name in &changed {
                    self.log.mark(name, tick);
                }
                self.publish_spare(this_run, tick, shared)
            }
            Synced::Filled(this_run) => {
                drop(loan);
                self.publish_filled(this_run, tick, template, shared)
            }
            // The writer wants its world back: this state is skipped. The copy keeps the
            // change run it is current as of, so the next try covers the rows written into
            // the world just now too.
            Synced::Recalled => {
                lock(&shared.copies).recalled += 1;
                self.skipping_since.get_or_insert_with(Instant::now);
                // The readers' request for a newer state still stands: the writer's next
                // tick boundary makes one.
                shared.wanted.store(true, Ordering::Release);
                return false;
            }
            Synced::NeedsFull => self.full(tick, loan, template, shared),
        };
        self.skipping_since = None;
        // Ready for the next job once the older copy is free (readers finishing a query). A
        // state kept longer (`Reader::state` hands out the `Arc`) is left to its holder: the
        // next state is then a full copy, rather than no new state at all.
        let deadline = Instant::now() + SPARE_WAIT;
        while let Some(pair) = &mut self.pair {
            if Arc::get_mut(&mut pair.spare.state).is_some() || shared.closed.load(Ordering::Acquire) {
                break;
            }
            if Instant::now() > deadline {
                self.pair = None;
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        published
    }

    /// Brings the spare copy up to date, if there is one the writer's world still fits and
    /// no copies are being filled (`NeedsFull` otherwise).
    fn sync_spare(&mut self, loan: &WorldLoan, may_stop: bool) -> Synced {
        if self.filling.is_some() {
            return Synced::NeedsFull;
        }
        let Some(pair) = self.pair.as_mut() else { return Synced::NeedsFull };
        let Some(spare) = Arc::get_mut(&mut pair.spare.state) else { return Synced::NeedsFull };
        let target = Target { copy: spare.db.world_mut(), synced_run: &mut pair.spare.synced_run };
        sync(loan, may_stop, target, &pair.layout, &pair.components)
    }

    /// Fills the first of the copies being filled (starting them if there are none, or the
    /// writer's layout changed since they were started).
    fn fill(&mut self, loan: &WorldLoan, may_stop: bool) -> Synced {
        let writer = loan.world();
        if self.filling.as_ref().is_none_or(|f| !f.layout.holds_for(writer)) {
            self.filling = Filling::start(writer);
        }
        let Some(f) = self.filling.as_mut() else { return Synced::NeedsFull };
        let target = Target { copy: &mut f.first, synced_run: &mut f.first_synced };
        match sync(loan, may_stop, target, &f.layout, &f.components) {
            Synced::To(this_run, _) => Synced::Filled(this_run),
            Synced::NeedsFull => {
                // The mirror cannot follow this world: a snapshot of all of it will do.
                self.filling = None;
                Synced::NeedsFull
            }
            other => other,
        }
    }

    /// Publishes the spare copy, just brought up to date with the writer's change run
    /// `this_run`; the other copy becomes the spare.
    fn publish_spare(&mut self, this_run: u64, tick: u64, shared: &Shared) -> bool {
        let Some(pair) = self.pair.as_mut() else { return false };
        let Some(spare) = Arc::get_mut(&mut pair.spare.state) else { return false };
        // The writer has its world back: the copy's indexes may take out the removals the
        // mirror only buffered.
        spare.db.world_mut().settle_indexes();
        spare.tick = tick;
        spare.changes = self.log.clone();
        pair.spare.synced_run = Some(this_run);
        std::mem::swap(&mut pair.current, &mut pair.spare);
        shared.state.store(Some(Arc::clone(&pair.current.state)));
        lock(&shared.copies).incremental += 1;
        true
    }

    /// Publishes the filled copy, current as of the writer's change run `this_run`, then
    /// makes its twin the spare; the older copies go (once no reader holds them).
    ///
    /// The twin is filled from the published copy, not from the writer's world: the writer
    /// has its world back, and both copies then follow it from the same change run, so the
    /// spare's next sync copies (and reports changed) only what the writer changed since.
    /// It runs on the reader pool, off the writer's core, ahead of waiting readers.
    fn publish_filled(&mut self, this_run: u64, tick: u64, template: Database, shared: &Shared) -> bool {
        let Some(Filling { mut first, mut second, layout, components, .. }) = self.filling.take() else {
            return false;
        };
        first.settle_indexes();
        self.log = ChangeLog::everything_at(tick);
        let current = Copy::new(first, tick, &template, &self.log, Some(this_run));
        shared.state.store(Some(Arc::clone(&current.state)));
        lock(&shared.copies).full += 1;
        let first = current.state.db.world();
        let twin = || {
            let ids = component_map(&copied_names(first), &second);
            let (window, _) = first.begin_change_run(None);
            let done = second.mirror_from(first, &ids, &window, &|| false);
            second.settle_indexes();
            matches!(done, Ok(Mirrored::Done(_)))
        };
        // Should the twin fail, the spare is filled from the writer's world at the next
        // state instead (reporting every component changed once).
        let synced_run = shared.pool.run_for_copier(twin).then_some(this_run);
        let spare = Copy::new(second, tick, &template, &self.log, synced_run);
        self.pair = Some(Pair { current, spare, layout, components });
        true
    }

    /// Makes both copies from a snapshot of the writer's world, which the writer cannot
    /// recall: for a world the mirror cannot follow.
    fn full(&mut self, tick: u64, loan: WorldLoan, template: Database, shared: &Shared) -> bool {
        self.pair = None;
        let writer = loan.world();
        let (_, this_run) = writer.begin_change_run(None);
        let opts = SaveOptions { skip_opaque: true, ..SaveOptions::default() };
        let Ok(bytes) = writer.save_to_vec(&opts) else { return false };
        let layout = Layout::of(writer);
        let names = copied_names(writer);
        drop(loan);
        // The decode runs after the world is back, on the reader pool's threads: never on
        // the writer's core (the engine's parallel loops use the pool they are called from).
        let decode = || (load_copy(&bytes), load_copy(&bytes));
        let (Ok(current), Ok(spare)) = shared.pool.run_for_copier(decode) else {
            return false;
        };
        let components = component_map(&names, &current);
        self.log = ChangeLog::everything_at(tick);
        let copy = |world| Copy::new(world, tick, &template, &self.log, Some(this_run));
        let (current, spare) = (copy(current), copy(spare));
        shared.state.store(Some(Arc::clone(&current.state)));
        self.pair = Some(Pair { current, spare, layout, components });
        lock(&shared.copies).full += 1;
        true
    }
}

/// How a [`sync`] ended.
enum Synced {
    /// The copy is up to date; the change run to remember, and the names of the components
    /// whose rows were copied.
    To(u64, Vec<String>),
    /// The copy being filled is complete, as of this change run.
    Filled(u64),
    /// The writer recalled its world: the copy may be partly written, and its change run
    /// still covers every row to copy next time.
    Recalled,
    /// More than values changed: only a full copy will do (the copy may be partly written).
    NeedsFull,
}

/// The copy a [`sync`] brings up to date, and the writer's change run it is current as of
/// (moved on by a sync that completes, or stops with the copy's rows current).
struct Target<'a> {
    copy: &'a mut World,
    synced_run: &'a mut Option<u64>,
}

/// Brings the target up to date with the lent world: the rows changed since its
/// `synced_run`, and the entities spawned, despawned or moved since ([`World::mirror_from`]),
/// if the layout still holds. Stops early when the writer recalls its world, if `may_stop`.
fn sync(
    loan: &WorldLoan,
    may_stop: bool,
    Target { copy, synced_run }: Target<'_>,
    layout: &Layout,
    components: &[Option<ComponentId>],
) -> Synced {
    let writer = loan.world();
    if !layout.holds_for(writer) {
        return Synced::NeedsFull;
    }
    let recalled = || may_stop && loan.is_recalled();
    let (window, this_run) = writer.begin_change_run(*synced_run);
    match copy.mirror_from(writer, components, &window, &recalled) {
        Ok(Mirrored::Done(ids)) => {
            // The schedule's clock (ticks run, simulated time) moves every tick; the systems
            // themselves are the same (see `Layout`).
            copy.set_schedule_record(writer.schedule_record().clone());
            let mut changed: Vec<String> =
                ids.iter().map(|&id| writer.components().info(id).name().to_string()).collect();
            changed.sort_unstable();
            Synced::To(this_run, changed)
        }
        Ok(Mirrored::Stopped { rows_current }) => {
            if rows_current {
                *synced_run = Some(this_run);
            }
            Synced::Recalled
        }
        Err(_) => Synced::NeedsFull,
    }
}
