//! SHOW SYSTEMS and EXPLAIN SCHEDULE.

use ecsdb_engine::{Value, World};

use super::{Body, Phase, Schedule};
use crate::execute::catalog::SHOW_SYSTEMS_COLUMNS;
use crate::result::ResultSet;

impl Schedule {
    /// `SHOW SYSTEMS`: every system in phase, then run order.
    pub(crate) fn show(&self, world: &World) -> ResultSet {
        let mut rs = ResultSet::empty(SHOW_SYSTEMS_COLUMNS.iter().map(|c| c.to_string()).collect());
        let positions = self.positions();
        for batches in &self.batches {
            for &i in batches.iter().flatten() {
                let s = &self.systems[i];
                rs.rows.push(vec![
                    Value::Str(s.name.clone()),
                    Value::Str(s.phase.name().into()),
                    Value::Int(positions[i] as i64),
                    Value::Str(s.access.reads_text(world)),
                    Value::Str(s.access.writes_text(world)),
                    Value::Int(s.stats.runs as i64),
                    Value::Int(s.stats.rows as i64),
                    Value::Float(s.stats.total.as_secs_f64() * 1e3),
                    s.stats.last_error.clone().map_or(Value::Null, Value::Str),
                ]);
            }
        }
        rs
    }

    /// `EXPLAIN SCHEDULE`: per phase, the batches in order; a system that starts a batch
    /// says which system of the batch before it waits on.
    pub(crate) fn explain(&self) -> Vec<String> {
        let mut lines = vec![format!("fixed_hz {}, tick {}", self.fixed_hz, self.tick)];
        for (p, phase) in Phase::ALL.into_iter().enumerate() {
            let batches = &self.batches[p];
            if batches.is_empty() {
                continue;
            }
            let runs = if phase == Phase::FixedUpdate { " (runs while a fixed step is accumulated)" } else { "" };
            lines.push(format!("phase {phase}{runs}"));
            for (b, batch) in batches.iter().enumerate() {
                let names: Vec<String> = batch.iter().map(|&i| self.describe(i)).collect();
                let why = match b.checked_sub(1).map(|prev| &batches[prev]) {
                    None => String::new(),
                    Some(prev) => format!(" -- waits on {}", self.waits_on(batch[0], prev)),
                };
                let together = if batch.len() > 1 { "together: " } else { "" };
                lines.push(format!("  {}. {together}{}{why}", b + 1, names.join(", ")));
            }
        }
        lines
    }

    fn describe(&self, i: usize) -> String {
        let s = &self.systems[i];
        match &s.body {
            Body::Rust(None) => format!("{} (Rust, not registered)", s.name),
            Body::Rust(Some(_)) => format!("{} (Rust)", s.name),
            Body::Broken { .. } => format!("{} (does not bind)", s.name),
            Body::Text { .. } => s.name.clone(),
        }
    }

    /// Why system `i` cannot join batch `prev`.
    fn waits_on(&self, i: usize, prev: &[usize]) -> String {
        let s = &self.systems[i];
        if s.exclusive {
            return format!("everything before it ({} runs alone)", s.name);
        }
        let conflicts: Vec<&str> = prev
            .iter()
            .filter(|&&j| self.systems[j].exclusive || self.systems[j].access.conflicts_with(&s.access))
            .map(|&j| self.systems[j].name.as_str())
            .collect();
        conflicts.join(", ")
    }
}
