//! `.list-index`: the `list` cache of one list kept on disk, so that the first `list` of a
//! new process need not open and read every task file (issue 28).
//!
//! It holds, for each task file a `list` had read and cached, the file's identity (device,
//! inode, size, change time: [`FileIdentity`]), the bytes it held, and the task's compact
//! JSON (what `list` answers write). It is only ever a cache: a process that loads it seeds its in-memory cache with the entries, and the `list`
//! then confirms each one exactly as it confirms an entry it read itself, by one `fstatat` of
//! the file and a comparison of identities. An entry whose file has changed in any way since
//! (written in place or replaced, by this store or another program) fails that comparison and
//! the file is read afresh. Entries are written only for files whose change time had settled
//! (see `LIST_SETTLE` in `strict.rs`), the rule that makes the comparison trustworthy.
//!
//! So nothing in the index is ever answered without the file's identity being checked first,
//! and an index that is missing, damaged (its checksum), from another version, a link, or
//! from another folder (moved in with a copy of the list) is ignored: the list reads the files.
//! A task of the index is answered from its JSON and decoded from its file's bytes only when
//! the task itself is needed; the two were written together, from one decoding of the file.
//!
//! Format (little-endian): the magic line, a `u32` version, the folder's device and inode
//! (`u64` each), a checksum of the rest (`u64`), a `u32` entry count, and per entry: id,
//! device, inode (`u64`), size, change time seconds and nanoseconds (`i64`), then the file's
//! bytes and the task's JSON, each as a `u32` length and the bytes.

use std::sync::Arc;

use super::txn::FileIdentity;
use taskproof_core::task::TaskId;

/// The index's name in the list's folder.
pub const INDEX_NAME: &str = ".list-index";

const MAGIC: &[u8] = b"taskproof list index\n";
const VERSION: u32 = 1;
/// An index larger than this is not read (a task file is at most a few kilobytes).
pub(super) const MAX_INDEX_BYTES: u64 = 1 << 30;

/// One entry: the file's identity when it was read, what it held, and the task's JSON.
pub(super) struct IndexEntry {
    pub(super) id: TaskId,
    pub(super) identity: FileIdentity,
    pub(super) raw: Arc<[u8]>,
    pub(super) json: Box<[u8]>,
}

/// Where the checksum stands, and where what it covers starts.
const SUM_AT: usize = MAGIC.len() + 4 + 16;
const BODY_AT: usize = SUM_AT + 8;

/// The checksum of an index's body: not against an adversary (who can write the folder can
/// write the tasks), against damage.
fn checksum(body: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = foldhash::quality::FixedState::with_seed(0x7461_736b_7072_6f66).build_hasher();
    h.write(body);
    h.finish()
}

/// Encodes the entries of the list in `folder` (device, inode).
pub(super) fn encode<'a>(
    folder: (u64, u64),
    entries: impl ExactSizeIterator<Item = (TaskId, &'a FileIdentity, &'a [u8], &'a [u8])>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + entries.len() * 60);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&folder.0.to_le_bytes());
    out.extend_from_slice(&folder.1.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    let count = u32::try_from(entries.len()).expect("fewer than 4 billion tasks");
    out.extend_from_slice(&count.to_le_bytes());
    for (id, identity, raw, json) in entries {
        out.extend_from_slice(&id.0.to_le_bytes());
        out.extend_from_slice(&identity.dev.to_le_bytes());
        out.extend_from_slice(&identity.ino.to_le_bytes());
        out.extend_from_slice(&identity.size.to_le_bytes());
        out.extend_from_slice(&identity.ctime.0.to_le_bytes());
        out.extend_from_slice(&identity.ctime.1.to_le_bytes());
        for bytes in [raw, json] {
            let len = u32::try_from(bytes.len()).expect("task files are small");
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(bytes);
        }
    }
    let sum = checksum(&out[BODY_AT..]);
    out[SUM_AT..BODY_AT].copy_from_slice(&sum.to_le_bytes());
    out
}

/// Reads little-endian numbers off the front of a slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// Decodes an index of the list in `folder`, keeping the entries whose id `wanted` says
/// yes to; `None` when it is not a whole index of this version for this folder.
pub(super) fn decode(
    bytes: &[u8],
    folder: (u64, u64),
    wanted: impl Fn(TaskId) -> bool,
) -> Option<Vec<IndexEntry>> {
    let mut r = Reader(bytes);
    if r.take(MAGIC.len())? != MAGIC || r.u32()? != VERSION {
        return None;
    }
    if (r.u64()?, r.u64()?) != folder || r.u64()? != checksum(r.0) {
        return None;
    }
    let count = r.u32()? as usize;
    let mut out = Vec::with_capacity(count.min(bytes.len() / 52));
    for _ in 0..count {
        let id = TaskId(r.u64()?);
        let identity = FileIdentity {
            dev: r.u64()?,
            ino: r.u64()?,
            size: r.i64()?,
            ctime: (r.i64()?, r.i64()?),
        };
        let len = r.u32()? as usize;
        let raw = r.take(len)?;
        let len_json = r.u32()? as usize;
        let json = r.take(len_json)?;
        // An entry whose size disagrees with its own content is damage, not a file.
        if i64::try_from(len).ok()? != identity.size {
            return None;
        }
        if wanted(id) {
            out.push(IndexEntry {
                id,
                identity,
                raw: raw.into(),
                json: json.into(),
            });
        }
    }
    r.0.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(ino: u64, raw: &[u8]) -> FileIdentity {
        FileIdentity {
            dev: 7,
            ino,
            size: raw.len() as i64,
            ctime: (1_700_000_000, 5),
        }
    }

    #[test]
    fn an_index_reads_back_what_was_written() {
        let a = br#"{"id":"1"}"#;
        let b = br#"{"id":"2","subject":"x"}"#;
        let (ia, ib) = (identity(10, a), identity(11, b));
        let bytes = encode(
            (7, 3),
            [
                (TaskId(1), &ia, &a[..], &b"j1"[..]),
                (TaskId(2), &ib, &b[..], &b"j2"[..]),
            ]
            .into_iter(),
        );
        let all = decode(&bytes, (7, 3), |_| true).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(
            (
                all[1].id,
                all[1].identity,
                &all[1].raw[..],
                &all[1].json[..]
            ),
            (TaskId(2), ib, &b[..], &b"j2"[..])
        );
        let some = decode(&bytes, (7, 3), |id| id == TaskId(1)).unwrap();
        assert_eq!(some.len(), 1);
        assert_eq!(&some[0].raw[..], a);
    }

    #[test]
    fn an_index_of_another_folder_or_damaged_is_not_used() {
        let a = br#"{"id":"1"}"#;
        let ia = identity(10, a);
        let bytes = encode((7, 3), [(TaskId(1), &ia, &a[..], &b"{}"[..])].into_iter());
        assert!(decode(&bytes, (7, 3), |_| true).is_some());
        assert!(decode(&bytes, (7, 4), |_| true).is_none(), "another folder");
        for cut in 0..bytes.len() {
            assert!(
                decode(&bytes[..cut], (7, 3), |_| true).is_none(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(
            decode(&longer, (7, 3), |_| true).is_none(),
            "trailing bytes"
        );
        // Any byte changed after the header is damage the checksum sees.
        for at in BODY_AT..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x20;
            assert!(decode(&flipped, (7, 3), |_| true).is_none(), "byte {at}");
        }
        let mut version = bytes;
        version[MAGIC.len()] = 2;
        assert!(decode(&version, (7, 3), |_| true).is_none(), "version");
    }
}
