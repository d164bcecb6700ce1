//! A process's memory of exec targets it found immutable, so that a warm exec of the same path
//! (a build tool starting the compiler again and again with `posix_spawn`, the `vfork` children
//! of one parent) asks the kernel for one `stat` instead of opening and reading the file again.
//!
//! Only what the session cannot change is remembered, and only facts, never a verdict: in a
//! sealed session (the kernel keeps every path outside the write set read-only to it), a
//! readable ELF file outside the write set, named by an absolute path the session cannot
//! redirect (no symlink on the way lies in the write set: `/bin/sh`, through the symlinks
//! `/bin` and `sh`, is remembered with its kernel name `/usr/bin/dash`). The rest of the
//! decision runs every time. An entry holds while a `stat` of the same path gives the same device, inode,
//! link count, mode, owner, size and change time: a write or a `chmod` moves the change time, a
//! replacement the inode. (Change times are as fine as the file system keeps them; since Linux
//! 6.13 a change after a `stat` always moves it. Under the seal only processes outside the
//! session can change these files at all.) Unsealed, what is mutable depends on permissions,
//! which can change above a file without its change time moving: nothing is remembered there.
//!
//! A path is remembered only when a thread decides it twice in a row ([`Memo::last_seen`], a
//! word on a page each decision writes anyway), so a process that execs once never writes the
//! table: in a `fork` child that write would be a page fault of its own.
//!
//! Lock-free and wait-free for readers, so that threads, `vfork` children (which share the
//! table with their parent) and fork children of threaded parents are all safe: each slot is a
//! sequence lock over atomic words. A writer that finds the slot busy gives up; a reader that
//! sees a write in progress (or one finished under it) forgets the entry and decides afresh.

use crate::path::PathBuf;
use crate::sys::FileInfo;
use core::sync::atomic::{fence, AtomicU64, Ordering};

/// Entries kept, chosen by a hash of the path.
const SLOTS: usize = 4;
const PATH_WORDS: usize = 24;
/// Longer paths (as given, or the kernel's name) are not remembered.
pub const MAX_PATH: usize = PATH_WORDS * 8;
/// The file's identity (`dev`, `ino`, `nlink`, `mode | uid << 32`, `ctime_ns`, `size`), then
/// the lengths of the path as given and of the kernel's name.
const INFO_WORDS: usize = 8;

struct Slot {
    /// Even: stable (0: never written); odd: a write is in progress.
    seq: AtomicU64,
    info: [AtomicU64; INFO_WORDS],
    /// The path as given.
    path: [AtomicU64; PATH_WORDS],
    /// The kernel's name of the file it led to.
    kpath: [AtomicU64; PATH_WORDS],
}

/// The table: one per process, in static memory.
pub struct MemoTable {
    slots: [Slot; SLOTS],
}

impl MemoTable {
    #[allow(clippy::new_without_default)] // a static's initialiser
    pub const fn new() -> Self {
        MemoTable {
            slots: [const {
                Slot {
                    seq: AtomicU64::new(0),
                    info: [const { AtomicU64::new(0) }; INFO_WORDS],
                    path: [const { AtomicU64::new(0) }; PATH_WORDS],
                    kpath: [const { AtomicU64::new(0) }; PATH_WORDS],
                }
            }; SLOTS],
        }
    }
}

/// The table, and the calling thread's record of the last path it decided.
#[derive(Clone, Copy)]
pub struct Memo<'a> {
    table: &'a MemoTable,
    /// `None`: nothing new is remembered (what is there may still be recalled).
    last_seen: Option<&'a AtomicU64>,
}

impl<'a> Memo<'a> {
    pub fn new(table: &'a MemoTable, last_seen: Option<&'a AtomicU64>) -> Self {
        Memo { table, last_seen }
    }

    /// The identity remembered for `path`, if any, with the kernel's name of the file
    /// written into `kpath`.
    pub(crate) fn recall(&self, path: &[u8], kpath: &mut PathBuf) -> Option<FileInfo> {
        if path.len() > MAX_PATH {
            return None;
        }
        let slot = self.slot(hash(path));
        let before = slot.seq.load(Ordering::Acquire);
        if before == 0 || before & 1 == 1 {
            return None;
        }
        let info: [u64; INFO_WORDS] =
            core::array::from_fn(|i| slot.info[i].load(Ordering::Relaxed));
        let same_path = info[6] == path.len() as u64
            && (0..words(path.len()))
                .all(|i| slot.path[i].load(Ordering::Relaxed) == word(path, i));
        let name: [u64; PATH_WORDS] =
            core::array::from_fn(|i| slot.kpath[i].load(Ordering::Relaxed));
        // Every load above happens before this re-check of the sequence.
        fence(Ordering::Acquire);
        if !same_path || slot.seq.load(Ordering::Relaxed) != before {
            return None;
        }
        let len = usize::try_from(info[7]).ok().filter(|&n| n <= MAX_PATH)?;
        let mut bytes = [0u8; MAX_PATH];
        for (chunk, w) in bytes.chunks_exact_mut(8).zip(name) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        kpath.truncate(0);
        kpath.push_bytes(&bytes[..len]).ok()?;
        Some(FileInfo {
            dev: info[0],
            ino: info[1],
            nlink: info[2],
            mode: info[3] as u32,
            uid: (info[3] >> 32) as u32,
            ctime_ns: info[4],
            size: info[5],
        })
    }

    /// Offers what `path` led to (the file `kpath`): kept if this thread's previous decision
    /// was of `path` too.
    pub(crate) fn offer(&self, path: &[u8], kpath: &[u8], file: &FileInfo) {
        let Some(last_seen) = self.last_seen else {
            return;
        };
        if path.len() > MAX_PATH || kpath.len() > MAX_PATH {
            return;
        }
        let h = hash(path);
        if last_seen.swap(h, Ordering::Relaxed) != h {
            return;
        }
        let slot = self.slot(h);
        let seq = slot.seq.load(Ordering::Relaxed);
        if seq & 1 == 1
            || slot
                .seq
                .compare_exchange(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return; // another writer: its entry will do
        }
        // No store below may be seen before the sequence turned odd.
        fence(Ordering::Release);
        let info = [
            file.dev,
            file.ino,
            file.nlink,
            u64::from(file.mode) | u64::from(file.uid) << 32,
            file.ctime_ns,
            file.size,
            path.len() as u64,
            kpath.len() as u64,
        ];
        for (cell, v) in slot.info.iter().zip(info) {
            cell.store(v, Ordering::Relaxed);
        }
        for (i, cell) in slot.path[..words(path.len())].iter().enumerate() {
            cell.store(word(path, i), Ordering::Relaxed);
        }
        for (i, cell) in slot.kpath[..words(kpath.len())].iter().enumerate() {
            cell.store(word(kpath, i), Ordering::Relaxed);
        }
        slot.seq.store(seq + 2, Ordering::Release);
    }

    fn slot(&self, h: u64) -> &Slot {
        &self.table.slots[(h >> 32) as usize % SLOTS]
    }
}

/// FNV-1a; never 0, which `last_seen` starts as.
fn hash(path: &[u8]) -> u64 {
    let h = path.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    h | 1
}

fn words(len: usize) -> usize {
    len.div_ceil(8)
}

/// The `i`th eight bytes of `path`, zero-padded.
fn word(path: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    let chunk = &path[i * 8..path.len().min(i * 8 + 8)];
    w[..chunk.len()].copy_from_slice(chunk);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(ino: u64) -> FileInfo {
        FileInfo {
            dev: 7,
            ino,
            nlink: 1,
            mode: 0o100755,
            uid: 0,
            ctime_ns: 99,
            size: 1234,
        }
    }

    fn recall(memo: &Memo<'_>, path: &[u8]) -> Option<(FileInfo, std::vec::Vec<u8>)> {
        let mut kpath = PathBuf::new();
        memo.recall(path, &mut kpath)
            .map(|i| (i, kpath.as_bytes().to_vec()))
    }

    #[test]
    fn remembers_a_path_decided_twice_in_a_row() {
        let table = MemoTable::new();
        let seen = AtomicU64::new(0);
        let memo = Memo::new(&table, Some(&seen));
        let gcc = b"/usr/bin/x86_64-linux-gnu-gcc-12";
        memo.offer(b"/usr/bin/cc", gcc, &info(3));
        assert_eq!(
            recall(&memo, b"/usr/bin/cc"),
            None,
            "once is not remembered"
        );
        memo.offer(b"/usr/bin/cc", gcc, &info(3));
        assert_eq!(recall(&memo, b"/usr/bin/cc"), Some((info(3), gcc.to_vec())));
        // Another path of the same length and slot is not this one.
        assert_eq!(recall(&memo, b"/usr/bin/cd"), None);
        assert_eq!(recall(&memo, b"/usr/bin/c"), None);
    }

    #[test]
    fn another_path_in_between_starts_the_count_again() {
        let table = MemoTable::new();
        let seen = AtomicU64::new(0);
        let memo = Memo::new(&table, Some(&seen));
        memo.offer(b"/usr/bin/a", b"/usr/bin/a", &info(1));
        memo.offer(b"/usr/bin/b", b"/usr/bin/b", &info(2));
        memo.offer(b"/usr/bin/a", b"/usr/bin/a", &info(1));
        assert_eq!(recall(&memo, b"/usr/bin/a"), None);
    }

    #[test]
    fn long_paths_and_callers_without_a_record_remember_nothing() {
        let table = MemoTable::new();
        let long = [b'a'; MAX_PATH + 1];
        let seen = AtomicU64::new(0);
        let memo = Memo::new(&table, Some(&seen));
        memo.offer(&long, b"/x", &info(1));
        memo.offer(&long, b"/x", &info(1));
        assert_eq!(recall(&memo, &long), None);
        memo.offer(b"/x", &long, &info(1));
        memo.offer(b"/x", &long, &info(1));
        assert_eq!(recall(&memo, b"/x"), None);
        let blind = Memo::new(&table, None);
        blind.offer(b"/usr/bin/x", b"/usr/bin/x", &info(1));
        blind.offer(b"/usr/bin/x", b"/usr/bin/x", &info(1));
        assert_eq!(recall(&blind, b"/usr/bin/x"), None);
    }

    #[test]
    fn a_slot_being_written_is_not_read() {
        let table = MemoTable::new();
        let seen = AtomicU64::new(0);
        let memo = Memo::new(&table, Some(&seen));
        memo.offer(b"/bin/x", b"/usr/bin/x", &info(1));
        memo.offer(b"/bin/x", b"/usr/bin/x", &info(1));
        let slot = memo.slot(hash(b"/bin/x"));
        slot.seq.fetch_add(1, Ordering::Relaxed); // a writer stopped half-way (a killed vfork child)
        assert_eq!(recall(&memo, b"/bin/x"), None);
        memo.offer(b"/bin/x", b"/usr/bin/x", &info(2));
        assert_eq!(recall(&memo, b"/bin/x"), None, "a busy slot is left alone");
    }
}
