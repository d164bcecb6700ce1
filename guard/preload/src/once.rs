//! One copy of a generic body for every caller: code generic over a closure is compiled again
//! for each closure it is given (a copy per entry point of the library's largest functions).

use execguard_os::raw;

/// Calls `f` once, through `body`, which is given `f` as a `dyn` callback and must call it
/// exactly once (the process aborts otherwise: a caller would be left without its result).
#[inline(always)]
pub fn through_dyn<A, R>(f: impl FnOnce(A) -> R, body: impl FnOnce(&mut dyn FnMut(A))) -> R {
    let mut f = Some(f);
    let mut out = None;
    body(&mut |a| {
        if let Some(f) = f.take() {
            out = Some(f(a));
        }
    });
    match out {
        Some(r) => r,
        None => raw::abort(),
    }
}
