//! [`Prepared`]: a statement parsed, bound and planned once, then run many times.

use super::*;

/// A statement parsed, bound and planned once, run many times with different parameters.
///
/// It keeps its matched archetype tables and, before each run, matches only the tables the
/// world created since (tables are never removed).
///
/// ```
/// use ecsdb_query::{Database, Params};
/// let mut db = Database::new();
/// db.execute("CREATE COMPONENT Health (hp f32)", ()).unwrap();
/// let mut low = db.prepare("SELECT count(*) WHERE Health.hp < $1").unwrap();
/// db.execute("SPAWN Health {hp: 5}", ()).unwrap();
/// let n = low.query(&db, [10]).unwrap();
/// assert_eq!(n.rows[0][0], ecsdb_engine::Value::Int(1));
/// ```
#[derive(Clone, Debug)]
pub struct Prepared {
    world_id: u64,
    /// [`ecsdb_engine::Components::layout_version`] when it was planned: its plan holds
    /// field positions and offsets that only that layout has.
    layout_version: u64,
    pub(super) exec: Executable,
    pub(super) params: Vec<ParamSpec>,
    columns: Vec<String>,
    span: Span,
    /// Whether runs see only what changed since the last (`changed()`, `added()`).
    tracks_changes: bool,
}

impl Prepared {
    /// How many emptied vectors an UPDATE keeps for its next run (`None` for another
    /// statement).
    #[cfg(test)]
    pub(crate) fn staging_buffers_kept(&self) -> Option<usize> {
        match &self.exec {
            Executable::Update { buffers, .. } => Some(buffers.kept()),
            _ => None,
        }
    }

    /// An UPDATE's slots and assigned expressions, as planned (`None` for another statement).
    #[cfg(test)]
    pub(crate) fn update_parts(&self) -> Option<(Vec<crate::plan::physical::PhysicalSlot>, Vec<crate::expr::Expr>)> {
        match &self.exec {
            Executable::Update { assignments, scan, .. } => {
                Some((scan.slots.clone(), assignments.iter().map(|(_, e)| e.clone()).collect()))
            }
            _ => None,
        }
    }

    /// An UPDATE's in-place rewrite on `world` with `params`, if it qualifies.
    #[cfg(test)]
    pub(crate) fn in_place(&mut self, world: &World, params: &[Value]) -> Option<crate::execute::rewrite::InPlace> {
        match &mut self.exec {
            Executable::Update { component, assignments, scan, .. } => {
                scan.refresh(world);
                crate::execute::rewrite::InPlace::plan(world, *component, assignments, scan, params)
            }
            _ => None,
        }
    }

    pub(super) fn new(bound: Bound, world: &World, span: Span, options: PlanOptions) -> Prepared {
        let Bound { plan, params } = bound;
        let columns: Vec<String> = match &plan {
            LogicalPlan::Select(s) => s.items.iter().map(|i| i.name.clone()).collect(),
            LogicalPlan::Explain(_) => vec!["plan".into()],
            LogicalPlan::Spawn(_) => vec!["entity".into()],
            LogicalPlan::Despawn(_) | LogicalPlan::Add(..) | LogicalPlan::Remove(..) | LogicalPlan::Update { .. } => {
                vec!["count".into()]
            }
            LogicalPlan::CreateIndex { .. } => vec!["name".into()],
            LogicalPlan::CreateComponent(..) | LogicalPlan::AlterComponent(..) | LogicalPlan::DropIndex(..) => {
                Vec::new()
            }
            LogicalPlan::Show(k) => catalog::show_columns(*k),
            LogicalPlan::Describe(_) => catalog::describe_columns(),
            LogicalPlan::Schedule(ScheduleOp::Tick { .. }) => tick_columns(),
            LogicalPlan::Schedule(ScheduleOp::ExplainSchedule) => vec!["plan".into()],
            LogicalPlan::Schedule(_) => Vec::new(),
        };
        let tracks_changes = plan.tracks_changes();
        let mut exec = match plan {
            LogicalPlan::Select(s) => Executable::Select(PhysicalSelect::new(s, world, options)),
            LogicalPlan::Explain(s) => Executable::Explain(PhysicalSelect::new(s, world, options)),
            LogicalPlan::Spawn(v) => Executable::Spawn(v),
            LogicalPlan::Despawn(src) => Executable::Despawn(ScanPlan::new(&src, world, options)),
            LogicalPlan::Add(v, src) => Executable::Add(v, ScanPlan::new(&src, world, options)),
            LogicalPlan::Remove(c, src) => Executable::Remove(c, ScanPlan::new(&src, world, options)),
            LogicalPlan::Update { component, assignments, source, .. } => {
                let scan = ScanPlan::new(&source, world, options);
                Executable::Update { component, assignments, scan, buffers: StagingBuffers::default() }
            }
            LogicalPlan::CreateComponent(def, refs, defaults) => Executable::CreateComponent(def, refs, defaults),
            LogicalPlan::CreateIndex { def, span } => Executable::CreateIndex { def, span },
            LogicalPlan::DropIndex(name, span) => Executable::DropIndex(name, span),
            LogicalPlan::AlterComponent(plan) => Executable::AlterComponent(plan),
            LogicalPlan::Show(k) => Executable::Show(k),
            LogicalPlan::Describe(id) => Executable::Describe(id),
            LogicalPlan::Schedule(op) => Executable::Schedule(op),
        };
        if tracks_changes {
            match &mut exec {
                Executable::Select(p) | Executable::Explain(p) => p.scan.track_changes(),
                Executable::Despawn(scan)
                | Executable::Add(_, scan)
                | Executable::Remove(_, scan)
                | Executable::Update { scan, .. } => scan.track_changes(),
                _ => {}
            }
        }
        let layout_version = world.components().layout_version();
        Prepared { world_id: world.id(), layout_version, exec, params, columns, span, tracks_changes }
    }

    /// The result's column names.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Whether a statement cache may keep it for another run of its text: its runs keep no
    /// state a one-shot statement must not see, and it does not define the catalog.
    pub(crate) fn is_cacheable(&self) -> bool {
        !self.tracks_changes
            && !matches!(
                self.exec,
                Executable::CreateComponent(..)
                    | Executable::AlterComponent(..)
                    | Executable::CreateIndex { .. }
                    | Executable::DropIndex(..)
                    | Executable::Schedule(_)
            )
    }

    /// The statement's span in its text.
    pub(crate) fn span(&self) -> Span {
        self.span
    }

    /// Whether running it cannot change the world.
    pub fn is_read_only(&self) -> bool {
        matches!(
            self.exec,
            Executable::Select(_)
                | Executable::Explain(_)
                | Executable::Show(_)
                | Executable::Describe(_)
                | Executable::Schedule(ScheduleOp::ExplainSchedule)
        )
    }

    /// The statement's parameters, in order of first use (`$1`, `$name`, …).
    pub fn parameters(&self) -> Vec<String> {
        self.params.iter().map(|p| p.key.to_string()).collect()
    }

    fn check_world(&self, world: &World) -> Result<(), Error> {
        if world.id() != self.world_id {
            return Err(Error::new(ErrorKind::Constraint, "this prepared statement belongs to another database"));
        }
        if world.components().layout_version() != self.layout_version {
            return Err(Error::new(
                ErrorKind::Constraint,
                "a component this database holds changed its fields (ALTER COMPONENT) since this statement was \
                 prepared: prepare it again",
            )
            .with_span(self.span));
        }
        Ok(())
    }

    /// Runs the statement (any kind) with `params`: `()`, an array or tuple of positional
    /// values, a map of named ones, or [`Params`].
    pub fn execute(&mut self, db: &mut Database, params: impl Into<Params>) -> Result<ResultSet, Error> {
        self.run(db, &params.into())
    }

    /// [`Prepared::execute`] with parameters already built.
    pub(crate) fn run(&mut self, db: &mut Database, params: &Params) -> Result<ResultSet, Error> {
        self.check_world(db.world.get())?;
        let values = resolve_params(&self.params, params)?;
        if let Executable::Schedule(op) = &self.exec {
            return db.run_schedule_op(op);
        }
        if let Executable::AlterComponent(plan) = &self.exec {
            return db.run_alter(plan, &values);
        }
        if let Executable::Show(ShowKind::Systems) = &self.exec {
            return Ok(db.schedule.show(db.world.get()));
        }
        let world = db.world.get_mut();
        match &mut self.exec {
            Executable::Spawn(v) => mutate::spawn(world, v, &values),
            Executable::Despawn(scan) => {
                scan.refresh(world);
                mutate::despawn(world, scan, &values)
            }
            Executable::Add(v, scan) => {
                scan.refresh(world);
                mutate::add(world, v, scan, &values)
            }
            Executable::Remove(c, scan) => {
                scan.refresh(world);
                mutate::remove(world, c, scan, &values)
            }
            Executable::Update { component, assignments, scan, buffers } => {
                scan.refresh(world);
                crate::execute::update::update(world, *component, assignments, scan, &values, buffers)
            }
            Executable::CreateComponent(def, refs, defaults) => catalog::create_component(world, def, refs, defaults),
            Executable::CreateIndex { def, span } => catalog::create_index(world, def, *span),
            Executable::DropIndex(name, span) => catalog::drop_index(world, name, *span),
            _ => self.run_read(world, &values),
        }
    }

    /// Runs a read-only statement on a shared database; a mutating one is a `constraint` error.
    pub fn query(&mut self, db: &Database, params: impl Into<Params>) -> Result<ResultSet, Error> {
        self.run_query(db, &params.into())
    }

    /// [`Prepared::query`] with parameters already built.
    pub(crate) fn run_query(&mut self, db: &Database, params: &Params) -> Result<ResultSet, Error> {
        self.check_world(db.world.get())?;
        if !self.is_read_only() {
            return Err(mutates_error(self.span));
        }
        let values = resolve_params(&self.params, params)?;
        match &self.exec {
            Executable::Schedule(ScheduleOp::ExplainSchedule) => Ok(db.explain_schedule()),
            Executable::Show(ShowKind::Systems) => Ok(db.schedule.show(db.world.get())),
            _ => self.run_read(db.world.get(), &values),
        }
    }

    /// Runs one statement of a system on a shared world: reads run, writes are checked and
    /// returned to be applied later. With `in_place`, an UPDATE that can be rewritten in place
    /// is left to be rewritten when it is applied (see `stage_update`): only for a caller that
    /// applies it to this world before anything else writes what it reads.
    fn stage_on(&mut self, world: &World, params: &Params, in_place: bool) -> Result<Step, Error> {
        let values = resolve_params(&self.params, params)?;
        let staged = match &mut self.exec {
            Executable::Spawn(v) => mutate::stage_spawn(world, v, &values)?,
            Executable::Despawn(scan) => {
                scan.refresh(world);
                mutate::stage_despawn(world, scan, &values)?
            }
            Executable::Add(v, scan) => {
                scan.refresh(world);
                mutate::stage_add(world, v, scan, &values)?
            }
            Executable::Remove(c, scan) => {
                scan.refresh(world);
                mutate::stage_remove(world, c, scan, &values)?
            }
            Executable::Update { component, assignments, scan, buffers } => {
                scan.refresh(world);
                mutate::Staged::Update(crate::execute::update::stage_update(
                    world,
                    *component,
                    assignments,
                    scan,
                    &values,
                    buffers,
                    in_place,
                )?)
            }
            Executable::Select(phys) => {
                phys.refresh(world);
                return Ok(Step::Read(select::stream_select(phys, world, &values, &mut |_| {})?));
            }
            _ => {
                return Err(Error::internal(
                    "a system statement must be SELECT, SPAWN, DESPAWN, ADD, REMOVE or UPDATE",
                ));
            }
        };
        Ok(Step::Staged(staged))
    }

    /// Runs a read-only statement, handing each result row to `f` in order rather than
    /// building a [`ResultSet`] (the column names are [`Prepared::columns`]). A plain
    /// projection streams from the scan without allocating per row: the way to read a large
    /// result into your own structures. Returns the number of rows.
    ///
    /// ```
    /// use ecsdb_query::{Database, Params};
    /// let mut db = Database::new();
    /// db.execute_script("CREATE COMPONENT Health (hp f32); SPAWN Health {hp: 5}; SPAWN Health {hp: 50}").unwrap();
    /// let mut low = db.prepare("SELECT entity, Health.hp WHERE Health.hp < $1").unwrap();
    /// let mut hps: Vec<f64> = Vec::new();
    /// let n = low.query_each(&db, [10], |row| hps.extend(row[1].as_f64())).unwrap();
    /// assert_eq!((n, hps), (1, vec![5.0]));
    /// ```
    pub fn query_each(
        &mut self,
        db: &Database,
        params: impl Into<Params>,
        mut f: impl FnMut(&[Value]),
    ) -> Result<usize, Error> {
        self.check_world(db.world.get())?;
        if !self.is_read_only() {
            return Err(mutates_error(self.span));
        }
        let params = params.into();
        let values = resolve_params(&self.params, &params)?;
        if let Executable::Select(phys) = &mut self.exec {
            phys.refresh(db.world.get());
            return select::stream_select(phys, db.world.get(), &values, &mut f);
        }
        let rs = self.run_read(db.world.get(), &values)?;
        rs.rows.iter().for_each(|r| f(r));
        Ok(rs.rows.len())
    }

    fn run_read(&mut self, world: &World, values: &[Value]) -> Result<ResultSet, Error> {
        match &mut self.exec {
            Executable::Select(phys) => {
                phys.refresh(world);
                select::execute_select(phys, world, values)
            }
            Executable::Explain(phys) => {
                phys.refresh(world);
                let lines = explain_select(phys, world, &self.params);
                Ok(ResultSet {
                    columns: vec!["plan".into()],
                    rows: lines.into_iter().map(|l| vec![Value::Str(l)]).collect(),
                })
            }
            Executable::Show(k) => Ok(catalog::show(world, *k)),
            Executable::Describe(id) => Ok(catalog::describe(world, *id)),
            _ => Err(mutates_error(self.span)),
        }
    }

    /// The EXPLAIN lines of a prepared SELECT (`None` for other statements).
    pub fn explain(&mut self, db: &Database) -> Option<Vec<String>> {
        match &mut self.exec {
            Executable::Select(phys) | Executable::Explain(phys) => {
                phys.refresh(db.world.get());
                Some(explain_select(phys, db.world.get(), &self.params))
            }
            _ => None,
        }
    }
}

impl SystemStatement for Prepared {
    fn stage(&mut self, world: &World, params: &Params, in_place: bool) -> Result<Step, Error> {
        self.stage_on(world, params, in_place)
    }
}
