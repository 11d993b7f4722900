//! Result sets: named columns and rows of [`Value`]s, and their JSON form.
//!
//! ```
//! use ecsdb_query::ResultSet;
//! use ecsdb_engine::{Entity, Value};
//! let rs = ResultSet {
//!     columns: vec!["entity".into(), "Health.hp".into()],
//!     rows: vec![vec![Value::Entity(Entity::from_parts(3, 0)), Value::Float(7.0)]],
//! };
//! assert_eq!(rs.to_json_string(), r#"{"columns":["entity","Health.hp"],"rows":[["3v0",7.0]]}"#);
//! ```

use ecsdb_engine::Value;
use serde_json::{Map, Number};

/// The answer to one statement: column names and rows of values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultSet {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// Rows; each has one value per column.
    pub rows: Vec<Vec<Value>>,
}

impl ResultSet {
    /// A result with these columns and no rows.
    pub fn empty(columns: Vec<String>) -> ResultSet {
        ResultSet { columns, rows: Vec::new() }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The position of the column with this name.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The rows.
    pub fn iter(&self) -> std::slice::Iter<'_, Vec<Value>> {
        self.rows.iter()
    }

    /// The value in row `row` of the column named `column`.
    pub fn get(&self, row: usize, column: &str) -> Option<&Value> {
        self.rows.get(row)?.get(self.column_index(column)?)
    }

    /// The value in row `row` of the column named `column`, as a `T` (`i64`, `f64`, `bool`,
    /// `String`, [`Entity`](ecsdb_engine::Entity), `Option` of one for a nullable column, …):
    /// an error if there is no such cell or the value is not a `T`.
    ///
    /// ```
    /// use ecsdb_query::Database;
    /// let mut db = Database::new();
    /// db.execute_script("CREATE COMPONENT Health (hp f32); SPAWN Health {hp: 5};").unwrap();
    /// let rs = db.query("SELECT count(*) AS n, max(Health.hp) AS top", ()).unwrap();
    /// assert_eq!(rs.get_as::<i64>(0, "n").unwrap(), 1);
    /// assert_eq!(rs.get_as::<f64>(0, "top").unwrap(), 5.0);
    /// assert!(rs.get_as::<String>(0, "n").is_err());
    /// ```
    pub fn get_as<'a, T>(&'a self, row: usize, column: &str) -> Result<T, crate::Error>
    where
        T: TryFrom<&'a Value>,
        T::Error: std::fmt::Display,
    {
        let value = self.get(row, column).ok_or_else(|| {
            crate::Error::new(crate::ErrorKind::Type, format!("no value at row {row} of a column named '{column}'"))
        })?;
        T::try_from(value)
            .map_err(|e| crate::Error::new(crate::ErrorKind::Type, format!("row {row} of '{column}' ({value:?}): {e}")))
    }

    /// The result as the language's JSON object: `{"columns": [...], "rows": [[...], ...]}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut obj = Map::new();
        obj.insert("columns".into(), self.columns.iter().map(|c| serde_json::Value::String(c.clone())).collect());
        obj.insert(
            "rows".into(),
            self.rows.iter().map(|r| serde_json::Value::Array(r.iter().map(value_to_json).collect())).collect(),
        );
        serde_json::Value::Object(obj)
    }

    /// [`ResultSet::to_json`] as compact text.
    pub fn to_json_string(&self) -> String {
        self.to_json().to_string()
    }
}

impl<'a> IntoIterator for &'a ResultSet {
    type Item = &'a Vec<Value>;
    type IntoIter = std::slice::Iter<'a, Vec<Value>>;
    fn into_iter(self) -> Self::IntoIter {
        self.rows.iter()
    }
}

impl IntoIterator for ResultSet {
    type Item = Vec<Value>;
    type IntoIter = std::vec::IntoIter<Vec<Value>>;
    fn into_iter(self) -> Self::IntoIter {
        self.rows.into_iter()
    }
}

fn float_json(f: f64) -> serde_json::Value {
    // JSON has no NaN or infinities: they map to null.
    Number::from_f64(f).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// One value in the language's JSON mapping: int → integer, float → number, string → string,
/// bool → bool, null → null, entity → `"<index>v<generation>"`, vector → array, component →
/// object (fields in declaration order).
pub fn value_to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => serde_json::Value::Number((*i).into()),
        Value::Float(f) => float_json(*f),
        Value::Str(s) => serde_json::Value::String(s.clone()),
        Value::Entity(e) if e.is_null() => serde_json::Value::Null,
        Value::Entity(e) => serde_json::Value::String(e.to_string()),
        Value::Vec2(xs) => xs.iter().map(|&x| float_json(x)).collect(),
        Value::Vec3(xs) => xs.iter().map(|&x| float_json(x)).collect(),
        Value::Object(fields) => {
            serde_json::Value::Object(fields.iter().map(|(k, v)| (k.clone(), value_to_json(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecsdb_engine::Entity;

    #[test]
    fn json_mapping() {
        let rs = ResultSet {
            columns: vec!["a".into(), "b".into()],
            rows: vec![
                vec![Value::Int(-3), Value::Float(2.5)],
                vec![Value::Null, Value::Float(f64::NAN)],
                vec![Value::Vec3([1.0, 2.0, 3.5]), Value::Bool(false)],
                vec![
                    Value::Object(vec![("z".into(), Value::Int(1)), ("a".into(), Value::Str("x".into()))]),
                    Value::Entity(Entity::from_parts(17, 2)),
                ],
            ],
        };
        assert_eq!(
            rs.to_json_string(),
            r#"{"columns":["a","b"],"rows":[[-3,2.5],[null,null],[[1.0,2.0,3.5],false],[{"z":1,"a":"x"},"17v2"]]}"#
        );
        assert_eq!(rs.len(), 4);
        assert_eq!(rs.column_index("b"), Some(1));
        assert_eq!(rs.get(0, "a"), Some(&Value::Int(-3)));
        assert_eq!(rs.get(9, "a"), None);
        assert!(ResultSet::empty(vec!["x".into()]).is_empty());
        assert_eq!(value_to_json(&Value::Entity(Entity::NULL)), serde_json::Value::Null);
    }
}
