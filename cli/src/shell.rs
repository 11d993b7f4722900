//! `ecsdb shell [WORLD]`: an interactive shell.
//!
//! On a terminal it is a line editor (rustyline) with history saved across sessions
//! (`$ECSDB_HISTORY`, else `~/.ecsdb_history`), statements over several lines ending at `;`,
//! and tab completion of keywords, functions, dot-commands and the catalog's component and
//! field names. When stdin is not a terminal it reads statements from stdin line by line,
//! without prompts, so it can be driven by a pipe; it then exits with 1 if any statement failed.
//!
//! Changes are saved by `.save` or on exit: on a terminal the shell asks, with `--autosave`
//! it saves without asking, and otherwise (piped) it leaves the file alone and says so.
//!
//! The shell does not keep the world file locked while it runs: it takes the lock only to
//! save. It remembers what the file looked like when it loaded (or last saved) it, and when
//! another process has saved the file since, it refuses to overwrite it and offers to save
//! elsewhere (`.save FILE`; on exit it asks for a file name).

use std::borrow::Cow;
use std::io::{self, BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

// Keywords, functions and types to complete come from the language's own tables, and
// statements end where its lexer says: nothing here can drift from the grammar.
use ecsdb::query::lex::{KEYWORDS, StatementState, statement_state};
use ecsdb::query::{BUILTIN_FUNCTIONS, Database, Params};
use ecsdb::{FieldType, FileStamp, World};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{CompletionType, Config, Context, Editor, Helper};

use crate::format::{self, Format};
use crate::script::{RunOptions, run_script};
use crate::{Failure, ShellArgs, world_file};

const HELP: &str = "\
Statements end with ';' and may span several lines. Examples:
  SELECT Name.value, Health.hp WHERE Health.hp < 20 ORDER BY Health.hp LIMIT 10;
  UPDATE Health SET hp = Health.max FROM Health, Player;
  EXPLAIN SELECT count(*) WHERE Team.name = 'red';
Dot-commands (one line, no ';'):
  .help                    this text
  .tables                  the components (SHOW COMPONENTS); SHOW TABLES lists archetype tables
  .indexes                 the indexes (SHOW INDEXES)
  .save [FILE]             save the world (to FILE, which then becomes the shell's world file)
  .timing on|off           print each statement's run time
  .format table|json|csv   how results are printed
  .quit                    leave (also .exit or Ctrl-D); asks before dropping unsaved changes
Tab completes keywords, functions and component and field names (Health.hp).";

const DOT_COMMANDS: &[&str] = &[".help", ".tables", ".indexes", ".save", ".timing", ".format", ".quit", ".exit"];

/// Runs `ecsdb shell`.
pub fn run(args: &ShellArgs) -> Result<(), Failure> {
    // The stamp is taken before loading: a save in between reads as a change (a false alarm),
    // never as no change (a lost update).
    let (world, stamp) = match &args.world {
        Some(p) => {
            let stamp = world_file::stamp(p)?;
            (world_file::open_or_create(p)?, stamp)
        }
        None => (World::new(), None),
    };
    let mut shell = Shell {
        db: Database::from_world(world),
        path: args.world.clone(),
        stamp,
        busy_timeout: args.busy_timeout,
        changed_on_disk: false,
        format: args.format,
        timing: false,
        dirty: false,
        failed: false,
        autosave: args.autosave,
    };
    if io::stdin().is_terminal() { shell.interactive() } else { shell.piped() }
}

struct Shell {
    db: Database,
    path: Option<PathBuf>,
    /// What the world file looked like when the shell loaded or last saved it.
    stamp: Option<FileStamp>,
    busy_timeout: Duration,
    /// Whether a save was refused because another process saved the world file since.
    changed_on_disk: bool,
    format: Format,
    timing: bool,
    dirty: bool,
    /// Whether any statement or command failed (the exit code when piped).
    failed: bool,
    autosave: bool,
}

/// What a dot-command asks of the loop.
enum Next {
    Continue,
    Quit,
}

impl Shell {
    /// Reads statements from a pipe until EOF.
    fn piped(&mut self) -> Result<(), Failure> {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let mut buffer = String::new();
        let mut raw = Vec::new();
        let mut line_no = 0usize;
        loop {
            raw.clear();
            let n = input.read_until(b'\n', &mut raw).map_err(|e| Failure::usage(format!("cannot read stdin: {e}")))?;
            if n == 0 {
                break;
            }
            line_no += 1;
            let line = std::str::from_utf8(&raw)
                .map_err(|_| Failure::usage(format!("stdin is not valid UTF-8 (line {line_no})")))?;
            let line = line.strip_suffix('\n').unwrap_or(line);
            let line = line.strip_suffix('\r').unwrap_or(line);
            if buffer.trim().is_empty() && line.trim_start().starts_with('.') {
                buffer.clear();
                if let Next::Quit = self.dot_command(line.trim())? {
                    return self.finish_piped();
                }
                continue;
            }
            buffer.push_str(line);
            buffer.push('\n');
            if statement_state(&buffer) == StatementState::Complete {
                self.run_text(&buffer)?;
                buffer.clear();
            }
        }
        if statement_state(&buffer) != StatementState::Empty {
            self.run_text(&buffer)?;
        }
        self.finish_piped()
    }

    fn finish_piped(&mut self) -> Result<(), Failure> {
        if self.dirty {
            if self.autosave {
                self.save(None)?;
            } else {
                let target = self.path.as_ref().map_or("in-memory world".to_string(), |p| p.display().to_string());
                format::eprint_line(&format!("ecsdb: changes were not saved to {target} (use .save or --autosave)"));
            }
        }
        if self.failed { Err(Failure::Statement) } else { Ok(()) }
    }

    /// The line editor loop on a terminal.
    fn interactive(&mut self) -> Result<(), Failure> {
        let mut editor = new_editor()?;
        editor.set_helper(Some(ShellHelper::from_world(self.db.world())));
        let history = history_path();
        if let Some(h) = &history {
            let _ = editor.load_history(h);
        }
        let name = self.path.as_ref().map_or("in-memory world".to_string(), |p| p.display().to_string());
        format::print_line(&format!(
            "ecsdb shell on {name} ({} entities, {} components). Statements end with ';'. .help for help.",
            format::thousands(self.db.world().len() as u64),
            self.db.world().components().len()
        ));
        loop {
            match editor.readline("ecsdb> ") {
                Ok(text) => {
                    if text.trim().is_empty() {
                        continue;
                    }
                    let _ = editor.add_history_entry(text.trim_end());
                    let trimmed = text.trim();
                    if trimmed.starts_with('.') && !trimmed.contains('\n') {
                        match self.dot_command(trimmed) {
                            Ok(Next::Continue) => {}
                            Ok(Next::Quit) => break,
                            Err(Failure::Usage(msg)) => format::eprint_line(&format!("error: {msg}")),
                            Err(_) => {}
                        }
                        continue;
                    }
                    if let Err(Failure::Usage(msg)) = self.run_text(&text) {
                        format::eprint_line(&format!("error: {msg}"));
                    }
                    if let Some(h) = editor.helper_mut() {
                        *h = ShellHelper::from_world(self.db.world());
                    }
                }
                Err(ReadlineError::Interrupted) => continue,
                Err(ReadlineError::Eof) => break,
                Err(ReadlineError::Signal(_)) => continue,
                Err(e) => {
                    format::eprint_line(&format!("ecsdb: input error: {e}"));
                    break;
                }
            }
        }
        if let Some(h) = &history {
            let _ = editor.save_history(h);
        }
        if self.dirty {
            // The questions below take one-line answers: no completion, and no waiting for a
            // `;` that an answer like `n` would never have.
            editor.set_helper(None);
            if self.autosave && self.path.is_some() {
                match self.save(None) {
                    // Another process saved the file: ask where to save instead.
                    Err(Failure::Usage(msg)) if self.changed_on_disk => format::eprint_line(&format!("error: {msg}")),
                    other => return other,
                }
            }
            loop {
                // Once the world file turned out to be changed by another process, only a
                // new file name (or discarding) is offered.
                let ask_for_name = self.path.is_none() || self.changed_on_disk;
                let question = match &self.path {
                    Some(p) if !ask_for_name => format!("Save changes to {}? [Y/n] ", p.display()),
                    Some(_) => "Save to another file? Enter a file name (empty to discard): ".to_string(),
                    None => "Save the in-memory world? Enter a file name (empty to discard): ".to_string(),
                };
                let answer = match editor.readline(&question) {
                    Ok(a) => a.trim().to_string(),
                    Err(_) if ask_for_name => String::new(),
                    Err(_) => "n".to_string(),
                };
                let path = if ask_for_name { None } else { self.path.as_ref() };
                let result = match (path, answer.to_ascii_lowercase().as_str()) {
                    (Some(_), "" | "y" | "yes") => self.save(None),
                    (Some(_), "n" | "no") | (None, "") => {
                        format::print_line("changes discarded");
                        Ok(())
                    }
                    (Some(_), _) => continue,
                    (None, _) => self.save(Some(Path::new(&answer))),
                };
                match result {
                    Ok(()) => break,
                    // Could not save: say why and ask again (empty or `n` discards).
                    Err(Failure::Usage(msg)) => format::eprint_line(&format!("error: {msg}")),
                    Err(other) => return Err(other),
                }
            }
        }
        Ok(())
    }

    /// Runs one or more statements, printing results and errors.
    fn run_text(&mut self, text: &str) -> Result<(), Failure> {
        let stdout = io::stdout();
        let mut out = stdout.lock();
        let opts = RunOptions { format: self.format, print: true, keep_going: true, timing: self.timing, origin: None };
        let report = run_script(&mut self.db, text, &Params::new(), &mut out, &opts);
        let _ = out.flush();
        if report.mutated > 0 {
            self.dirty = true;
        }
        if report.failed > 0 {
            self.failed = true;
        }
        match report.output_error {
            Some(e) => Err(format::output_failure(e)),
            None => Ok(()),
        }
    }

    fn dot_command(&mut self, line: &str) -> Result<Next, Failure> {
        let mut words = line.split_whitespace();
        let cmd = words.next().unwrap_or("");
        let arg = words.next();
        let extra = words.next();
        let result = match (cmd, arg, extra) {
            (".help", None, _) => {
                format::print_line(HELP);
                Ok(Next::Continue)
            }
            (".tables", None, _) => self.run_text("SHOW COMPONENTS").map(|()| Next::Continue),
            (".indexes", None, _) => self.run_text("SHOW INDEXES").map(|()| Next::Continue),
            (".save", file, None) => self.save(file.map(Path::new)).map(|()| Next::Continue),
            (".timing", Some(v), None) if v.eq_ignore_ascii_case("on") || v.eq_ignore_ascii_case("off") => {
                self.timing = v.eq_ignore_ascii_case("on");
                Ok(Next::Continue)
            }
            (".timing", _, _) => Err(Failure::usage("usage: .timing on|off")),
            (".format", Some(f), None) => match Format::from_name(f) {
                Some(f) => {
                    self.format = f;
                    Ok(Next::Continue)
                }
                None => Err(Failure::usage(format!("unknown format '{f}': use table, json or csv"))),
            },
            (".format", None, _) => {
                format::print_line(self.format.name());
                Ok(Next::Continue)
            }
            (".quit" | ".exit", None, _) => Ok(Next::Quit),
            (c, _, _) if DOT_COMMANDS.contains(&c) => Err(Failure::usage(format!("bad arguments to {c}; see .help"))),
            (c, _, _) => Err(Failure::usage(format!("unknown command '{c}'; see .help"))),
        };
        match result {
            Err(Failure::Usage(msg)) => {
                self.failed = true;
                format::eprint_line(&format!("error: {msg}"));
                Ok(Next::Continue)
            }
            other => other,
        }
    }

    /// Saves to `file`, or to the shell's world file. A new file becomes the world file.
    ///
    /// The shell's own world file is overwritten only if no other process saved it since the
    /// shell loaded or last saved it; a file named with `.save FILE` is the user's choice.
    fn save(&mut self, file: Option<&Path>) -> Result<(), Failure> {
        let target = match (file, &self.path) {
            (Some(f), _) => f.to_path_buf(),
            (None, Some(p)) => p.clone(),
            (None, None) => return Err(Failure::usage("this world has no file yet: use .save FILE")),
        };
        let start = Instant::now();
        let lock = world_file::lock(&target, self.busy_timeout)?;
        if self.path.as_deref().is_some_and(|p| same_file(p, &target)) && world_file::stamp(&target)? != self.stamp {
            self.changed_on_disk = true;
            return Err(Failure::usage(format!(
                "{} changed on disk since this shell loaded it (another process saved it): not overwritten; \
                 save your changes elsewhere with .save FILE",
                target.display()
            )));
        }
        let bytes = world_file::save_locked(self.db.world(), &lock)?;
        self.stamp = world_file::stamp(&target)?;
        drop(lock);
        format::eprint_line(&format!(
            "saved {} ({} entities, {} bytes) in {}",
            target.display(),
            format::thousands(self.db.world().len() as u64),
            format::thousands(bytes),
            format::millis(start.elapsed())
        ));
        self.path = Some(target);
        self.dirty = false;
        self.changed_on_disk = false;
        Ok(())
    }
}

/// Whether two paths name the same file (`w.ecsdb` and `./w.ecsdb`).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

/// Where the history is kept: `$ECSDB_HISTORY`, else `$HOME/.ecsdb_history`.
/// The shell's line editor (list completion, no automatic history).
fn new_editor() -> Result<Editor<ShellHelper, DefaultHistory>, Failure> {
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .auto_add_history(false)
        .max_history_size(5000)
        .map_err(|e| Failure::usage(format!("cannot start the line editor: {e}")))?
        .build();
    Editor::with_config(config).map_err(|e| Failure::usage(format!("cannot start the line editor: {e}")))
}

/// The shell's line editor completing these (component, fields) names (`shell --connect`).
pub(crate) fn editor(names: Vec<(String, Vec<String>)>) -> Result<Editor<ShellHelper, DefaultHistory>, Failure> {
    let mut editor = new_editor()?;
    editor.set_helper(Some(ShellHelper::from_names(names)));
    Ok(editor)
}

/// Replaces the names an editor completes.
pub(crate) fn set_names(editor: &mut Editor<ShellHelper, DefaultHistory>, names: Vec<(String, Vec<String>)>) {
    editor.set_helper(Some(ShellHelper::from_names(names)));
}

fn history_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ECSDB_HISTORY")
        && !p.is_empty()
    {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".ecsdb_history"))
}

/// Completion, multi-line validation and (default) hinting and highlighting for the editor.
pub(crate) struct ShellHelper {
    components: Vec<String>,
    /// `Component.field` for every field of every component.
    qualified: Vec<String>,
    /// Bare field names (for `SET hp = …`, `{hp: …}`), deduplicated.
    fields: Vec<String>,
}

impl ShellHelper {
    fn from_world(world: &World) -> ShellHelper {
        ShellHelper::from_names(
            world
                .components()
                .iter()
                .map(|info| (info.name().to_string(), info.fields().iter().map(|f| f.name.clone()).collect()))
                .collect(),
        )
    }

    /// Completion of these (component, fields) names (a remote world's schema).
    fn from_names(names: Vec<(String, Vec<String>)>) -> ShellHelper {
        let mut components = Vec::new();
        let mut qualified = Vec::new();
        let mut fields: Vec<String> = Vec::new();
        for (name, names) in names {
            for f in names {
                qualified.push(format!("{name}.{f}"));
                if !fields.contains(&f) {
                    fields.push(f);
                }
            }
            components.push(name);
        }
        components.sort();
        qualified.sort();
        fields.sort();
        ShellHelper { components, qualified, fields }
    }

    /// Candidates for the word `word`, which starts at the beginning of the line when
    /// `line_start`.
    fn candidates(&self, word: &str, line_start: bool) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if word.starts_with('.') {
            if line_start {
                out.extend(DOT_COMMANDS.iter().filter(|c| c.starts_with(word)).map(|c| c.to_string()));
            }
            return out;
        }
        if word.contains('.') {
            out.extend(self.qualified.iter().filter(|q| q.starts_with(word)).cloned());
            if out.is_empty() {
                let lower = word.to_ascii_lowercase();
                out.extend(self.qualified.iter().filter(|q| q.to_ascii_lowercase().starts_with(&lower)).cloned());
            }
            return out;
        }
        if word.is_empty() {
            return out;
        }
        let lower = word.to_ascii_lowercase();
        let lowercase_typed = word.chars().all(|c| !c.is_ascii_uppercase());
        for c in &self.components {
            if c.to_ascii_lowercase().starts_with(&lower) {
                out.push(c.clone());
            }
        }
        for k in KEYWORDS.iter().map(|k| k.word) {
            if k.to_ascii_lowercase().starts_with(&lower) {
                out.push(if lowercase_typed { k.to_ascii_lowercase() } else { k.to_string() });
            }
        }
        let functions = BUILTIN_FUNCTIONS.iter().map(|f| f.name);
        for f in functions.chain(FieldType::ALL.iter().map(|t| t.name())) {
            if f.starts_with(&lower) {
                out.push(f.to_string());
            }
        }
        for f in &self.fields {
            if f.starts_with(word) {
                out.push(f.clone());
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|c| seen.insert(c.clone()));
        out
    }
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let pos = pos.min(line.len());
        let before = line.get(..pos).unwrap_or("");
        let start = before
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .last()
            .map_or(pos, |(i, _)| i);
        let word = &before[start..];
        let line_start = before[..start].trim().is_empty();
        let pairs = self
            .candidates(word, line_start)
            .into_iter()
            .map(|c| Pair { display: c.clone(), replacement: c })
            .collect();
        Ok((start, pairs))
    }
}

impl Validator for ShellHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        let trimmed = input.trim_start();
        if trimmed.starts_with('.') && !trimmed.contains('\n') {
            return Ok(ValidationResult::Valid(None));
        }
        Ok(match statement_state(input) {
            StatementState::Incomplete => ValidationResult::Incomplete,
            _ => ValidationResult::Valid(None),
        })
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(&'s self, prompt: &'p str, _default: bool) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Helper for ShellHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_names() {
        let mut w = World::new();
        w.define_component(&ecsdb::ComponentDef::new("Health", &[("hp", ecsdb::FieldType::F32)])).unwrap();
        let h = ShellHelper::from_world(&w);
        assert_eq!(h.candidates("Hea", false), vec!["Health".to_string()]);
        assert_eq!(h.candidates("Health.", false), vec!["Health.hp".to_string()]);
        assert!(h.candidates("sel", false).contains(&"select".to_string()));
        assert!(h.candidates("SEL", false).contains(&"SELECT".to_string()));
        assert_eq!(h.candidates(".ta", true), vec![".tables".to_string()]);
        // Functions and types from the language's tables, not a copy of them.
        assert!(h.candidates("dep", false).contains(&"depth".to_string()));
        assert!(h.candidates("vec", false).contains(&"vec3".to_string()));
    }
}
