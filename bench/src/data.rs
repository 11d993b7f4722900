//! Generated data shared by the suites: a seeded RNG and the 1M-entity "game world" of the
//! query and snapshot suites, so every suite and every library sees identical inputs.

/// A small seeded xorshift generator: reproducible inputs without a dependency.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1) with 24 bits of precision.
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The team names of the game world (a 4-value field).
pub const TEAMS: [&str; 4] = ["red", "blue", "green", "yellow"];

/// One entity of the game world, the same for every library.
pub struct Row {
    pub pos: [f32; 3],
    pub vel: [f32; 3],
    pub hp: f32,
    pub max: f32,
    /// Index into [`TEAMS`].
    pub team: usize,
    pub level: i32,
    /// Player if true, Monster otherwise.
    pub player: bool,
    pub frozen: bool,
}

/// `n` entities of the game world: positions in a 1000×1000×100 box, hp in [0, 100),
/// 4 teams, levels 1–100, half players, one in ten frozen.
pub fn game_world(n: usize) -> Vec<Row> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|i| Row {
            pos: [rng.unit() * 1000.0, rng.unit() * 1000.0, rng.unit() * 100.0],
            vel: [rng.unit() - 0.5, rng.unit() - 0.5, 0.0],
            hp: rng.unit() * 100.0,
            max: 100.0,
            team: (rng.next() % 4) as usize,
            level: (rng.next() % 100) as i32 + 1,
            player: i % 2 == 0,
            frozen: i % 10 == 0,
        })
        .collect()
}

/// The name of the game world's entity `i` (the expr suite's `Name` component): 2 to 7
/// lowercase letters from a hash of `i`, so the first rows' names stay the same whatever `n`.
pub fn entity_name(i: usize) -> String {
    let mut rng = Rng((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xd1b5_4a32_d192_ed03);
    let len = 2 + (rng.next() % 6) as usize;
    (0..len).map(|_| (b'a' + (rng.next() % 26) as u8) as char).collect()
}

/// The game world's components as Rust types, for the suites that run typed loops and systems
/// beside the text (one definition: every suite's world has the same layout).
pub mod typed {
    use ecsdb::Component;

    /// Where an entity is.
    #[derive(Component, Clone, Copy, Debug)]
    pub struct Position {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    /// How it moves each tick.
    #[derive(Component, Clone, Copy, Debug)]
    pub struct Velocity {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    /// Its health.
    #[derive(Component, Clone, Copy, Debug)]
    pub struct Health {
        pub hp: f32,
        pub max: f32,
    }
}
