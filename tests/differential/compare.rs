//! Comparing an engine result with the reference's [`Expected`].
//!
//! Rows are compared run by run: each output position belongs to the run of the reference row
//! at that position, and the engine's rows of a run must be a sub-multiset of the reference
//! rows of that run (all of it when the run lies inside the LIMIT/OFFSET window). Without
//! ORDER BY there is one run (a multiset comparison; with LIMIT, any subset of the right size);
//! with ORDER BY every plain row is its own run (a sequence comparison), and only groups of an
//! aggregate query that tie on every key share a run.
//!
//! Values compare exactly (`-0.0 = 0.0`; an int never equals a float), except float values in
//! columns whose item contains `sum(…)` or `avg(…)`: those may differ by a relative 1e-9, the
//! summation order being the engine's business.

use ecsdb::Value;

use super::model::show;
use super::reference::{Expected, approx_eq};

pub fn value_eq(a: &Value, b: &Value, tolerant: bool) -> bool {
    let f = |x: f64, y: f64| x == y || (tolerant && approx_eq(x, y));
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => f(*x, *y),
        (Value::Vec2(x), Value::Vec2(y)) => x.iter().zip(y).all(|(p, q)| f(*p, *q)),
        (Value::Vec3(x), Value::Vec3(y)) => x.iter().zip(y).all(|(p, q)| f(*p, *q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k1, v1), (k2, v2))| k1 == k2 && value_eq(v1, v2, tolerant))
        }
        _ => a == b,
    }
}

fn row_eq(a: &[Value], b: &[Value], tolerant: &[bool]) -> bool {
    a.len() == b.len() && a.iter().zip(b).zip(tolerant).all(|((x, y), t)| value_eq(x, y, *t))
}

pub fn show_row(row: &[Value]) -> String {
    let vals: Vec<String> = row.iter().map(show).collect();
    format!("[{}]", vals.join(", "))
}

fn show_rows(rows: &[Vec<Value>], limit: usize) -> String {
    let mut out = String::new();
    for r in rows.iter().take(limit) {
        out += &format!("    {}\n", show_row(r));
    }
    if rows.len() > limit {
        out += &format!("    … {} more\n", rows.len() - limit);
    }
    out
}

/// How the rows are compared, in words.
pub fn order_mode(exp: &Expected) -> &'static str {
    let runs = exp.runs.last().map_or(0, |r| r + 1);
    if runs <= 1 {
        "as a multiset"
    } else if runs == exp.rows.len() {
        "as a sequence"
    } else {
        "as a sequence of tie groups"
    }
}

/// Describes the expected rows (the window) for a failure report.
pub fn describe_expected(exp: &Expected) -> String {
    let (s, e) = exp.window;
    format!(
        "expected columns {:?}, {} rows (window {s}..{e} of {}), compared {}:\n{}",
        exp.columns,
        e - s,
        exp.rows.len(),
        order_mode(exp),
        show_rows(&exp.rows[s..e], 40)
    )
}

pub fn describe_got(columns: &[String], rows: &[Vec<Value>]) -> String {
    format!("got columns {columns:?}, {} rows:\n{}", rows.len(), show_rows(rows, 40))
}

/// `Ok` when the engine's `columns` / `rows` are what `exp` allows; else why not.
pub fn compare(exp: &Expected, columns: &[String], rows: &[Vec<Value>]) -> Result<(), String> {
    if exp.columns != columns {
        return Err(format!("column names differ: expected {:?}, got {columns:?}", exp.columns));
    }
    if let Some(bad) = rows.iter().find(|r| r.len() != columns.len()) {
        return Err(format!("a row has {} values for {} columns: {}", bad.len(), columns.len(), show_row(bad)));
    }
    let (start, end) = exp.window;
    if rows.len() != end - start {
        return Err(format!("row count differs: expected {}, got {}", end - start, rows.len()));
    }
    // Engine rows by the run of their position.
    let mut by_run: Vec<(usize, Vec<usize>)> = Vec::new();
    for i in 0..rows.len() {
        let run = exp.runs[start + i];
        match by_run.last_mut() {
            Some((r, idx)) if *r == run => idx.push(i),
            _ => by_run.push((run, vec![i])),
        }
    }
    for (run, idx) in by_run {
        let pool: Vec<usize> = (0..exp.rows.len()).filter(|&j| exp.runs[j] == run).collect();
        let mut used = vec![false; pool.len()];
        for &i in &idx {
            let found =
                pool.iter().enumerate().position(|(k, &j)| !used[k] && row_eq(&exp.rows[j], &rows[i], &exp.tolerant));
            match found {
                Some(k) => used[k] = true,
                None => {
                    let wanted: Vec<String> = pool.iter().map(|&j| show_row(&exp.rows[j])).take(8).collect();
                    return Err(if pool.len() == 1 {
                        format!("row {i} differs: expected {}, got {}", wanted[0], show_row(&rows[i]))
                    } else {
                        format!(
                            "row {i} {} is not expected there (unmatched among the {} candidate rows, e.g. {})",
                            show_row(&rows[i]),
                            pool.len(),
                            wanted.join(" ")
                        )
                    });
                }
            }
        }
    }
    Ok(())
}
