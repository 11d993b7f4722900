//! Command buffers: structural changes recorded now, applied later in one call.
//!
//! Systems that iterate the world cannot spawn, despawn, insert or remove while they hold it;
//! they record commands instead and the buffer is applied when iteration ends.

use crate::bundle::Bundle;
use crate::entity::Entity;
use crate::error::EngineError;
use crate::world::World;

type Deferred = Box<dyn FnOnce(&mut World) -> Result<Option<Entity>, EngineError> + Send>;

/// A list of structural changes to apply to a world later, in order.
///
/// ```
/// use ecsdb_engine::{CommandBuffer, Component, World};
/// #[derive(Component)] struct Hp { v: f32 }
/// let mut world = World::new();
/// let a = world.spawn(Hp { v: 0.0 });
/// let mut cmd = CommandBuffer::new();
/// for (e, hp) in world.query::<(ecsdb_engine::Entity, &Hp)>() {
///     if hp.v <= 0.0 { cmd.despawn(e); }
/// }
/// cmd.spawn(Hp { v: 5.0 });
/// let report = cmd.apply(&mut world);
/// assert!(report.errors.is_empty());
/// assert!(!world.is_alive(a));
/// assert_eq!(world.len(), 1);
/// ```
#[derive(Default)]
pub struct CommandBuffer {
    commands: Vec<Deferred>,
}

/// What applying a buffer did.
#[derive(Debug, Default)]
pub struct ApplyReport {
    /// Entities spawned, in command order.
    pub spawned: Vec<Entity>,
    /// Commands that failed (by position in the buffer) and why. A failing command changes
    /// nothing; the others still apply.
    pub errors: Vec<(usize, EngineError)>,
}

impl CommandBuffer {
    /// An empty buffer.
    pub fn new() -> CommandBuffer {
        CommandBuffer::default()
    }

    /// Number of recorded commands.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Records a spawn.
    pub fn spawn<B: Bundle>(&mut self, bundle: B) {
        self.commands.push(Box::new(move |w| w.try_spawn(bundle).map(Some)));
    }

    /// Records a despawn.
    pub fn despawn(&mut self, e: Entity) {
        self.commands.push(Box::new(move |w| w.despawn(e).map(|_| None)));
    }

    /// Records an insert.
    pub fn insert<B: Bundle>(&mut self, e: Entity, bundle: B) {
        self.commands.push(Box::new(move |w| w.insert(e, bundle).map(|_| None)));
    }

    /// Records a removal (the removed values are dropped).
    pub fn remove<B: Bundle>(&mut self, e: Entity) {
        self.commands.push(Box::new(move |w| w.remove::<B>(e).map(|_| None)));
    }

    /// Records an arbitrary change.
    pub fn push(&mut self, f: impl FnOnce(&mut World) -> Result<(), EngineError> + Send + 'static) {
        self.commands.push(Box::new(move |w| f(w).map(|_| None)));
    }

    /// Applies every command in order and empties the buffer.
    pub fn apply(&mut self, world: &mut World) -> ApplyReport {
        let mut report = ApplyReport::default();
        for (i, cmd) in self.commands.drain(..).enumerate() {
            match cmd(world) {
                Ok(Some(e)) => report.spawned.push(e),
                Ok(None) => {}
                Err(err) => report.errors.push((i, err)),
            }
        }
        report
    }
}
