//! GROUP BY and the aggregates, column-at-a-time.
//!
//! For each batch of selected rows the sink first maps every row to its group number (a
//! string-field key is matched on the column's `&str` directly, with a short linear list
//! before a hash map, so the common "few groups" case never hashes), then updates each
//! aggregate over the batch. An aggregate over a plain numeric column reads the column
//! through its typed view; anything else goes through the batch evaluator.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use ecsdb_engine::{Value, ValueType};

use crate::error::{Error, ErrorKind};
use crate::execute::scan::{Sink, SlotReader, TableCtx};
use crate::expr::ops::{self, KeyValue};
use crate::expr::{AggregateExpr, Expr, ExprKind};
use crate::expr::{Evaluator, Leaves, Vector, eval_error};
use crate::plan::logical::SelectPlan;
use crate::types::AggFunc;
use ecsdb_engine::storage::FieldView;

/// FNV-1a: short keys (team names, small ints) hash faster than with SipHash, and group keys
/// are not attacker-controlled in a way that matters for an in-process database.
#[derive(Default, Clone, Copy)]
pub struct FnvHasher(u64);

impl Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FnvHasher>>;

/// Groups found so far: their key values, and the lookup structures.
struct Groups<'w> {
    keys: Vec<Vec<Value>>,
    small: Vec<(&'w str, u32)>,
    by_str: FastMap<&'w str, u32>,
    by_value: FastMap<Vec<KeyValue>, u32>,
}

const SMALL_GROUPS: usize = 8;

impl<'w> Groups<'w> {
    /// The group of a string key seen through the fast structures or the general map.
    fn find_str(&self, s: &str) -> Option<u32> {
        if let Some(&(_, g)) = self.small.iter().find(|(k, _)| *k == s) {
            return Some(g);
        }
        if let Some(&g) = self.by_str.get(s) {
            return Some(g);
        }
        if self.by_value.is_empty() {
            return None;
        }
        self.by_value.get(&vec![KeyValue(Value::Str(s.to_string()))]).copied()
    }

    fn remember(&mut self, s: &'w str, g: u32) {
        if self.by_str.is_empty() && self.small.len() < SMALL_GROUPS {
            self.small.push((s, g));
        } else {
            self.by_str.extend(self.small.drain(..));
            self.by_str.insert(s, g);
        }
    }

    /// The group of a string key read from a column.
    #[inline]
    fn str_group(&mut self, s: &'w str) -> u32 {
        if let Some(&(_, g)) = self.small.iter().find(|(k, _)| *k == s) {
            return g;
        }
        if let Some(&g) = self.by_str.get(s) {
            return g;
        }
        let g = match self.find_str(s) {
            Some(g) => g,
            None => {
                self.keys.push(vec![Value::Str(s.to_string())]);
                (self.keys.len() - 1) as u32
            }
        };
        self.remember(s, g);
        g
    }

    fn value_group(&mut self, key: Vec<Value>) -> u32 {
        let k: Vec<KeyValue> = key.iter().cloned().map(KeyValue).collect();
        if let Some(&g) = self.by_value.get(&k) {
            return g;
        }
        let g = self.keys.len() as u32;
        self.by_value.insert(k, g);
        self.keys.push(key);
        g
    }
}

/// One aggregate's running state, one entry per group.
enum Acc {
    Count(Vec<i64>),
    SumInt(Vec<Option<i64>>),
    SumFloat(Vec<Option<f64>>),
    SumAny(Vec<Value>),
    Avg(Vec<(f64, i64)>),
    MinMaxF { best: Vec<Option<f64>>, max: bool },
    MinMaxI { best: Vec<Option<i64>>, max: bool },
    MinMax { best: Vec<Value>, max: bool },
}

impl Acc {
    fn new(a: &AggregateExpr) -> Acc {
        let arg_ty = a.arg.as_ref().map_or(ValueType::Int, |e| e.ty);
        match a.func {
            AggFunc::Count => Acc::Count(Vec::new()),
            AggFunc::Sum => match arg_ty {
                ValueType::Int => Acc::SumInt(Vec::new()),
                ValueType::Float => Acc::SumFloat(Vec::new()),
                _ => Acc::SumAny(Vec::new()),
            },
            AggFunc::Avg => Acc::Avg(Vec::new()),
            AggFunc::Min | AggFunc::Max => {
                let max = a.func == AggFunc::Max;
                match arg_ty {
                    ValueType::Float => Acc::MinMaxF { best: Vec::new(), max },
                    ValueType::Int => Acc::MinMaxI { best: Vec::new(), max },
                    _ => Acc::MinMax { best: Vec::new(), max },
                }
            }
        }
    }

    fn grow(&mut self, n: usize) {
        match self {
            Acc::Count(v) => v.resize(n, 0),
            Acc::SumInt(v) => v.resize(n, None),
            Acc::SumFloat(v) => v.resize(n, None),
            Acc::SumAny(v) => v.resize(n, Value::Null),
            Acc::Avg(v) => v.resize(n, (0.0, 0)),
            Acc::MinMaxF { best, .. } => best.resize(n, None),
            Acc::MinMaxI { best, .. } => best.resize(n, None),
            Acc::MinMax { best, .. } => best.resize(n, Value::Null),
        }
    }

    #[inline]
    fn add_f64(&mut self, g: usize, x: f64) -> Result<(), String> {
        match self {
            Acc::Count(v) => v[g] += 1,
            Acc::SumFloat(v) => v[g] = Some(v[g].unwrap_or(0.0) + x),
            Acc::Avg(v) => {
                v[g].0 += x;
                v[g].1 += 1;
            }
            Acc::MinMaxF { best, max } => {
                let b = &mut best[g];
                if b.is_none_or(|cur| if *max { x > cur } else { x < cur }) {
                    *b = Some(x);
                }
            }
            _ => return self.add_value(g, &Value::Float(x)),
        }
        Ok(())
    }

    #[inline]
    fn add_i64(&mut self, g: usize, x: i64) -> Result<(), String> {
        match self {
            Acc::Count(v) => v[g] += 1,
            Acc::SumInt(v) => {
                v[g] = Some(v[g].unwrap_or(0).checked_add(x).ok_or_else(|| "integer overflow in sum()".to_string())?)
            }
            Acc::Avg(v) => {
                v[g].0 += x as f64;
                v[g].1 += 1;
            }
            Acc::MinMaxI { best, max } => {
                let b = &mut best[g];
                if b.is_none_or(|cur| if *max { x > cur } else { x < cur }) {
                    *b = Some(x);
                }
            }
            _ => return self.add_value(g, &Value::Int(x)),
        }
        Ok(())
    }

    fn add_value(&mut self, g: usize, v: &Value) -> Result<(), String> {
        if v.is_null() {
            return Ok(());
        }
        let not_number = || format!("cannot aggregate {} as a number", v.describe());
        match self {
            Acc::Count(c) => c[g] += 1,
            Acc::SumInt(s) => match v {
                Value::Int(i) => return self.add_i64(g, *i),
                _ => {
                    // A parameter or registered function turned out to be a float: promote.
                    let x = v.as_f64().ok_or_else(not_number)?;
                    let cur = s[g].map(|i| i as f64).unwrap_or(0.0);
                    let mut floats: Vec<Option<f64>> = s.iter().map(|o| o.map(|i| i as f64)).collect();
                    floats[g] = Some(cur + x);
                    *self = Acc::SumFloat(floats);
                }
            },
            Acc::SumFloat(s) => s[g] = Some(s[g].unwrap_or(0.0) + v.as_f64().ok_or_else(not_number)?),
            Acc::SumAny(s) => {
                if v.as_f64().is_none() {
                    return Err(not_number());
                }
                s[g] = if s[g].is_null() { v.clone() } else { ops::binary(crate::types::BinaryOp::Add, &s[g], v)? };
            }
            Acc::Avg(a) => {
                a[g].0 += v.as_f64().ok_or_else(not_number)?;
                a[g].1 += 1;
            }
            Acc::MinMaxF { .. } => return self.add_f64(g, v.as_f64().ok_or_else(not_number)?),
            Acc::MinMaxI { .. } => match v {
                Value::Int(i) => return self.add_i64(g, *i),
                _ => return Err(not_number()),
            },
            Acc::MinMax { best, max } => {
                let b = &mut best[g];
                let better = b.is_null() || {
                    let o = ops::compare(v, b)?;
                    o.is_some_and(|o| if *max { o.is_gt() } else { o.is_lt() })
                };
                if better {
                    *b = v.clone();
                }
            }
        }
        Ok(())
    }

    fn result(&self, g: usize) -> Value {
        match self {
            Acc::Count(v) => Value::Int(v.get(g).copied().unwrap_or(0)),
            Acc::SumInt(v) => v.get(g).copied().flatten().map_or(Value::Null, Value::Int),
            Acc::SumFloat(v) => v.get(g).copied().flatten().map_or(Value::Null, Value::Float),
            Acc::SumAny(v) => v.get(g).cloned().unwrap_or(Value::Null),
            Acc::Avg(v) => match v.get(g) {
                Some(&(s, n)) if n > 0 => Value::Float(s / n as f64),
                _ => Value::Null,
            },
            Acc::MinMaxF { best, .. } => best.get(g).copied().flatten().map_or(Value::Null, Value::Float),
            Acc::MinMaxI { best, .. } => best.get(g).copied().flatten().map_or(Value::Null, Value::Int),
            Acc::MinMax { best, .. } => best.get(g).cloned().unwrap_or(Value::Null),
        }
    }
}

/// Folds a batch of floats into an accumulator: one loop per accumulator kind.
fn fold_f64(acc: &mut Acc, xs: &[f64], gids: &[u32]) -> Result<(), String> {
    match acc {
        Acc::Count(c) => {
            for &g in gids {
                c[g as usize] += 1;
            }
        }
        Acc::SumFloat(v) => {
            for (&x, &g) in xs.iter().zip(gids) {
                let s = &mut v[g as usize];
                *s = Some(s.unwrap_or(0.0) + x);
            }
        }
        Acc::Avg(v) => {
            for (&x, &g) in xs.iter().zip(gids) {
                let a = &mut v[g as usize];
                a.0 += x;
                a.1 += 1;
            }
        }
        Acc::MinMaxF { best, max } => {
            let max = *max;
            for (&x, &g) in xs.iter().zip(gids) {
                let b = &mut best[g as usize];
                match b {
                    Some(cur) => {
                        if (max && x > *cur) || (!max && x < *cur) {
                            *cur = x;
                        }
                    }
                    None => *b = Some(x),
                }
            }
        }
        other => {
            for (&x, &g) in xs.iter().zip(gids) {
                other.add_f64(g as usize, x)?;
            }
        }
    }
    Ok(())
}

/// Folds a batch of evaluated values into an accumulator: floats and ints straight from their
/// typed vectors (nulls skipped), anything else value by value.
fn fold_vector(acc: &mut Acc, values: &Vector<'_>, gids: &[u32]) -> Result<(), String> {
    match values {
        Vector::Float(p) if p.valid.is_none() => fold_f64(acc, &p.values, gids),
        Vector::Float(p) => {
            for (i, &g) in gids.iter().enumerate() {
                if let Some(x) = p.get(i) {
                    acc.add_f64(g as usize, x)?;
                }
            }
            Ok(())
        }
        Vector::Int(p) => {
            for (i, &g) in gids.iter().enumerate() {
                if let Some(x) = p.get(i) {
                    acc.add_i64(g as usize, x)?;
                }
            }
            Ok(())
        }
        other => {
            for (i, &g) in gids.iter().enumerate() {
                acc.add_value(g as usize, &other.value(i))?;
            }
            Ok(())
        }
    }
}

/// How group numbers are found.
enum KeyMode {
    /// No GROUP BY: one group.
    Single,
    /// One string field: matched on the column's `&str`.
    StrField { slot: usize, field: usize },
    /// Anything else: evaluated, then hashed.
    General,
}

/// The aggregation sink.
pub struct AggregateSink<'w, 'p> {
    plan: &'p SelectPlan,
    params: &'p [Value],
    mode: KeyMode,
    groups: Groups<'w>,
    accs: Vec<Acc>,
    gids: Vec<u32>,
}

impl<'w, 'p> AggregateSink<'w, 'p> {
    /// A sink computing `plan`'s groups and aggregates.
    pub fn new(plan: &'p SelectPlan, params: &'p [Value]) -> Self {
        let mode = match plan.group_by.as_slice() {
            [] => KeyMode::Single,
            [Expr { kind: ExprKind::Field { slot, field }, ty: ValueType::Str, .. }] => {
                KeyMode::StrField { slot: *slot, field: *field }
            }
            _ => KeyMode::General,
        };
        let mut accs: Vec<Acc> = plan.aggregates.iter().map(Acc::new).collect();
        let mut groups =
            Groups { keys: Vec::new(), small: Vec::new(), by_str: FastMap::default(), by_value: FastMap::default() };
        if matches!(mode, KeyMode::Single) {
            groups.keys.push(Vec::new());
            accs.iter_mut().for_each(|a| a.grow(1));
        }
        AggregateSink { plan, params, mode, groups, accs, gids: Vec::new() }
    }

    fn assign_groups(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<(), Error> {
        self.gids.clear();
        let before = self.groups.keys.len();
        match self.mode {
            KeyMode::Single => self.gids.resize(rows.len(), 0),
            KeyMode::StrField { slot, field } => {
                if let Some(SlotReader::Dense(readers)) = ctx.slots.get(slot)
                    && let Some(FieldView::Str(col)) = readers.get(field).copied()
                {
                    for &r in rows {
                        let g = match col.get(r as usize) {
                            Some(s) => self.groups.str_group(s.as_str()),
                            None => self.groups.value_group(vec![Value::Null]),
                        };
                        self.gids.push(g);
                    }
                    return self.grow_accs(before);
                }
                self.general_groups(ctx, rows)?;
            }
            KeyMode::General => self.general_groups(ctx, rows)?,
        }
        self.grow_accs(before)
    }

    fn general_groups(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<(), Error> {
        let ev = Evaluator::new(ctx, self.params);
        let cols: Vec<Vector<'w>> = self.plan.group_by.iter().map(|k| ev.eval(k, rows)).collect::<Result<_, _>>()?;
        let str_mode = matches!(self.mode, KeyMode::StrField { .. });
        for i in 0..rows.len() {
            let key: Vec<Value> = cols.iter().map(|c| c.value(i)).collect();
            // One string key: the fast structures may already know it (from column reads).
            let known = match key.as_slice() {
                [Value::Str(s)] if str_mode => self.groups.find_str(s),
                _ => None,
            };
            let g = match known {
                Some(g) => g,
                None => self.groups.value_group(key),
            };
            self.gids.push(g);
        }
        Ok(())
    }

    fn grow_accs(&mut self, before: usize) -> Result<(), Error> {
        let n = self.groups.keys.len();
        if n != before {
            self.accs.iter_mut().for_each(|a| a.grow(n));
        }
        Ok(())
    }

    fn update(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<(), Error> {
        // Columns read this batch, shared by aggregates over the same field.
        let mut floats: Vec<((usize, usize), Vec<f64>)> = Vec::new();
        let mut ints: Vec<((usize, usize), Vec<i64>)> = Vec::new();
        for (j, agg) in self.plan.aggregates.iter().enumerate() {
            let acc = &mut self.accs[j];
            let Some(arg) = &agg.arg else {
                if let Acc::Count(c) = acc {
                    for &g in &self.gids {
                        c[g as usize] += 1;
                    }
                }
                continue;
            };
            let err = |m: String| Error::new(ErrorKind::Type, m).with_span(arg.span);
            // A plain numeric column: read it once through its typed view, then fold it.
            if let ExprKind::Field { slot, field } = arg.kind
                && let Some(SlotReader::Dense(readers)) = ctx.slots.get(slot)
                && let Some(reader) = readers.get(field)
            {
                let key = (slot, field);
                if reader.is_exact_f64() && !reader.is_int() {
                    if !floats.iter().any(|(k, _)| *k == key) {
                        let mut xs = Vec::with_capacity(rows.len());
                        reader.read_f64_rows(rows, &mut xs);
                        floats.push((key, xs));
                    }
                    let xs = floats.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_slice()).unwrap_or(&[]);
                    fold_f64(acc, xs, &self.gids).map_err(err)?;
                    continue;
                }
                if reader.is_int() {
                    if !ints.iter().any(|(k, _)| *k == key) {
                        let mut xs = Vec::with_capacity(rows.len());
                        reader.read_i64_rows(rows, &mut xs);
                        ints.push((key, xs));
                    }
                    let xs = ints.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_slice()).unwrap_or(&[]);
                    for (&x, &g) in xs.iter().zip(&self.gids) {
                        acc.add_i64(g as usize, x).map_err(err)?;
                    }
                    continue;
                }
            }
            // Any other expression: evaluated into a typed vector, folded without Values where
            // it is numeric.
            let values = Evaluator::new(ctx, self.params).eval(arg, rows)?;
            fold_vector(acc, &values, &self.gids).map_err(|m| eval_error(arg, m))?;
        }
        Ok(())
    }

    /// The groups: their key values and aggregate results.
    pub fn finish(self) -> GroupRows {
        let n = self.groups.keys.len();
        let aggs: Vec<Vec<Value>> = self.accs.iter().map(|a| (0..n).map(|g| a.result(g)).collect()).collect();
        GroupRows { keys: self.groups.keys, aggs }
    }
}

impl<'w> Sink<'w> for AggregateSink<'w, '_> {
    fn rows(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<bool, Error> {
        self.assign_groups(ctx, rows)?;
        self.update(ctx, rows)?;
        Ok(true)
    }
}

/// Whether `plan` aggregates nothing but `count(*)`, over one group (no GROUP BY): then a
/// [`CountSink`] computes it.
pub fn counts_rows_only(plan: &SelectPlan) -> bool {
    plan.group_by.is_empty() && plan.aggregates.iter().all(|a| a.func == AggFunc::Count && a.arg.is_none())
}

/// The sink of a statement whose only aggregate is `count(*)` over one group: it adds up
/// rows, so an index answer or an unfiltered table is counted without a row list, and the
/// statement keeps no group state.
#[derive(Default)]
pub struct CountSink {
    /// Rows counted so far.
    pub rows: usize,
}

impl<'w> Sink<'w> for CountSink {
    fn count_only(&self) -> bool {
        true
    }

    fn count(&mut self, n: usize) {
        self.rows += n;
    }

    fn rows(&mut self, _: &TableCtx<'w>, rows: &[u32]) -> Result<bool, Error> {
        self.rows += rows.len();
        Ok(true)
    }
}

/// The result of aggregation: per group, the key values and each aggregate's value.
pub struct GroupRows {
    /// Per group, the GROUP BY values.
    pub keys: Vec<Vec<Value>>,
    /// Per aggregate, per group, its value.
    pub aggs: Vec<Vec<Value>>,
}

impl GroupRows {
    /// The one group of a statement counting `rows`, with `aggregates` `count(*)`s.
    pub fn counted(rows: usize, aggregates: usize) -> GroupRows {
        GroupRows { keys: vec![Vec::new()], aggs: vec![vec![Value::Int(rows as i64)]; aggregates] }
    }
}

impl<'w> Leaves<'w> for GroupRows {
    fn leaf(&self, e: &Expr, rows: &[u32]) -> Result<Vector<'w>, Error> {
        let mut out = Vec::with_capacity(rows.len());
        for &g in rows {
            let v = match e.kind {
                ExprKind::GroupKey(k) => self.keys.get(g as usize).and_then(|ks| ks.get(k)).cloned(),
                ExprKind::Aggregate(a) => self.aggs.get(a).and_then(|vs| vs.get(g as usize)).cloned(),
                _ => {
                    return Err(Error::new(
                        ErrorKind::Type,
                        "this value is neither grouped nor aggregated (add it to GROUP BY or aggregate it)",
                    )
                    .with_span(e.span));
                }
            };
            out.push(v.unwrap_or(Value::Null));
        }
        Ok(Vector::from_values(out))
    }
}
