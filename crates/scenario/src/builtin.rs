//! The shipped scenario suite, built into the binary (see this crate's `build.rs`), so that an installed
//! `taskproof` runs it outside the repository. Scenarios keep the file name they have in the
//! repository (`scenarios/NAME.json`), so reports name the file to open or fix; `taskproof
//! scenarios export DIR` writes the files out to edit them or run them from disk.

use std::path::{Path, PathBuf};

use crate::format::Scenario;
use crate::load::{LoadError, finish, load_text};

mod generated {
    include!(concat!(env!("OUT_DIR"), "/builtin_scenarios.rs"));
}

/// An export that could not be done; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0} already exists with other contents; export to an empty folder")]
    Exists(PathBuf),
    #[error("failed to write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Every built-in file: its path in the repository (`scenarios/...`) and its contents.
/// Scenario files end in `.json`; the rest are the suite's README and expected-failure
/// lists (`scenarios/expected/*.skip`).
pub fn files() -> &'static [(&'static str, &'static str)] {
    generated::FILES
}

/// The built-in scenarios, sorted by id.
pub fn load_builtin() -> Result<Vec<Scenario>, Vec<LoadError>> {
    let mut scenarios = Vec::new();
    let mut errors = Vec::new();
    for (path, text) in files().iter().filter(|(p, _)| p.ends_with(".json")) {
        match load_text(text, Path::new(path)) {
            Ok(s) => scenarios.push(s),
            Err(e) => errors.push(e),
        }
    }
    finish(scenarios, errors)
}

/// Writes every built-in file under `dir` (`dir/NAME.json`, `dir/expected/...`), creating
/// folders. A file that exists with the same contents is left alone; one with other
/// contents stops the export before anything is written. Returns the files written.
pub fn export(dir: &Path) -> Result<Vec<PathBuf>, ExportError> {
    let planned: Vec<(PathBuf, &str)> = files()
        .iter()
        .map(|(p, text)| {
            let rel = Path::new(p)
                .strip_prefix("scenarios")
                .unwrap_or(Path::new(p));
            (dir.join(rel), *text)
        })
        .collect();
    for (path, text) in &planned {
        if let Ok(existing) = std::fs::read(path)
            && existing != text.as_bytes()
        {
            return Err(ExportError::Exists(path.clone()));
        }
        if path.exists() && !path.is_file() {
            return Err(ExportError::Exists(path.clone()));
        }
    }
    let mut written = Vec::new();
    for (path, text) in planned {
        if std::fs::read(&path).is_ok_and(|b| b == text.as_bytes()) {
            continue;
        }
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, text)
        };
        write().map_err(|source| ExportError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_suite_is_the_scenarios_folder() {
        let builtin = load_builtin().expect("the built-in scenarios load");
        let on_disk =
            super::super::load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"))
                .expect("the scenarios folder loads");
        let ids = |v: &[Scenario]| v.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&builtin), ids(&on_disk));
        for s in &builtin {
            assert_eq!(s.file, PathBuf::from(format!("scenarios/{}.json", s.id)));
        }
        assert!(
            files()
                .iter()
                .any(|(p, _)| *p == "scenarios/expected/naive-strict.skip")
        );
    }

    #[test]
    fn export_writes_every_file_and_refuses_to_overwrite_others() {
        let dir = tempfile::tempdir().unwrap();
        let written = export(dir.path()).unwrap();
        assert_eq!(written.len(), files().len());
        assert!(dir.path().join("expected/naive-strict.skip").is_file());
        assert!(
            export(dir.path()).unwrap().is_empty(),
            "same contents: nothing to do"
        );
        let one = dir.path().join("rt01-basic-creation.json");
        std::fs::write(&one, "changed").unwrap();
        std::fs::remove_file(dir.path().join("rt02-status-updates.json")).unwrap();
        let e = export(dir.path()).unwrap_err();
        assert!(matches!(e, ExportError::Exists(p) if p == one));
        assert!(
            !dir.path().join("rt02-status-updates.json").exists(),
            "nothing is written when one file is in the way"
        );
    }
}
