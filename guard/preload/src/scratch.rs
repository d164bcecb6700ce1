//! Buffers sized to the call: on the stack when small (the common case), in an anonymous
//! mapping when not. A preload library must not need more stack than the call it replaces
//! (a thread with a 16 KiB stack, a `clone` child with less), and the guard's worst cases
//! (an environment of 2048 entries, a script launch with 1024 arguments) are tens of KiB.
//!
//! A mapping made in a `vfork` child that then execs stays in the parent (they share memory
//! until the exec): only these rare, large cases can leave one behind, once per such exec.

use core::mem::MaybeUninit;
use execguard_os::raw;

/// Words kept on the stack before a mapping is used.
pub const INLINE_WORDS: usize = 128;

/// Calls `f` with `n` writable words (uninitialised), or `None` if no memory could be had.
#[inline(never)]
pub fn with_words<R>(n: usize, f: impl FnOnce(&mut [MaybeUninit<usize>]) -> R) -> Option<R> {
    if n <= INLINE_WORDS {
        let mut inline = [MaybeUninit::<usize>::uninit(); INLINE_WORDS];
        return Some(f(&mut inline[..n]));
    }
    let len = n.checked_mul(core::mem::size_of::<usize>())?;
    let ptr = raw::map_anonymous(len).ok()?;
    // SAFETY: a fresh private mapping of `len` bytes, page-aligned (so aligned for usize),
    // used only through this slice until it is unmapped below.
    let words = unsafe { core::slice::from_raw_parts_mut(ptr.cast::<MaybeUninit<usize>>(), n) };
    let r = f(words);
    // SAFETY: the mapping came from map_anonymous(len); `words` is no longer used.
    unsafe { raw::unmap(ptr, len) };
    Some(r)
}

/// Words needed to hold `bytes` bytes.
pub const fn words_for(bytes: usize) -> usize {
    bytes.div_ceil(core::mem::size_of::<usize>())
}

/// `words` as bytes.
///
/// # Safety
/// The bytes may be uninitialised: the caller writes each byte before it reads it or passes
/// it on.
pub unsafe fn bytes(words: &mut [MaybeUninit<usize>]) -> &mut [u8] {
    // SAFETY: the same writable memory, with u8's weaker alignment; reads only follow writes
    // (the caller's contract).
    unsafe {
        core::slice::from_raw_parts_mut(
            words.as_mut_ptr().cast::<u8>(),
            core::mem::size_of_val(words),
        )
    }
}
