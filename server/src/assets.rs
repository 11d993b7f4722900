//! The web inspector's static files (`server/assets/`, see docs/inspector.md), built into the
//! binary so that `ecsdb serve` needs nothing else at run time.

/// One served file: URL path, content type, bytes.
type Asset = (&'static str, &'static str, &'static [u8]);

macro_rules! asset {
    ($path:literal, $mime:expr_2021) => {
        (concat!("/", $path), $mime, include_bytes!(concat!("../assets/", $path)) as &[u8])
    };
}

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
// Module scripts are refused by browsers unless served with a JavaScript type.
const JS: &str = "text/javascript; charset=utf-8";

/// Every file under `server/assets/` (a test checks that none is missing).
const FILES: &[Asset] = &[
    asset!("index.html", HTML),
    asset!("style.css", CSS),
    asset!("favicon.svg", "image/svg+xml"),
    asset!("js/charts.js", JS),
    asset!("js/dom.js", JS),
    asset!("js/editor.js", JS),
    asset!("js/entities.js", JS),
    asset!("js/entity-queries.js", JS),
    asset!("js/json.js", JS),
    asset!("js/lexer.js", JS),
    asset!("js/literals.js", JS),
    asset!("js/main.js", JS),
    asset!("js/query.js", JS),
    asset!("js/rpc.js", JS),
    asset!("js/rpc-worker.js", JS),
    asset!("js/schema.js", JS),
    asset!("js/stats.js", JS),
    asset!("js/values.js", JS),
    asset!("js/watch.js", JS),
];

/// (content type, bytes) of a URL path; `/` is the page, `/favicon.ico` its icon.
pub fn get(path: &str) -> Option<(&'static str, &'static [u8])> {
    let path = match path {
        "/" => "/index.html",
        "/favicon.ico" => "/favicon.svg",
        p => p,
    };
    FILES.iter().find(|(p, _, _)| *p == path).map(|(_, ty, bytes)| (*ty, *bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn files_under(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = format!("{prefix}/{}", entry.file_name().to_string_lossy());
            if entry.file_type().unwrap().is_dir() {
                files_under(&entry.path(), &name, out);
            } else {
                out.push(name);
            }
        }
    }

    #[test]
    fn every_asset_file_is_served() {
        let mut on_disk = Vec::new();
        files_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("assets"), "", &mut on_disk);
        on_disk.sort();
        let mut served: Vec<String> = FILES.iter().map(|(p, _, _)| p.to_string()).collect();
        served.sort();
        assert_eq!(on_disk, served, "list every file of server/assets/ in server/src/assets.rs");
    }

    #[test]
    fn paths_and_types() {
        assert_eq!(get("/").unwrap().0, HTML);
        assert_eq!(get("/js/main.js").unwrap().0, JS);
        assert_eq!(get("/favicon.ico").unwrap().0, "image/svg+xml");
        assert!(get("/js/../index.html").is_none());
        assert!(get("/nope.js").is_none());
    }
}
