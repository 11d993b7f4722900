//! Registering the serde functions of opaque components (kept in
//! `component::opaque_serde`), for snapshots.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::component::{Component, ComponentId};
use crate::error::Result;
use crate::world::World;

impl World {
    /// Registers a component type together with its serde implementation, so that snapshots
    /// can save and load its values. Needed for opaque components (those
    /// without a schema); components with a schema are always saved field by field, and this
    /// registration is not used for them.
    ///
    /// Register before loading a snapshot that holds the component (see
    /// [`World::load_into`]).
    ///
    /// ```
    /// use ecsdb_engine::{Component, SaveOptions, World};
    /// #[derive(Component, serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    /// #[component(opaque)]
    /// struct Inventory(Vec<(String, u32)>);
    ///
    /// let mut world = World::new();
    /// world.register_opaque_serde::<Inventory>().unwrap();
    /// let e = world.spawn(Inventory(vec![("apple".into(), 3)]));
    /// let bytes = world.save_to_vec(&SaveOptions::default()).unwrap();
    ///
    /// let mut loaded = World::new();
    /// loaded.register_opaque_serde::<Inventory>().unwrap();
    /// loaded.load_bytes_into(&bytes, &Default::default()).unwrap();
    /// assert_eq!(loaded.get::<Inventory>(e).unwrap().0[0].1, 3);
    /// ```
    pub fn register_opaque_serde<T: Component + Serialize + DeserializeOwned>(&mut self) -> Result<ComponentId> {
        let id = self.register::<T>()?;
        self.opaque_serde.insert::<T>();
        Ok(id)
    }
}
