//! The CLI as a client of a running world (`--connect URL`): `query`, `watch` and `shell`
//! over the live protocol (docs/protocol.md).

use std::io::{self, BufRead, BufWriter, IsTerminal, Write};
use std::time::Duration;

use ecsdb::Value;
use ecsdb::live::client::{ClientError, Endpoint, HttpClient, WsClient};
use ecsdb::query::{Error, ErrorKind, ResultSet, Span};
use serde_json::{Value as Json, json};

use crate::Failure;
use crate::format::{self, Format};
use crate::params::Param;

/// The server's URL and token: the token from `--token`, else `ECSDB_TOKEN`, else the URL's
/// fragment.
pub fn endpoint(url: &str, token: Option<&str>) -> Result<Endpoint, Failure> {
    let env = std::env::var("ECSDB_TOKEN").ok().filter(|t| !t.is_empty());
    Endpoint::parse(url, token.or(env.as_deref())).map_err(|e| Failure::usage(e.to_string()))
}

/// Statement parameters as the protocol's JSON object.
pub fn params_json(params: &[Param]) -> Json {
    let mut o = serde_json::Map::new();
    for p in params {
        let key = p.name.key();
        let v = match &p.value {
            Value::Entity(e) => json!({ "entity": e.to_string() }),
            v => ecsdb::query::value_to_json(v),
        };
        o.insert(key, v);
    }
    Json::Object(o)
}

/// A JSON cell as a value, for printing.
fn cell(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => n.as_i64().map(Value::Int).unwrap_or_else(|| Value::Float(n.as_f64().unwrap_or(f64::NAN))),
        Json::String(s) => Value::Str(s.clone()),
        Json::Array(a) => match a.iter().map(Json::as_f64).collect::<Option<Vec<f64>>>().as_deref() {
            Some([x, y]) => Value::Vec2([*x, *y]),
            Some([x, y, z]) => Value::Vec3([*x, *y, *z]),
            _ => Value::Str(v.to_string()),
        },
        Json::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), cell(v))).collect()),
    }
}

/// `{columns, rows}` as a result set.
pub fn result_set(v: &Json) -> ResultSet {
    let columns = v["columns"].as_array().map(|c| c.iter().map(|s| s.as_str().unwrap_or("").to_string()).collect());
    let rows = v["rows"].as_array().map(|r| r.iter().map(row).collect());
    ResultSet { columns: columns.unwrap_or_default(), rows: rows.unwrap_or_default() }
}

fn row(r: &Json) -> Vec<Value> {
    r.as_array().map(|c| c.iter().map(cell).collect()).unwrap_or_default()
}

/// Prints a failed call: a statement error like a local one (caret and hint), others plainly.
/// Returns the failure to exit with.
pub fn report(text: &str, e: ClientError) -> Failure {
    match e {
        ClientError::Rpc(rpc) if rpc.code == -32000 => {
            let data = rpc.data.unwrap_or(Json::Null);
            let kind = data["kind"].as_str().unwrap_or("internal");
            let kind = ErrorKind::ALL.into_iter().find(|k| k.as_str() == kind).unwrap_or(ErrorKind::Internal);
            let mut err = Error::new(kind, data["message"].as_str().unwrap_or(&rpc.message));
            if let (Some(line), Some(col)) = (data["line"].as_u64(), data["column"].as_u64()) {
                let start = offset(text, line as usize, col as usize);
                err = err.with_span(Span { start, end: (start + 1).min(text.len()).max(start) });
            }
            let hint = data["hint"].as_str().and_then(|h| h.strip_prefix("did you mean '")?.strip_suffix("'?"));
            if let Some(h) = hint {
                err = err.with_suggestion(h);
            }
            format::eprint_line(&format::render_error(text, &err, None));
            Failure::Statement
        }
        other => Failure::usage(format!("the server: {other}")),
    }
}

/// The byte offset of a 1-based line and column (in characters) of `text`.
fn offset(text: &str, line: usize, col: usize) -> usize {
    let mut start = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return start + l.char_indices().nth(col.saturating_sub(1)).map_or(l.len(), |(b, _)| b);
        }
        start += l.len();
    }
    text.len()
}

fn print(rs: &ResultSet, fmt: Format) -> Result<(), Failure> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    format::write_result(&mut out, rs, fmt).and_then(|()| out.flush()).map_err(format::output_failure)
}

/// `ecsdb query --connect URL TEXT`.
pub fn query(url: &str, token: Option<&str>, text: &str, params: &[Param], fmt: Format) -> Result<(), Failure> {
    let mut c = HttpClient::new(endpoint(url, token)?);
    let r = c.call("query", json!({ "text": text, "params": params_json(params) })).map_err(|e| report(text, e))?;
    print(&result_set(&r), fmt)?;
    if r["truncated"] == json!(true) {
        format::eprint_line("(the result was cut at the server's row limit)");
    }
    Ok(())
}

/// `ecsdb watch --connect URL TEXT`: the result, then each change as it arrives (until the
/// connection closes or the process is stopped).
pub fn watch(url: &str, token: Option<&str>, text: &str, params: &[Param], fmt: Format) -> Result<(), Failure> {
    let ep = endpoint(url, token)?;
    let mut ws = WsClient::connect(&ep).map_err(|e| report(text, e))?;
    let first = ws
        .call("subscribe", json!({ "id": "watch", "text": text, "params": params_json(params) }))
        .map_err(|e| report(text, e))?;
    let columns = result_set(&first).columns;
    format::print_line(&format!("-- tick {}", first["tick"]));
    print(&result_set(&first), fmt)?;
    loop {
        let n = match ws.next_notification(Duration::from_secs(3600)) {
            Ok(Some(n)) => n,
            Ok(None) => continue,
            Err(e) => return Err(Failure::usage(format!("the server: {e}"))),
        };
        if let Some(rows) = n.get("rows") {
            format::print_line(&format!("-- tick {}", n["tick"]));
            print(&result_set(&json!({ "columns": columns, "rows": rows })), fmt)?;
        } else {
            let up = result_set(&json!({ "columns": columns, "rows": n["upserted"] }));
            let removed: Vec<&str> =
                n["removed"].as_array().map(|a| a.iter().filter_map(Json::as_str).collect()).unwrap_or_default();
            format::print_line(&format!(
                "-- tick {}: {} upserted, {} removed",
                n["tick"],
                up.rows.len(),
                removed.len()
            ));
            if !up.rows.is_empty() {
                print(&up, fmt)?;
            }
            if !removed.is_empty() {
                format::print_line(&format!("removed: {}", removed.join(", ")));
            }
        }
    }
}

/// `ecsdb shell --connect URL`: statements run on the server (read-only ones with `query`,
/// others with `exec`); completion of the remote schema's names.
pub fn shell(url: &str, token: Option<&str>, fmt: Format) -> Result<(), Failure> {
    let ep = endpoint(url, token)?;
    let mut c = HttpClient::new(ep.clone());
    let names = schema_names(&mut c).map_err(|e| Failure::usage(format!("cannot reach {url}: {e}")))?;
    let mut failed = false;
    let mut run = |c: &mut HttpClient, text: &str| {
        for range in ecsdb::query::lex::split_statements(text) {
            let stmt = range.text(text).trim();
            if stmt.is_empty() {
                continue;
            }
            let read_only = ecsdb::query::is_read_only(stmt).unwrap_or(true);
            let method = if read_only { "query" } else { "exec" };
            match c.call(method, json!({ "text": stmt })) {
                Ok(r) if read_only => {
                    let _ = print(&result_set(&r), fmt);
                }
                Ok(r) => {
                    for res in r["results"].as_array().into_iter().flatten() {
                        if !res["columns"].as_array().is_some_and(|c| c.is_empty()) {
                            let _ = print(&result_set(res), fmt);
                        }
                    }
                    format::print_line(&format!("(applied at tick {})", r["tick"]));
                }
                Err(e) => {
                    failed = true;
                    if let Failure::Usage(m) = report(stmt, e) {
                        format::eprint_line(&format!("error: {m}"));
                    }
                }
            }
        }
    };
    if !io::stdin().is_terminal() {
        let mut text = String::new();
        for line in io::stdin().lock().lines() {
            text.push_str(&line.map_err(|e| Failure::usage(e.to_string()))?);
            text.push('\n');
        }
        run(&mut c, &text);
        return if failed { Err(Failure::Statement) } else { Ok(()) };
    }
    let mut editor = crate::shell::editor(names)?;
    format::print_line(&format!("ecsdb shell on {} (live). Statements end with ';'. .quit to leave.", ep.host));
    loop {
        match editor.readline("ecsdb> ") {
            Ok(text) => {
                let t = text.trim();
                if t.is_empty() {
                    continue;
                }
                let _ = editor.add_history_entry(text.trim_end());
                match t {
                    ".quit" | ".exit" => break,
                    ".tables" => run(&mut c, "SHOW COMPONENTS"),
                    ".indexes" => run(&mut c, "SHOW INDEXES"),
                    _ if t.starts_with('.') => format::eprint_line("remote shell commands: .tables .indexes .quit"),
                    _ => {
                        run(&mut c, &text);
                        if let Ok(n) = schema_names(&mut c) {
                            crate::shell::set_names(&mut editor, n);
                        }
                    }
                }
            }
            Err(rustyline::error::ReadlineError::Interrupted) => continue,
            Err(_) => break,
        }
    }
    Ok(())
}

/// (component, fields) of the remote schema.
fn schema_names(c: &mut HttpClient) -> Result<Vec<(String, Vec<String>)>, ClientError> {
    let s = c.call("schema", json!({}))?;
    Ok(s["components"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|comp| {
            let fields =
                comp["fields"].as_array().into_iter().flatten().filter_map(|f| f["name"].as_str().map(String::from));
            (comp["name"].as_str().unwrap_or("").to_string(), fields.collect())
        })
        .collect())
}
