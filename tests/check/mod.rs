//! `taskproof check` through the built binary: the audit of task folders (audit.rs) and hook
//! mode (hook.rs). Here the task files both build, in either layout.

mod audit;
mod hook;

use std::path::Path;

use serde_json::{Value, json};

use crate::util::write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Cc,
    S07,
}

const BOTH: [Layout; 2] = [Layout::Cc, Layout::S07];

fn file(l: Layout, id: u64) -> String {
    match l {
        Layout::Cc => format!("{id}.json"),
        Layout::S07 => format!("task_{id}.json"),
    }
}

fn id(l: Layout, id: u64) -> Value {
    match l {
        Layout::Cc => json!(id.to_string()),
        Layout::S07 => json!(id),
    }
}

fn ids(l: Layout, v: &[u64]) -> Value {
    Value::Array(v.iter().map(|&i| id(l, i)).collect())
}

/// A task file's text, in the layout's own form.
fn task(l: Layout, n: u64, status: &str, blocks: &[u64], blocked_by: &[u64]) -> String {
    let v = json!({
        "id": id(l, n),
        "subject": format!("task {n}"),
        "description": "",
        "status": status,
        "blocks": ids(l, blocks),
        "blockedBy": ids(l, blocked_by),
    });
    serde_json::to_string_pretty(&v).unwrap()
}

fn put(dir: &Path, l: Layout, n: u64, status: &str, blocks: &[u64], blocked_by: &[u64]) {
    write(dir, &file(l, n), &task(l, n, status, blocks, blocked_by));
}

/// Every entry under `dir`: its name and its bytes, or where a link points.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let ft = e.file_type().unwrap();
        let content = if ft.is_symlink() {
            std::fs::read_link(e.path())
                .unwrap()
                .to_string_lossy()
                .into_owned()
                .into_bytes()
        } else if ft.is_dir() {
            b"<dir>".to_vec()
        } else {
            std::fs::read(e.path()).unwrap()
        };
        out.push((name, content));
    }
    out.sort();
    out
}
