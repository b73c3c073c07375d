//! The sandbox a scenario runs in, and the file steps' view of a target's layout.
//!
//! Layout: `SANDBOX/root` is the target's root; `SANDBOX/outside` holds the files a scenario
//! places outside the root (targets of symbolic links, say). The sandbox remembers exactly
//! what the scenario put outside the root, so that after the run [`Sandbox::escapes`] can
//! name anything that appeared or changed there: a store that writes outside its root fails
//! S13 however it got there (a `../` list name, a followed link).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::load::check_relative;
use taskproof_core::protocol::Layout;

/// The most entries an escape report names; more are summarised by count.
const MAX_REPORTED: usize = 20;

pub struct Sandbox {
    /// Removed when the sandbox is dropped.
    dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    /// Outside files the scenario wrote, by name, with their contents.
    placed: BTreeMap<String, Vec<u8>>,
}

impl Sandbox {
    pub fn new() -> io::Result<Sandbox> {
        let dir = tempfile::Builder::new().prefix("taskproof-").tempdir()?;
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir(&root)?;
        std::fs::create_dir(&outside)?;
        Ok(Sandbox {
            dir,
            root,
            outside,
            placed: BTreeMap::new(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A path inside the root, checked again after placeholders were filled.
    pub fn in_root(&self, rel: &str) -> Result<PathBuf, String> {
        check_relative(rel)?;
        Ok(self.root.join(rel))
    }

    pub fn outside_path(&self, name: &str) -> PathBuf {
        self.outside.join(name)
    }

    /// Writes a file outside the root and remembers it as placed by the scenario.
    pub fn write_outside(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        std::fs::write(self.outside.join(name), bytes)?;
        self.placed.insert(name.to_string(), bytes.to_vec());
        Ok(())
    }

    /// Everything outside the root that differs from what the scenario placed there, as
    /// human-readable lines; empty when nothing escaped.
    pub fn escapes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let base = self.dir.path();
        let mut top = match read_sorted(base) {
            Ok(t) => t,
            Err(e) => return vec![format!("cannot read the sandbox {}: {e}", base.display())],
        };
        top.retain(|p| p != &self.root && p != &self.outside);
        for p in top {
            describe_new(base, &p, &mut out);
        }
        match read_sorted(&self.outside) {
            Ok(entries) => {
                for p in entries {
                    let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                    let placed = name.as_deref().and_then(|n| self.placed.get(n));
                    let meta = std::fs::symlink_metadata(&p);
                    match (placed, meta) {
                        (Some(bytes), Ok(m)) if m.is_file() => {
                            if std::fs::read(&p).ok().as_deref() != Some(bytes.as_slice()) {
                                out.push(format!("changed: {}", rel(base, &p)));
                            }
                        }
                        (Some(_), _) => out.push(format!("replaced: {}", rel(base, &p))),
                        (None, _) => describe_new(base, &p, &mut out),
                    }
                }
            }
            Err(_) => out.push("removed: outside/".into()),
        }
        for name in self.placed.keys() {
            if std::fs::symlink_metadata(self.outside.join(name)).is_err() {
                out.push(format!("removed: outside/{name}"));
            }
        }
        if out.len() > MAX_REPORTED {
            let more = out.len() - MAX_REPORTED;
            out.truncate(MAX_REPORTED);
            out.push(format!("and {more} more"));
        }
        out
    }
}

fn read_sorted(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    v.sort();
    Ok(v)
}

fn rel(base: &Path, p: &Path) -> String {
    p.strip_prefix(base).unwrap_or(p).display().to_string()
}

/// Names a new entry and, for a folder, what is inside it (without following links).
fn describe_new(base: &Path, p: &Path, out: &mut Vec<String>) {
    let is_dir = std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    if !is_dir {
        out.push(format!("appeared: {}", rel(base, p)));
        return;
    }
    out.push(format!("appeared: {}/", rel(base, p)));
    if let Ok(entries) = read_sorted(p) {
        for e in entries {
            if out.len() > MAX_REPORTED {
                return;
            }
            describe_new(base, &e, out);
        }
    }
}

/// Replaces every `{task:ID}` in a path by task ID's file name in `layout`.
pub fn task_paths(path: &str, layout: Layout) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find("{task:") {
        out.push_str(&rest[..start]);
        let after = &rest[start + "{task:".len()..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`{{task:` without a closing `}}` in {path:?}"))?;
        let name = layout
            .file_name_of(&after[..end])
            .ok_or_else(|| "the target's layout is opaque".to_string())?;
        out.push_str(&name);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_paths_follow_the_layout() {
        assert_eq!(
            task_paths("l/{task:3}", Layout::ClaudeCode).unwrap(),
            "l/3.json"
        );
        assert_eq!(
            task_paths("l/{task:3}", Layout::S07).unwrap(),
            "l/task_3.json"
        );
        assert!(task_paths("l/{task:3}", Layout::Opaque).is_err());
        assert_eq!(task_paths("l/x.json", Layout::Opaque).unwrap(), "l/x.json");
    }

    #[test]
    fn the_sandbox_notices_what_escaped() {
        let mut sb = Sandbox::new().unwrap();
        sb.write_outside("secret.json", b"{}").unwrap();
        std::fs::write(sb.root().join("inside.json"), b"x").unwrap();
        assert!(sb.escapes().is_empty(), "{:?}", sb.escapes());
        let base = sb.root().parent().unwrap().to_path_buf();
        std::fs::create_dir(base.join("x")).unwrap();
        std::fs::write(base.join("x/1.json"), b"{}").unwrap();
        std::fs::write(sb.outside_path("secret.json"), b"{\"changed\":1}").unwrap();
        assert_eq!(
            sb.escapes(),
            vec![
                "appeared: x/",
                "appeared: x/1.json",
                "changed: outside/secret.json"
            ]
        );
    }
}
