//! The raw readers: threads that poll the list's task files during a race, as another
//! program would, and count the reads that find a file existing but not parsing (torn
//! writes, S18) once per torn state; and the scan of the folder for corrupt files at the end.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::check::TornRead;
use crate::workload::LIST;
use taskproof_core::protocol::Layout;
use taskproof_core::task::{Strictness, Task};

/// What identifies one state of a file: inode, modification time, length and bytes. A
/// writer changes at least one of them with every write, so reads of one state are reads
/// of the same moment of the same write.
fn file_state(meta: &std::fs::Metadata, bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let mut h = std::hash::DefaultHasher::new();
    (meta.ino(), meta.mtime(), meta.mtime_nsec(), meta.size()).hash(&mut h);
    bytes.hash(&mut h);
    h.finish()
}

/// What one raw reader saw: reads, torn reads, and the torn states keyed by file and state.
pub(super) struct ReaderOut {
    pub(super) reads: usize,
    pub(super) torn_reads: usize,
    pub(super) torn: HashMap<(String, u64), TornRead>,
}

/// Polls the list's task files until `stop`, counting reads and torn reads, and keeping
/// each torn state of a file once with the number of reads that saw it.
pub(super) fn reader(
    n: usize,
    folder: &Path,
    layout: Layout,
    stop: &AtomicBool,
    start: Instant,
) -> ReaderOut {
    let mut out = ReaderOut {
        reads: 0,
        torn_reads: 0,
        torn: HashMap::new(),
    };
    while !stop.load(Ordering::Relaxed) {
        read_pass(n, folder, layout, Some(stop), start, &mut out);
        std::thread::yield_now();
    }
    out
}

/// Reads every task file of the folder once (stopping early when `stop` is set).
fn read_pass(
    n: usize,
    folder: &Path,
    layout: Layout,
    stop: Option<&AtomicBool>,
    start: Instant,
    out: &mut ReaderOut,
) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if layout.task_id_of(name).is_none() {
            continue;
        }
        let Ok(mut file) = std::fs::File::open(entry.path()) else {
            continue;
        };
        let Ok(meta) = file.metadata() else { continue };
        let mut bytes = Vec::new();
        if std::io::Read::read_to_end(&mut file, &mut bytes).is_err() {
            continue;
        }
        out.reads += 1;
        if let Err(error) = parse_task(&bytes) {
            out.torn_reads += 1;
            let file = format!("{LIST}/{name}");
            let state = file_state(&meta, &bytes);
            out.torn
                .entry((file.clone(), state))
                .or_insert_with(|| TornRead {
                    reader: n,
                    at: start.elapsed(),
                    file,
                    len: bytes.len(),
                    error,
                    reads: 0,
                })
                .reads += 1;
        }
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            break;
        }
    }
}

fn parse_task(bytes: &[u8]) -> Result<Task, String> {
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    Task::from_json(&v, Strictness::Lenient).map_err(|e| e.to_string())
}

/// Task files in the folder that do not parse, with the reason.
pub(super) fn scan_corrupt(folder: &Path, layout: Layout) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(folder) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if layout.task_id_of(&name).is_none() {
            continue;
        }
        if let Ok(bytes) = std::fs::read(entry.path())
            && let Err(e) = parse_task(&bytes)
        {
            out.push((format!("{LIST}/{name}"), e));
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskproof_core::task::TaskId;

    #[test]
    fn one_torn_state_read_many_times_is_one_torn_write() {
        let root = tempfile::tempdir().unwrap();
        let folder = root.path().join(LIST);
        std::fs::create_dir_all(&folder).unwrap();
        let start = Instant::now();
        let mut out = ReaderOut {
            reads: 0,
            torn_reads: 0,
            torn: HashMap::new(),
        };
        let pass =
            |out: &mut ReaderOut| read_pass(0, &folder, Layout::ClaudeCode, None, start, out);
        // A writer truncated 1.json and has not written it yet; readers see that moment
        // again and again.
        std::fs::write(folder.join("1.json"), "").unwrap();
        for _ in 0..5 {
            pass(&mut out);
        }
        assert_eq!((out.reads, out.torn_reads, out.torn.len()), (5, 5, 1));
        // Half written: another torn state of the file.
        std::fs::write(folder.join("1.json"), "{\"id\": \"1\", \"subj").unwrap();
        pass(&mut out);
        pass(&mut out);
        // Whole: not torn.
        let whole = Task::new(TaskId(1), "a").to_json().to_string();
        std::fs::write(folder.join("1.json"), whole).unwrap();
        pass(&mut out);
        assert_eq!((out.reads, out.torn_reads, out.torn.len()), (8, 7, 2));
        let mut reads: Vec<usize> = out.torn.values().map(|t| t.reads).collect();
        reads.sort();
        assert_eq!(reads, vec![2, 5]);
    }
}
