//! The states of the one-shot queries a world has run (see `query::one_shot`), kept here
//! type-erased so that the world holds them without depending on the query module above it.

use std::any::{Any, TypeId};

use crate::component::TypeIdMap;

/// The states of the one-shot queries a world has run, by query type (lifetimes erased).
#[derive(Default)]
pub(crate) struct QueryCache {
    states: TypeIdMap<Box<dyn Any + Send + Sync>>,
}

impl QueryCache {
    /// The state kept under `key`, if it is a `T`.
    pub(crate) fn get_mut<T: Any>(&mut self, key: TypeId) -> Option<&mut T> {
        self.states.get_mut(&key)?.downcast_mut()
    }

    /// Keeps `state` under `key`.
    pub(crate) fn insert<T: Any + Send + Sync>(&mut self, key: TypeId, state: T) {
        self.states.insert(key, Box::new(state));
    }
}
