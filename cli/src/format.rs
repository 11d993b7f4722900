//! Printing result sets (aligned table, JSON, RFC 4180 CSV) and errors.

use std::io::{self, Write};

use ecsdb::Value;
use ecsdb::query::{Error, ResultSet};

use crate::Failure;

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A readable aligned table followed by a `(N rows)` line.
    Table,
    /// One JSON object per statement: `{"columns": [...], "rows": [[...], ...]}`.
    Json,
    /// RFC 4180 CSV: a header line, then one line per row, CRLF line ends.
    Csv,
}

impl Format {
    /// The name used on the command line and in the shell.
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
        }
    }

    /// Parses a format name (`table`, `json`, `csv`; case-insensitive).
    pub fn from_name(name: &str) -> Option<Format> {
        [Format::Table, Format::Json, Format::Csv].into_iter().find(|f| f.name().eq_ignore_ascii_case(name))
    }
}

/// Writes a result set in the given format. Between result sets of one run, callers write
/// nothing for JSON (one object per line) and a blank line for the others.
pub fn write_result(out: &mut dyn Write, rs: &ResultSet, format: Format) -> io::Result<()> {
    match format {
        Format::Table => write_table(out, rs, None),
        Format::Json => writeln!(out, "{}", rs.to_json_string()),
        Format::Csv => write_csv(out, rs),
    }
}

/// A value as a table cell: the language's display form, except that a float that is exactly
/// an `f32` (a value read from an `f32` field) shows the shortest text that reads back as that
/// `f32` (`0.1`, not `0.10000000149011612`); control characters are escaped so that rows stay
/// on one line. JSON and CSV keep every digit.
pub fn cell_text(v: &Value) -> String {
    let mut s = String::new();
    human(v, &mut s);
    if s.chars().any(char::is_control) {
        s.chars()
            .map(|c| match c {
                '\n' => "\\n".to_string(),
                '\r' => "\\r".to_string(),
                '\t' => "\\t".to_string(),
                c if c.is_control() => format!("\\u{{{:x}}}", c as u32),
                c => c.to_string(),
            })
            .collect()
    } else {
        s
    }
}

fn human(v: &Value, out: &mut String) {
    match v {
        Value::Float(x) => out.push_str(&float_text(*x)),
        Value::Vec2(xs) => list(xs, out),
        Value::Vec3(xs) => list(xs, out),
        Value::Object(fields) => {
            out.push('{');
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(k);
                out.push_str(": ");
                match v {
                    Value::Str(s) => {
                        out.push('\'');
                        out.push_str(s);
                        out.push('\'');
                    }
                    v => human(v, out),
                }
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn list(xs: &[f64], out: &mut String) {
    out.push('[');
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&float_text(*x));
    }
    out.push(']');
}

/// A float for people: as an `f32` when it is exactly one, always with a decimal point.
fn float_text(x: f64) -> String {
    let narrow = x as f32;
    if !x.is_finite() || narrow as f64 != x || x.abs() >= 1e16 {
        return Value::Float(x).to_string();
    }
    let s = narrow.to_string();
    if s.contains(['.', 'e', 'E']) { s } else { format!("{s}.0") }
}

/// The `(N rows)` line.
pub fn row_count_line(n: usize) -> String {
    if n == 1 { "(1 row)".to_string() } else { format!("({} rows)", thousands(n as u64)) }
}

/// Writes an aligned table: header, a rule, the rows (numbers right-aligned), then the row
/// count line. With `max_rows`, only the first rows are shown and the count line says how many
/// there are in all.
pub fn write_table(out: &mut dyn Write, rs: &ResultSet, max_rows: Option<usize>) -> io::Result<()> {
    if rs.columns.is_empty() && rs.rows.is_empty() {
        // A statement with nothing to show (CREATE COMPONENT, DROP INDEX).
        return writeln!(out, "OK");
    }
    let shown = max_rows.map_or(rs.rows.len(), |m| m.min(rs.rows.len()));
    if !rs.columns.is_empty() {
        let cells: Vec<Vec<String>> = rs.rows[..shown].iter().map(|row| row.iter().map(cell_text).collect()).collect();
        let ncols = rs.columns.len();
        let mut widths: Vec<usize> = rs.columns.iter().map(|c| c.chars().count()).collect();
        let mut numeric = vec![true; ncols];
        let mut any_value = vec![false; ncols];
        for (row, texts) in rs.rows[..shown].iter().zip(&cells) {
            for (i, (v, t)) in row.iter().zip(texts).enumerate().take(ncols) {
                widths[i] = widths[i].max(t.chars().count());
                match v {
                    Value::Int(_) | Value::Float(_) => any_value[i] = true,
                    Value::Null => {}
                    _ => numeric[i] = false,
                }
            }
        }
        let right: Vec<bool> = (0..ncols).map(|i| numeric[i] && any_value[i]).collect();
        let mut line = String::new();
        for (i, c) in rs.columns.iter().enumerate() {
            line.push_str(if i == 0 { " " } else { " | " });
            pad(&mut line, c, widths[i], false);
        }
        writeln!(out, "{}", line.trim_end())?;
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(w + 2)).collect();
        writeln!(out, "{}", rule.join("+"))?;
        for texts in &cells {
            line.clear();
            for (i, w) in widths.iter().enumerate() {
                line.push_str(if i == 0 { " " } else { " | " });
                pad(&mut line, texts.get(i).map_or("", |s| s.as_str()), *w, right[i]);
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        if shown < rs.rows.len() {
            writeln!(out, " …")?;
        }
    }
    writeln!(out, "{}", row_count_line(rs.rows.len()))
}

fn pad(line: &mut String, text: &str, width: usize, right: bool) {
    let fill = width.saturating_sub(text.chars().count());
    if right {
        line.extend(std::iter::repeat_n(' ', fill));
        line.push_str(text);
    } else {
        line.push_str(text);
        line.extend(std::iter::repeat_n(' ', fill));
    }
}

/// Writes RFC 4180 CSV: a header record, one record per row, CRLF after every record.
/// Fields holding `,`, `"`, CR or LF are quoted, with `"` doubled. `null` is an empty field;
/// an empty string is `""` so the two stay distinguishable. Components and vectors are written
/// as their JSON text.
pub fn write_csv(out: &mut dyn Write, rs: &ResultSet) -> io::Result<()> {
    let mut rec = String::new();
    for (i, c) in rs.columns.iter().enumerate() {
        if i > 0 {
            rec.push(',');
        }
        csv_field(&mut rec, c, false);
    }
    rec.push_str("\r\n");
    out.write_all(rec.as_bytes())?;
    for row in &rs.rows {
        rec.clear();
        for (i, v) in row.iter().enumerate() {
            if i > 0 {
                rec.push(',');
            }
            match v {
                Value::Null => {}
                Value::Str(s) => csv_field(&mut rec, s, true),
                Value::Object(_) | Value::Vec2(_) | Value::Vec3(_) => {
                    csv_field(&mut rec, &ecsdb::query::value_to_json(v).to_string(), false)
                }
                v => csv_field(&mut rec, &v.to_string(), false),
            }
        }
        rec.push_str("\r\n");
        out.write_all(rec.as_bytes())?;
    }
    Ok(())
}

fn csv_field(rec: &mut String, s: &str, quote_empty: bool) {
    if s.contains([',', '"', '\r', '\n']) || (quote_empty && s.is_empty()) {
        rec.push('"');
        rec.push_str(&s.replace('"', "\"\""));
        rec.push('"');
    } else {
        rec.push_str(s);
    }
}

/// An error as shown to a person: `error[kind]` (the kind as tools spell it), where it came
/// from (a file, a statement number) when given, then the query engine's rendering: kind,
/// message and position, the line with a caret under the column, and a suggestion when there
/// is one.
pub fn render_error(src: &str, err: &Error, origin: Option<&str>) -> String {
    let mut text = err.render(src);
    if let Some(s) = &err.suggestion
        && !text.contains(&format!("'{s}'"))
    {
        text.push_str(&format!("\nhint: did you mean '{s}'?"));
    }
    match origin {
        Some(o) => format!("error[{}] in {o}: {text}", err.kind.as_str()),
        None => format!("error[{}]: {text}", err.kind.as_str()),
    }
}

/// Writes a line to stdout, ignoring failures (for the shell's own messages; results go
/// through writers whose failures are handled).
pub fn print_line(msg: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{msg}");
}

/// Writes a message to stderr, ignoring failures (there is nowhere left to report them).
pub fn eprint_line(msg: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{msg}");
}

/// Maps a failure to write standard output to how the command ends: a closed pipe ends it
/// quietly, anything else is an I/O usage failure.
pub fn output_failure(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::Closed
    } else {
        Failure::usage(format!("cannot write output: {e}"))
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    let phase = digits.len() % 3;
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && i % 3 == phase {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration in milliseconds with a precision that suits its size (`0.042 ms`, `12.3 ms`,
/// `1,532 ms`).
pub fn millis(d: std::time::Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1.0 {
        format!("{ms:.3} ms")
    } else if ms < 100.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{} ms", thousands(ms.round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(columns: &[&str], rows: Vec<Vec<Value>>) -> ResultSet {
        ResultSet { columns: columns.iter().map(|c| c.to_string()).collect(), rows }
    }

    #[test]
    fn table_aligns_and_counts() {
        let r = rs(
            &["entity", "Name.value", "Health.hp"],
            vec![
                vec![Value::Entity(ecsdb::Entity::from_parts(3, 0)), Value::Str("ziggy".into()), Value::Float(42.5)],
                vec![Value::Entity(ecsdb::Entity::from_parts(17, 2)), Value::Str("zig".into()), Value::Float(7.0)],
            ],
        );
        let mut out = Vec::new();
        write_table(&mut out, &r, None).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            " entity | Name.value | Health.hp\n\
             --------+------------+-----------\n \
             3v0    | ziggy      |      42.5\n \
             17v2   | zig        |       7.0\n\
             (2 rows)\n"
        );
    }

    #[test]
    fn csv_quotes() {
        let r = rs(
            &["a", "b,c"],
            vec![
                vec![Value::Str("x\"y".into()), Value::Null],
                vec![Value::Str(String::new()), Value::Str("line\nbreak".into())],
            ],
        );
        let mut out = Vec::new();
        write_csv(&mut out, &r).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "a,\"b,c\"\r\n\"x\"\"y\",\r\n\"\",\"line\nbreak\"\r\n");
    }

    #[test]
    fn floats_for_people() {
        assert_eq!(cell_text(&Value::Float(0.1f32 as f64)), "0.1");
        assert_eq!(cell_text(&Value::Float(0.1)), "0.1");
        assert_eq!(cell_text(&Value::Float(2.0)), "2.0");
        assert_eq!(cell_text(&Value::Float(1.0 / 3.0)), Value::Float(1.0 / 3.0).to_string());
        assert_eq!(cell_text(&Value::Float(f64::NAN)), "NaN");
        let obj = Value::Object(vec![
            ("x".into(), Value::Float(-303.4596252441406)),
            ("name".into(), Value::Str("a\nb".into())),
        ]);
        assert_eq!(cell_text(&obj), "{x: -303.45963, name: 'a\\nb'}");
        assert_eq!(cell_text(&Value::Vec2([0.5, 2.0])), "[0.5, 2.0]");
    }

    #[test]
    fn numbers() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(row_count_line(1), "(1 row)");
        assert_eq!(row_count_line(1200), "(1,200 rows)");
    }
}
