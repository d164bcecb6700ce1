//! # libexecguard.so
//!
//! A thin, `no_std`, allocation-free `LD_PRELOAD` layer over the pure policy engine
//! (`execguard-policy`). It replaces every libc entry point that starts a program, decides each
//! call with the engine, and either performs the exec itself (raw system call) or refuses with
//! `EACCES`, one line on stderr and an audit record.
//!
//! Fail closed: a missing or invalid policy refuses every exec, and a panic aborts the process
//! (`panic = "abort"`; the handler below never returns into the caller).
//!
//! At load, one initialiser captures host mode's inline policy from the initial environment
//! (the program could overwrite that memory later); the policy is parsed on the first exec and
//! cached without locks (see `state`). The exec path allocates nothing and never waits for
//! another thread, so it is safe in `vfork` children and after `fork` in threaded programs.
//! Decisions run on the guard's own stack (`decision_stack`), so a hook needs little of the
//! caller's.
#![cfg_attr(not(test), no_std)]

mod decision_stack;
mod exports;
mod guard;
mod hooks;
mod once;
mod scratch;
mod state;
mod symbols;

#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    execguard_os::raw::abort()
}
