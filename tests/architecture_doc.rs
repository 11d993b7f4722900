//! docs/architecture.md says what the code is: every workspace member has a row in its table
//! of crates, and every crate but the engine forbids `unsafe`.

use std::path::Path;

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `(name, path)` of every workspace member, from the workspace's Cargo.toml.
fn members() -> Vec<(String, String)> {
    let manifest = read("Cargo.toml");
    let list = manifest.split("members = [").nth(1).and_then(|rest| rest.split(']').next()).expect("a members list");
    let mut out = vec![("ecsdb".to_string(), ".".to_string())];
    for path in list.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()) {
        let member = read(&format!("{path}/Cargo.toml"));
        let name = member
            .lines()
            .find_map(|l| l.strip_prefix("name = ").map(|n| n.trim_matches('"').to_string()))
            .expect("a package name");
        out.push((name, path.to_string()));
    }
    out
}

#[test]
fn every_workspace_member_has_a_row() {
    let doc = read("docs/architecture.md");
    for (name, path) in members() {
        let row = doc.lines().find(|l| l.starts_with(&format!("| `{name}` |")));
        let row = row.unwrap_or_else(|| panic!("docs/architecture.md has no row for crate `{name}`"));
        let shown = if path == "." { "./".to_string() } else { format!("{path}/") };
        assert!(row.contains(&format!("`{shown}`")), "the row of `{name}` names its path `{shown}`: {row}");
    }
}

#[test]
fn only_the_engine_has_unsafe_code() {
    for (name, path) in members() {
        if name == "ecsdb-engine" {
            continue;
        }
        let root = if path == "." { "src".to_string() } else { format!("{path}/src") };
        let lib = [format!("{root}/lib.rs"), format!("{root}/main.rs")]
            .into_iter()
            .find(|p| Path::new(env!("CARGO_MANIFEST_DIR")).join(p).exists())
            .unwrap_or_else(|| panic!("{name} has a lib.rs or main.rs"));
        assert!(read(&lib).contains("#![forbid(unsafe_code)]"), "{lib} forbids unsafe code");
    }
}
