//! JSON-RPC 2.0: requests, batches, errors, and the methods of the protocol run on a
//! [`Reader`].

use std::str::FromStr;

use ecsdb_engine::{Entity, Value};
use ecsdb_query::lex::KEYWORDS;
use ecsdb_query::live::Reader;
use ecsdb_query::{BUILTIN_FUNCTIONS, Error, ErrorKind, Params, ResultSet, value_to_json};
use serde_json::{Map, Value as Json, json};

/// The default row limit of `query`.
pub const DEFAULT_LIMIT: u64 = 10_000;
/// The largest `limit` a client may ask for.
pub const MAX_LIMIT: u64 = 1_000_000;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The code (see the protocol's table).
    pub code: i64,
    /// A message for a person.
    pub message: String,
    /// Details.
    pub data: Option<Json>,
}

impl RpcError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }

    /// -32700: the body is not JSON.
    pub fn parse() -> RpcError {
        RpcError::new(-32700, "parse error: the message is not JSON")
    }

    /// -32600: not a valid request.
    pub fn invalid_request(why: &str) -> RpcError {
        RpcError::new(-32600, format!("invalid request: {why}"))
    }

    /// -32602 on `field`.
    pub fn params(field: &str, why: &str) -> RpcError {
        RpcError {
            code: -32602,
            message: format!("invalid params: {field}: {why}"),
            data: Some(json!({ "field": field })),
        }
    }

    /// -32001: missing or wrong token.
    pub fn unauthorized() -> RpcError {
        RpcError::new(-32001, "missing or wrong token")
    }

    /// -32004: `limit` exceeded.
    pub fn limit(limit: &str, message: impl Into<String>) -> RpcError {
        RpcError { code: -32004, message: message.into(), data: Some(json!({ "limit": limit })) }
    }

    /// -32000: a statement failed; `text` gives the error its line and column.
    pub fn statement(e: &Error, text: &str) -> RpcError {
        let (line, column) = match e.line_col(text) {
            Some((l, c)) => (json!(l), json!(c)),
            None => (Json::Null, Json::Null),
        };
        let hint = e.suggestion.as_ref().map(|s| json!(format!("did you mean '{s}'?"))).unwrap_or(Json::Null);
        RpcError {
            code: -32000,
            message: e.to_string(),
            data: Some(
                json!({ "kind": e.kind.as_str(), "message": e.message, "line": line, "column": column, "hint": hint }),
            ),
        }
    }

    /// The error object.
    pub fn to_json(&self) -> Json {
        let mut o = json!({ "code": self.code, "message": self.message });
        if let Some(d) = &self.data {
            o["data"] = d.clone();
        }
        o
    }
}

/// A response to a request with this id.
pub fn response(id: &Json, result: Result<Json, RpcError>) -> Json {
    match result {
        Ok(r) => json!({ "jsonrpc": "2.0", "id": id, "result": r }),
        Err(e) => json!({ "jsonrpc": "2.0", "id": id, "error": e.to_json() }),
    }
}

/// One request, checked for shape.
#[derive(Debug)]
pub struct Call {
    /// The id; `None` for a notification.
    pub id: Option<Json>,
    /// The method.
    pub method: String,
    /// The params (an object; absent is empty).
    pub params: Map<String, Json>,
}

/// Checks a request object's shape. On error, the id to answer with (null when unknown).
pub fn parse_call(v: Json) -> Result<Call, Box<(Json, RpcError)>> {
    let Json::Object(mut o) = v else { return Err(Box::new((Json::Null, RpcError::invalid_request("not an object")))) };
    let id = o.remove("id");
    let id_ok = matches!(id, None | Some(Json::Null | Json::String(_) | Json::Number(_)));
    let answer_id = if id_ok { id.clone().unwrap_or(Json::Null) } else { Json::Null };
    if !id_ok {
        return Err(Box::new((Json::Null, RpcError::invalid_request("id must be a string, number or null"))));
    }
    if o.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(Box::new((answer_id, RpcError::invalid_request("jsonrpc must be \"2.0\""))));
    }
    let method = match o.remove("method") {
        Some(Json::String(m)) => m,
        _ => return Err(Box::new((answer_id, RpcError::invalid_request("method must be a string")))),
    };
    let params = match o.remove("params") {
        None | Some(Json::Null) => Map::new(),
        Some(Json::Object(p)) => p,
        Some(_) => {
            return Err(Box::new((
                answer_id,
                RpcError::params("params", "must be an object (parameters are by name)"),
            )));
        }
    };
    Ok(Call { id, method, params })
}

/// Answers a JSON-RPC message (a request or a batch), running `call` for each request's
/// method (`None` from it: no such method); `None` when nothing is to be answered (only
/// notifications).
pub fn answer_message(
    bytes: &[u8],
    mut call: impl FnMut(&str, &Map<String, Json>) -> Option<Result<Json, RpcError>>,
) -> Option<Json> {
    let Ok(v) = serde_json::from_slice::<Json>(bytes) else {
        return Some(response(&Json::Null, Err(RpcError::parse())));
    };
    let mut one = |v: Json| -> Option<Json> {
        match parse_call(v) {
            Err(bad) => {
                let (id, e) = *bad;
                Some(response(&id, Err(e)))
            }
            Ok(c) => {
                let result = call(&c.method, &c.params)
                    .unwrap_or_else(|| Err(RpcError::new(-32601, format!("method not found: '{}'", c.method))));
                c.id.map(|id| response(&id, result))
            }
        }
    };
    match v {
        Json::Array(items) if items.is_empty() => {
            Some(response(&Json::Null, Err(RpcError::invalid_request("empty batch"))))
        }
        Json::Array(items) => {
            let out: Vec<Json> = items.into_iter().filter_map(&mut one).collect();
            (!out.is_empty()).then_some(Json::Array(out))
        }
        v => one(v),
    }
}

/// A request: `{"jsonrpc":"2.0","id":ID,"method":M,"params":P}` (the client's).
pub fn request(id: impl Into<Json>, method: &str, params: Json) -> Json {
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// A required string param.
pub fn str_param<'a>(p: &'a Map<String, Json>, field: &str) -> Result<&'a str, RpcError> {
    match p.get(field) {
        Some(Json::String(s)) => Ok(s),
        Some(_) => Err(RpcError::params(field, "must be a string")),
        None => Err(RpcError::params(field, "missing")),
    }
}

/// The statement parameters of a call (`params.params`): `{"1": 5}` binds `$1`, `{"name": 5}`
/// binds `$name`.
pub fn statement_params(p: &Map<String, Json>) -> Result<Params, RpcError> {
    let field = "params";
    let o = match p.get(field) {
        None | Some(Json::Null) => return Ok(Params::new()),
        Some(Json::Object(o)) => o,
        Some(_) => return Err(RpcError::params(field, "must be an object")),
    };
    let mut positional: Vec<(usize, Value)> = Vec::new();
    let mut out = Params::new();
    for (k, v) in o {
        let value = json_to_value(v)
            .ok_or_else(|| RpcError::params(field, &format!("value of '{k}' is not a parameter value")))?;
        match k.parse::<usize>() {
            Ok(n) if n >= 1 && n <= o.len() => positional.push((n, value)),
            Ok(_) => return Err(RpcError::params(field, &format!("positional parameter '{k}' is out of range"))),
            Err(_) => out = out.set(k, value),
        }
    }
    positional.sort_by_key(|(n, _)| *n);
    for (i, (n, v)) in positional.into_iter().enumerate() {
        if n != i + 1 {
            return Err(RpcError::params(field, &format!("positional parameter ${} is missing", i + 1)));
        }
        out = out.bind(v);
    }
    Ok(out)
}

/// A JSON parameter value as a language value: numbers, strings, booleans, null, arrays of 2
/// or 3 numbers, `{"entity": "12v0"}`.
pub fn json_to_value(v: &Json) -> Option<Value> {
    Some(match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().filter(|f| f.is_finite())?),
        },
        Json::String(s) => Value::Str(s.clone()),
        Json::Array(a) => {
            let nums: Option<Vec<f64>> = a.iter().map(|x| x.as_f64()).collect();
            match nums?.as_slice() {
                [x, y] => Value::Vec2([*x, *y]),
                [x, y, z] => Value::Vec3([*x, *y, *z]),
                _ => return None,
            }
        }
        Json::Object(o) if o.len() == 1 => Value::Entity(Entity::from_str(o.get("entity")?.as_str()?).ok()?),
        Json::Object(_) => return None,
    })
}

/// Rows as JSON arrays.
pub fn rows_json(rows: &[Vec<Value>]) -> Vec<Json> {
    rows.iter().map(|r| Json::Array(r.iter().map(value_to_json).collect())).collect()
}

/// The systems of a database's schedule, as `SHOW SYSTEMS` lists them: name, phase, position
/// in it (from 0), the components read and written (the counters are the writer's: see
/// `stats`).
fn schedule(db: &ecsdb_query::Database) -> Vec<Json> {
    let Ok(rs) = db.query("SHOW SYSTEMS", ()) else { return Vec::new() };
    let col = |name: &str| rs.columns.iter().position(|c| c == name);
    let text = |row: &[Value], name: &str| match col(name).map(|i| &row[i]) {
        Some(Value::Str(s)) => Json::String(s.clone()),
        Some(Value::Int(i)) => json!(i),
        _ => Json::Null,
    };
    // Component names, listed as `SHOW SYSTEMS` joins them.
    let names = |row: &[Value], name: &str| match col(name).map(|i| &row[i]) {
        Some(Value::Str(s)) => s.split(", ").filter(|n| !n.is_empty()).map(|n| json!(n)).collect(),
        _ => Vec::new(),
    };
    rs.rows
        .iter()
        .map(|row| {
            json!({
                "name": text(row, "name"),
                "phase": text(row, "phase"),
                "position": text(row, "position"),
                "reads": names(row, "reads"),
                "writes": names(row, "writes"),
            })
        })
        .collect()
}

/// The language's keywords, as the query crate's table has them: `{word, reserved,
/// starts_statement}` (the inspector highlights and completes with them).
fn keywords_json() -> Vec<Json> {
    KEYWORDS
        .iter()
        .map(|k| json!({ "word": k.word, "reserved": k.reserved, "starts_statement": k.starts_statement }))
        .collect()
}

/// The language's built-in functions, as the query crate lists them: `{name, kind, signature}`.
fn functions_json() -> Vec<Json> {
    BUILTIN_FUNCTIONS
        .iter()
        .map(|f| json!({ "name": f.name, "kind": f.kind.name(), "signature": f.signature }))
        .collect()
}

fn result_json(rs: &ResultSet) -> Json {
    json!({ "columns": rs.columns, "rows": rows_json(&rs.rows) })
}

/// What a connection may do.
#[derive(Clone, Debug)]
pub struct Methods {
    /// The world.
    pub reader: Reader,
    /// Whether `exec` is allowed.
    pub allow_writes: bool,
}

impl Methods {
    /// Runs one of the transport-independent methods (`subscribe`/`unsubscribe` are the
    /// WebSocket's). `None`: no such method here.
    pub fn call(&self, method: &str, p: &Map<String, Json>) -> Option<Result<Json, RpcError>> {
        Some(match method {
            "query" => self.query(p),
            "exec" => self.exec(p),
            "explain" => self.explain(p),
            "schema" => self.schema(),
            "entity" => self.entity(p),
            "stats" => self.stats(),
            _ => return None,
        })
    }

    fn query(&self, p: &Map<String, Json>) -> Result<Json, RpcError> {
        let text = str_param(p, "text")?;
        let params = statement_params(p)?;
        let limit = match p.get("limit") {
            None | Some(Json::Null) => DEFAULT_LIMIT,
            Some(v) => match v.as_u64() {
                Some(n) if n <= MAX_LIMIT => n,
                _ => return Err(RpcError::params("limit", "must be an integer from 0 to 1000000")),
            },
        };
        let (tick, mut rs) = self.reader.query(text, &params).map_err(|e| RpcError::statement(&e, text))?;
        let truncated = rs.rows.len() as u64 > limit;
        rs.rows.truncate(limit as usize);
        Ok(json!({ "tick": tick, "columns": rs.columns, "rows": rows_json(&rs.rows), "truncated": truncated }))
    }

    fn exec(&self, p: &Map<String, Json>) -> Result<Json, RpcError> {
        let text = str_param(p, "text")?;
        let params = statement_params(p)?;
        if !self.allow_writes {
            return Err(RpcError::new(
                -32003,
                "this server is read-only: start it with writes allowed (--allow-writes)",
            ));
        }
        let out = self.reader.exec(text, &params).map_err(|e| RpcError::statement(&e, text))?;
        Ok(json!({ "tick": out.tick, "results": out.results.iter().map(result_json).collect::<Vec<_>>() }))
    }

    fn explain(&self, p: &Map<String, Json>) -> Result<Json, RpcError> {
        let text = str_param(p, "text")?;
        let full = format!("EXPLAIN {text}");
        // Errors' positions refer to `EXPLAIN <text>` (docs/protocol.md).
        let (tick, rs) = self.reader.query(&full, ()).map_err(|e| RpcError::statement(&e, &full))?;
        let plan: Vec<Json> = rs
            .rows
            .iter()
            .map(|r| match r.as_slice() {
                [Value::Str(s)] => json!(s),
                other => Json::Array(other.iter().map(value_to_json).collect()),
            })
            .collect();
        Ok(json!({ "tick": tick, "plan": plan }))
    }

    fn schema(&self) -> Result<Json, RpcError> {
        self.reader
            .with_state(|s| {
                let w = s.db.world();
                let components: Vec<Json> = w
                    .components()
                    .iter()
                    .map(|info| {
                        // A field declared `REFERENCES` says so, with its policy (the inspector's
                        // tree view follows `ACYCLIC` ones).
                        let fields: Vec<Json> = info
                            .fields()
                            .iter()
                            .enumerate()
                            .map(|(i, f)| {
                                let mut field = json!({ "name": f.name, "type": f.ty.name() });
                                if let Some(r) = w.reference(info.id(), i) {
                                    field["references"] = json!({ "on_delete": r.on_delete.name(), "acyclic": r.acyclic });
                                }
                                // A field's `DEFAULT`, as its values are written.
                                if let Ok(Some(v)) = w.field_default(info.id(), &f.name) {
                                    field["default"] = ecsdb_query::value_to_json(&v);
                                }
                                field
                            })
                            .collect();
                        json!({ "name": info.name(), "fields": fields, "storage": info.storage().to_string(), "entities": w.component_count(info.id()) })
                    })
                    .collect();
                let indexes: Vec<Json> = w
                    .indexes()
                    .into_iter()
                    .map(|i| json!({ "name": i.name, "kind": i.kind.name(), "component": i.component, "fields": i.fields, "entries": i.entries }))
                    .collect();
                let tables: Vec<Json> = w
                    .tables()
                    .iter()
                    .filter(|t| !w.is_retired_table(t))
                    .map(|t| {
                        let names: Vec<&str> = t.components().iter().map(|c| w.components().info(*c).name()).collect();
                        json!({ "components": names, "rows": t.len() })
                    })
                    .collect();
                json!({
                    "tick": s.tick,
                    "components": components,
                    "indexes": indexes,
                    "tables": tables,
                    "systems": schedule(&s.db),
                    "writable": self.allow_writes,
                    "keywords": keywords_json(),
                    "functions": functions_json(),
                })
            })
            .map_err(|e| RpcError::statement(&e, ""))
    }

    fn entity(&self, p: &Map<String, Json>) -> Result<Json, RpcError> {
        let id = str_param(p, "id")?;
        let e = Entity::from_str(id).map_err(|_| RpcError::params("id", "not an entity id like \"12v0\""))?;
        self.reader
            .with_state(|s| {
                let w = s.db.world();
                let stale = || {
                    let err = Error::new(ErrorKind::StaleEntity, format!("entity {id} is not alive"));
                    RpcError::statement(&err, "")
                };
                let ids = w.components_of(e).map_err(|_| stale())?;
                let mut components = Map::new();
                for c in ids {
                    let name = w.components().info(c).name().to_string();
                    let v = w.get_component_value(e, c).map(|v| value_to_json(&v)).unwrap_or(Json::Null);
                    components.insert(name, v);
                }
                Ok(json!({ "tick": s.tick, "entity": e.to_string(), "components": components }))
            })
            .map_err(|e| RpcError::statement(&e, ""))?
    }

    fn stats(&self) -> Result<Json, RpcError> {
        let times = self.reader.tick_times();
        let counters = self.reader.system_stats();
        self.reader
            .with_state(|s| {
                let w = s.db.world();
                let m = w.memory_usage();
                // The writer's counters, with each system's phase from the published schedule.
                let published = schedule(&s.db);
                let systems: Vec<Json> = counters
                    .iter()
                    .map(|c| {
                        let total_ms = c.total.as_secs_f64() * 1e3;
                        let phase =
                            published.iter().find(|sys| sys["name"] == c.name.as_str()).map(|sys| &sys["phase"]);
                        let mean_ms = if c.runs == 0 { 0.0 } else { total_ms / c.runs as f64 };
                        json!({
                            "name": c.name,
                            "phase": phase,
                            "ms": c.last.map_or(mean_ms, |d| d.as_secs_f64() * 1e3),
                            "rows": c.rows,
                            "runs": c.runs,
                            "total_ms": total_ms,
                        })
                    })
                    .collect();
                json!({
                    "tick": s.tick,
                    "entities": w.len(),
                    "tables": w.tables().iter().filter(|t| !w.is_retired_table(t)).count(),
                    "tick_ms": { "last": times.last, "p50": times.p50, "p99": times.p99 },
                    "systems": systems,
                    "memory_bytes": m.component_bytes + m.overhead_bytes,
                })
            })
            .map_err(|e| RpcError::statement(&e, ""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_by_position_and_name() {
        let p: Map<String, Json> =
            serde_json::from_str(r#"{"params": {"2": [1, 2], "1": {"entity": "3v1"}, "n": 2.5}}"#).unwrap();
        let params = statement_params(&p).unwrap();
        assert_eq!(params.get_positional(1), Some(&Value::Entity(Entity::from_str("3v1").unwrap())));
        assert_eq!(params.get_positional(2), Some(&Value::Vec2([1.0, 2.0])));
        assert_eq!(params.get_named("n"), Some(&Value::Float(2.5)));
        let gap: Map<String, Json> = serde_json::from_str(r#"{"params": {"2": 1}}"#).unwrap();
        assert_eq!(statement_params(&gap).unwrap_err().code, -32602);
        let bad: Map<String, Json> = serde_json::from_str(r#"{"params": {"x": {"a": 1}}}"#).unwrap();
        assert_eq!(statement_params(&bad).unwrap_err().code, -32602);
    }

    #[test]
    fn call_shapes() {
        assert!(parse_call(json!({"jsonrpc": "2.0", "id": 1, "method": "stats"})).is_ok());
        assert_eq!(parse_call(json!([1])).unwrap_err().1.code, -32600);
        assert_eq!(parse_call(json!({"jsonrpc": "1.0", "id": 1, "method": "x"})).unwrap_err().1.code, -32600);
        assert_eq!(parse_call(json!({"jsonrpc": "2.0", "id": {}, "method": "x"})).unwrap_err().1.code, -32600);
        assert_eq!(
            parse_call(json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]})).unwrap_err().1.code,
            -32602
        );
    }
}
