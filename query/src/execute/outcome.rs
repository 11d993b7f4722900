//! What a statement that writes answers, and how a write that cannot fail is reported when it
//! does: shared by every write path (mutate, update, the in-place rewrite).

use ecsdb_engine::Value;

use crate::error::{Error, ErrorKind};
use crate::result::ResultSet;

/// The one row a statement that changes rows answers: how many it changed.
pub(crate) fn count(n: usize) -> ResultSet {
    ResultSet { columns: vec!["count".into()], rows: vec![vec![Value::Int(n as i64)]] }
}

/// A write failed after every check passed: a bug, reported rather than hidden.
pub(crate) fn write_failed(e: ecsdb_engine::EngineError) -> Error {
    Error::new(ErrorKind::Internal, format!("a write failed after its checks passed: {e}"))
}
