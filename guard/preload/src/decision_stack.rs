//! The guard's decisions run on a stack of their own, so that a hook needs little more of the
//! caller's stack than the call it replaces: a thread with a 16 KiB stack or a `clone` child
//! with less can exec. A decision resolves paths and reads headers through several nested
//! 4 KiB buffers; the caller's stack keeps only what the exec itself needs, and every real
//! call (exec, spawn, dlopen) is made from the caller's stack.
//!
//! A few stacks per process, each mapped on first use (with a guard region below it) and
//! inherited by `fork` children. Each is held only while deciding, with every signal blocked,
//! never across an exec: a `vfork` child that execs while holding one would leave it held in
//! the parent, whose memory it shares. A thread that finds them all held decides on a fresh
//! mapping, unmapped before it returns. A `vfork` child killed in the middle of a decision
//! leaves its stack held (or its fresh mapping) in the parent: later decisions there use
//! fresh mappings, which costs time, never a wrong answer.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use execguard_os::raw;

/// Usable size: room for the deepest decision, with a wide margin (signals are blocked, so
/// nothing else runs there). Only the pages a decision touches are ever backed.
const SIZE: usize = 256 * 1024;
/// Below the stack, never accessible: an overflow faults instead of writing other memory.
/// Large enough for every page size Linux uses (up to 64 KiB on arm64).
const GUARD: usize = 64 * 1024;
/// Stacks kept per process: threads that decide at once each get one; more than this decide
/// on fresh mappings.
const SLOTS: usize = 4;
/// The top of each kept stack holds its "held" flag, and the memo's record of the last path
/// decided on it (`execguard_policy::memo`), rather than `.data`: every decision writes that
/// page anyway, so they cost a `fork` child no page fault of their own. 64 bytes keep the
/// stack's top aligned.
const FLAG_BYTES: usize = 64;
/// Where the last-seen record lies in those bytes (after the flag, aligned).
const LAST_SEEN_AT: usize = 8;

/// A slot's state: one of these, or the low end of its stack's usable part.
const UNMAPPED: usize = 0;
const MAPPING: usize = 1;

/// The slots. They lie first in the guard's first page of writable data (layout.ld places
/// this section before state.rs's `FirstPage`), which a fresh process's first exec writes
/// anyway, so they cost it no page fault of their own.
#[link_section = ".data.first.stacks"]
static STACKS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(UNMAPPED) }; SLOTS];

/// The held flag of the kept stack at `base`.
fn held(base: usize) -> &'static AtomicBool {
    // SAFETY: `base` came from map_stack and is never unmapped; the flag's bytes lie in its
    // read-write part above the stack, aligned, and are only ever accessed as this atomic.
    unsafe { &*((base + SIZE - FLAG_BYTES) as *const AtomicBool) }
}

/// The record of the last path decided on the kept stack this thread is running on; `None`
/// off the kept stacks (a fresh mapping, or the caller's own stack).
pub fn last_seen() -> Option<&'static AtomicU64> {
    let sp = psm::stack_pointer() as usize;
    STACKS.iter().find_map(|slot| {
        let base = slot.load(Ordering::Relaxed);
        (base > MAPPING && sp >= base && sp < base + SIZE).then(|| {
            // SAFETY: as `held`: the record's 8 bytes lie in the kept stack's read-write top,
            // aligned, never unmapped, and only ever accessed as this atomic.
            unsafe { &*((base + SIZE - FLAG_BYTES + LAST_SEEN_AT) as *const AtomicU64) }
        })
    })
}

/// Runs `f` on a decision stack and returns its result. Falls back to the caller's own stack
/// only if no memory can be mapped (then the decision is the same, on less stack).
pub fn run<R>(f: impl FnOnce() -> R) -> R {
    crate::once::through_dyn(|()| f(), run_dyn)
}

#[inline(never)]
fn run_dyn(f: &mut dyn FnMut(())) {
    if on_kept_stack() {
        return f(()); // a decision inside a decision: signals are blocked already
    }
    let mask = raw::block_all_signals();
    run_blocked(f);
    raw::restore_signals(mask);
}

/// [`run`] with every signal blocked: no handler runs on a decision stack (it could need more
/// than is left, `fork` there, or `siglongjmp` out and leave the stack held) and no
/// asynchronous cancellation stops a decision half-way.
fn run_blocked(f: &mut dyn FnMut(())) {
    for slot in &STACKS {
        let base = match slot.load(Ordering::Acquire) {
            MAPPING => continue,
            UNMAPPED => {
                if slot
                    .compare_exchange(UNMAPPED, MAPPING, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    continue;
                }
                let Some(b) = map_stack() else {
                    slot.store(UNMAPPED, Ordering::Release);
                    return f(());
                };
                let b = b as usize;
                held(b).store(true, Ordering::Relaxed);
                slot.store(b, Ordering::Release);
                b
            }
            b => {
                if held(b)
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    continue;
                }
                b
            }
        };
        // SAFETY: `base..base + SIZE - FLAG_BYTES` is a read-write mapping of this process with
        // an inaccessible guard below it, page-aligned at the bottom and 64-byte aligned at the
        // top; its flag makes this thread its only user until the store below, and `f` returns
        // (no exec leaves it: see the module doc).
        unsafe { psm::on_stack(base as *mut u8, SIZE - FLAG_BYTES, || f(())) };
        held(base).store(false, Ordering::Release);
        return;
    }
    match map_stack() {
        Some(base) => {
            // SAFETY: as above, for a mapping that only this call knows of.
            unsafe { psm::on_stack(base, SIZE, || f(())) };
            // SAFETY: the mapping made by map_stack for this call; `f` has returned.
            unsafe { raw::unmap(base.sub(GUARD), GUARD + SIZE) };
        }
        None => f(()),
    }
}

/// In a `fork` child: the stacks other threads of the parent held are free here (those threads
/// do not exist in the child, and the forking thread was not deciding: decisions block
/// signals and never fork). Writes only what changes: a write to a page shared with the
/// parent costs a copy.
pub fn after_fork_in_child() {
    for slot in &STACKS {
        match slot.load(Ordering::Acquire) {
            UNMAPPED => {}
            // The thread that was mapping it does not exist here (its mapping stays unused).
            MAPPING => slot.store(UNMAPPED, Ordering::Release),
            b if held(b).load(Ordering::Relaxed) => held(b).store(false, Ordering::Release),
            _ => {}
        }
    }
}

/// Is this thread running on one of the kept stacks (a decision inside a decision)?
fn on_kept_stack() -> bool {
    let sp = psm::stack_pointer() as usize;
    STACKS.iter().any(|slot| {
        let base = slot.load(Ordering::Relaxed);
        base > MAPPING && sp >= base && sp < base + SIZE
    })
}

/// A fresh stack: `GUARD` inaccessible bytes, then `SIZE` read-write ones. Returns the low end
/// of the read-write part.
fn map_stack() -> Option<*mut u8> {
    let region = raw::map_anonymous(GUARD + SIZE).ok()?;
    // SAFETY: `region` is a mapping of GUARD + SIZE bytes made just above; its first GUARD
    // bytes become inaccessible, and nothing refers to them.
    if unsafe { raw::protect_none(region, GUARD) }.is_err() {
        // SAFETY: the mapping made above, not used.
        unsafe { raw::unmap(region, GUARD + SIZE) };
        return None;
    }
    // SAFETY: GUARD < GUARD + SIZE, inside the mapping.
    Some(unsafe { region.add(GUARD) })
}
