//! Builds the shipped scenario suite (`scenarios/`) into the binary, so that an installed
//! `taskproof run` has it without the repository: writes `$OUT_DIR/builtin_scenarios.rs`,
//! an array of (path relative to the repository, contents) for every file under
//! `scenarios/`, each read with `include_str!` so that cargo tracks it. It belongs to the
//! crate whose `scenario::builtin` includes that file; the repository is two folders up.

use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("failed to read {}: {e}", dir.display()))
        .map(|e| e.expect("a readable folder entry").path())
        .collect();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            collect(&e, out);
        } else {
            out.push(e);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let repo = manifest
        .join("../..")
        .canonicalize()
        .expect("the repository folder");
    let dir = repo.join("scenarios");
    println!("cargo::rerun-if-changed=../../scenarios");
    let mut files = Vec::new();
    collect(&dir, &mut files);
    let mut code =
        String::from("/// Every file of the shipped suite: (`scenarios/...` path, contents).\n");
    code.push_str("pub static FILES: &[(&str, &str)] = &[\n");
    for f in files {
        let rel = f.strip_prefix(&repo).expect("under the repository folder");
        let rel = rel.to_str().expect("scenario paths are UTF-8");
        let abs = f.to_str().expect("scenario paths are UTF-8");
        code.push_str(&format!("    ({rel:?}, include_str!({abs:?})),\n"));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("builtin_scenarios.rs"), code).expect("failed to write OUT_DIR");
}
