//! Writing to a journal: one hook run's entries, a restore's, and the compaction that keeps
//! the file bounded ([`COMPACT_FROM`], [`MAX_BYTES`], [`HARD_LIMIT`]).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use taskproof_store::Dir;

use super::*;

/// A journal smaller than this is never compacted: rewriting it would cost more than reading it.
pub const COMPACT_FROM: u64 = 1 << 20;
/// The most a journal holds after a compaction.
pub const MAX_BYTES: u64 = 32 << 20;
/// The most a journal ever holds: nothing is appended past it. A journal is compacted when
/// more than half of it is history, and a compaction keeps at most [`MAX_BYTES`], so only a
/// list whose live tasks alone exceed that reaches it.
pub const HARD_LIMIT: u64 = 2 * MAX_BYTES;

/// Refuses an append that would take the journal past [`HARD_LIMIT`].
pub(super) fn within_limit(path: &Path, complete: u64, more: usize) -> Result<(), JournalError> {
    if complete + more as u64 > HARD_LIMIT {
        return Err(JournalError::TooLarge {
            path: path.to_path_buf(),
            bytes: complete,
        });
    }
    Ok(())
}

/// What one hook run tells the journal.
#[derive(Debug, Clone, Default)]
pub struct Observed<'a> {
    /// Every readable task file of the list, with its bytes.
    pub files: &'a [(String, Vec<u8>)],
    /// Task files present but not readable (a link, a folder): neither seen nor gone.
    pub unreadable: &'a [String],
    /// Files the agent asked to delete in this call (`TaskUpdate` status `deleted`), or that
    /// Claude Code takes back because the hook refused them (`TaskCreated`).
    pub deleting: Vec<String>,
    /// The files of `files` whose bytes were not a whole task when read, and why.
    pub torn: &'a [(String, Torn)],
    /// The session id of the hook event, written on the `run` line.
    pub session: Option<&'a str>,
}

/// The mark of `name` in a run's `torn` list.
pub(super) fn torn_of(torn: &[(String, Torn)], name: &str) -> Option<Torn> {
    torn.iter().find(|(n, _)| n == name).map(|(_, t)| *t)
}

/// Brings the journal of list `list` (folder `folder`), held by `locked` since before the
/// list was read, up to date with what a hook run saw: a `seen` entry for each file whose
/// bytes the journal has not seen as its current version (or had as a version that was not
/// whole, and are whole now), marked when they are not whole, `gone` for each live file that is
/// missing, `delete` for each delete asked for, then one `run` line; compacts when due.
/// Returns how many entries it wrote.
pub fn record(
    mut locked: Locked,
    list: &str,
    folder: &Path,
    seen: &Observed<'_>,
    at: u64,
) -> Result<usize, JournalError> {
    let bytes = locked.read_all()?;
    let mut out = Vec::new();
    let journal = if bytes.is_empty() {
        out = header_line(list, folder, at);
        Journal::default()
    } else {
        parse(&locked.path, &bytes, list, false)?
    };

    let mut written = 0;
    let present: std::collections::BTreeSet<&str> = seen
        .files
        .iter()
        .map(|(n, _)| n.as_str())
        .chain(seen.unreadable.iter().map(String::as_str))
        .collect();
    for (name, content) in seen.files {
        let h = hash(name, content);
        let torn = torn_of(seen.torn, name);
        // The same bytes read whole again, after a read that caught them mid-rewrite, are
        // journaled again: that version is whole after all.
        let known = journal
            .current(name)
            .is_some_and(|l| l.is_alive() && l.hash == h && (l.is_whole() || torn.is_some()));
        if !known {
            out.extend(seen_line(at, name, content, torn));
            written += 1;
        }
    }
    for (name, lives) in &journal.files {
        if let Some(l) = lives.last().filter(|l| l.is_alive())
            && !present.contains(name.as_str())
            && !seen.deleting.contains(name)
        {
            let mut gone = Out::new(at, "gone", Some(name));
            gone.last_seen = Some(l.last_at);
            out.extend(gone.line());
            written += 1;
        }
    }
    // Before the delete (`PreToolUse`) the file is there; after it (`PostToolUse`) it is
    // gone, and was this run's to delete, not something that vanished.
    for name in &seen.deleting {
        let alive = journal.current(name).is_some_and(Life::is_alive);
        if present.contains(name.as_str()) || alive {
            out.extend(Out::new(at, "delete", Some(name)).line());
            written += 1;
        }
    }
    let mut run = Out::new(at, "run", None);
    run.session = seen.session;
    out.extend(run.line());

    let old_len = bytes.len() as u64;
    locked.write_at(journal.complete as u64, old_len, &out)?;
    let len = (journal.complete + out.len()) as u64;
    // What a compaction would keep is at most what it keeps now plus this run's lines: unless
    // that much is less than half the file (or over the bound), the file is not parsed a
    // second time to find out.
    let upper = (journal.kept_bytes() + out.len()) as u64;
    if len > COMPACT_FROM && (upper * 2 < len || upper > MAX_BYTES) {
        // Judged on the journal as it is now, with this run's lines in it.
        let mut all = bytes;
        all.truncate(journal.complete);
        all.extend_from_slice(&out);
        compact_if_due(&locked, list, all)?;
    }
    Ok(written)
}

/// Compacts the journal whose whole content is `all` when more than half of it is history,
/// or it is over [`MAX_BYTES`].
pub(super) fn compact_if_due(
    locked: &Locked,
    list: &str,
    all: Vec<u8>,
) -> Result<(), JournalError> {
    let now = parse(&locked.path, &all, list, false)?;
    let kept = now.kept_bytes() as u64;
    if kept * 2 < all.len() as u64 || kept > MAX_BYTES {
        compact(locked, &all, &now)?;
    }
    Ok(())
}

/// Where a `PostToolUse` run checks whether the journal is due for compaction: each time its
/// appends take the file past a multiple of this, since reading the whole file each time
/// would cost what the run saves by not reading it.
pub(super) const POST_CHECK_EVERY: u64 = 256 * 1024;

/// The `PostToolUse` run's journal entries: a `seen` entry of each file the tool call wrote
/// (`files`, read just now, with the journal `locked` since before; those in `torn` marked),
/// without reading the journal beyond its first line (which must be this list's) and its
/// end. An entry of a file whose bytes the journal already had is history, dropped by the
/// next compaction.
pub fn record_written(
    mut locked: Locked,
    list: &str,
    folder: &Path,
    files: &[(String, Vec<u8>)],
    torn: &[(String, Torn)],
    at: u64,
) -> Result<usize, JournalError> {
    let point = locked.append_point(list)?;
    let mut out = point.start(list, folder, at);
    for (name, content) in files {
        out.extend(seen_line(at, name, content, torn_of(torn, name)));
    }
    locked.write_at(point.complete, point.size, &out)?;
    let len = point.complete + out.len() as u64;
    if len > COMPACT_FROM && len / POST_CHECK_EVERY != point.size / POST_CHECK_EVERY {
        let all = locked.read_all()?;
        compact_if_due(&locked, list, all)?;
    }
    Ok(files.len())
}

/// The longest first line looked for: a journal's is about 150 bytes and its list folder.
pub(super) const MAX_FIRST_LINE: usize = 64 * 1024;

/// The first line of a file of `size` bytes, without its newline; `None` when it has none
/// within [`MAX_FIRST_LINE`]. Reads 512 bytes first, then four times more each time.
pub(super) fn first_line(file: &File, size: u64) -> io::Result<Option<Vec<u8>>> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let mut buf = Vec::new();
    let mut want = 512;
    loop {
        let have = buf.len();
        let upto = want.min(size).min(MAX_FIRST_LINE);
        buf.resize(upto, 0);
        file.read_exact_at(&mut buf[have..], have as u64)?;
        if let Some(i) = buf[have..].iter().position(|&b| b == b'\n') {
            buf.truncate(have + i);
            return Ok(Some(buf));
        }
        if upto == size || upto == MAX_FIRST_LINE {
            return Ok(None);
        }
        want *= 4;
    }
}

/// Appends a `restored` entry for each version `check --restore` wrote back `into` (a list
/// folder) to the journal at `path`; with `same_list`, also a `seen` entry of each, since the
/// version is live in this list again.
pub fn record_restore(
    path: &Path,
    list: &str,
    folder: &Path,
    restored: &[(String, Vec<u8>)],
    into: &str,
    same_list: bool,
    at: u64,
) -> Result<(), JournalError> {
    append(path, list, folder, at, |out| {
        for (name, content) in restored {
            let mut r = Out::new(at, "restored", Some(name));
            r.hash = Some(hash_text(hash(name, content)));
            r.into = Some(into);
            out.extend(r.line());
            if same_list {
                out.extend(seen_line(at, name, content, None));
            }
        }
    })
}

/// Appends a `seen` entry for each file to the journal at `path` (created when absent): the
/// first entries of a list `check --restore` made, so that a reset of it is found again.
pub fn record_seen(
    path: &Path,
    list: &str,
    folder: &Path,
    files: &[(String, Vec<u8>)],
    at: u64,
) -> Result<(), JournalError> {
    append(path, list, folder, at, |out| {
        for (name, content) in files {
            out.extend(seen_line(at, name, content, None));
        }
    })
}

/// Appends the lines `fill` writes to the journal at `path` under its flock, after its last
/// complete line, starting the journal (its first line) when the file is new.
pub(super) fn append(
    path: &Path,
    list: &str,
    folder: &Path,
    at: u64,
    fill: impl FnOnce(&mut Vec<u8>),
) -> Result<(), JournalError> {
    let (locked, point) = open_for_append(path, list)?;
    let mut out = point.start(list, folder, at);
    fill(&mut out);
    locked.write_at(point.complete, point.size, &out)
}

pub(super) fn header_line(list: &str, folder: &Path, at: u64) -> Vec<u8> {
    let header = Header {
        taskproof_journal: FORMAT,
        list: list.to_string(),
        folder: folder.display().to_string(),
        created: at,
    };
    let mut out = serde_json::to_vec(&header).expect("headers serialize");
    out.push(b'\n');
    out
}

/// Rewrites the journal whole with only what `check` and `--restore` need (see the module
/// docs), through the store's whole-file write ([`Dir::write_atomic_through`]): a temporary
/// file in its folder, fsynced and renamed over it, then the folder fsynced. The temporary
/// file has one fixed name per journal, `.{name}.compact`, which the flock makes this
/// writer's alone: one that a killed compaction left is written over by the next. The caller
/// holds the flock; a writer waiting for it finds the new file when it gets it.
pub(super) fn compact(locked: &Locked, bytes: &[u8], j: &Journal) -> Result<(), JournalError> {
    let w = |error| JournalError::Write {
        path: locked.path.clone(),
        error,
    };
    let mut lives: Vec<&Life> = j.kept().collect();
    let mut size: usize = lives.iter().map(|l| l.kept_bytes()).sum();
    if size as u64 > MAX_BYTES {
        // Over the bound: the oldest vanished versions go first; live ones are what the list
        // is, and a journal without them is no journal.
        lives.sort_by_key(|l| (l.is_alive(), l.seen_at));
        let mut dropped = 0;
        while size as u64 > MAX_BYTES && lives.get(dropped).is_some_and(|l| !l.is_alive()) {
            size -= lives[dropped].kept_bytes();
            dropped += 1;
        }
        lives.drain(..dropped);
        if size as u64 > MAX_BYTES {
            return Err(JournalError::TooLarge {
                path: locked.path.clone(),
                bytes: size as u64,
            });
        }
    }
    lives.sort_by_key(|l| l.line);
    let mut out = bytes[j.header.0..j.header.1].to_vec();
    for l in &lives {
        for (s, e) in &l.keep {
            out.extend_from_slice(&bytes[*s..*e]);
        }
    }
    if let Some((s, e)) = j.run_line {
        out.extend_from_slice(&bytes[s..e]);
    }
    let (Some(dir), Some(name)) = (
        locked.path.parent(),
        locked.path.file_name().and_then(|n| n.to_str()),
    ) else {
        return Err(w(io::Error::other("not a file in a folder")));
    };
    let dir = Dir::open_root(dir).map_err(w)?;
    dir.write_atomic_through(name, &format!(".{name}.compact"), 0o600, &out, true)
        .map_err(w)
}
