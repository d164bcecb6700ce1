//! # execguard policy engine
//!
//! Pure, allocation-free and `no_std`: the preload library, the CLI, the wrappers, the tests and
//! the fuzzers share it. It never calls the OS itself; callers pass an implementation of
//! [`sys::Sys`].
//!
//! - [`policy`]: the policy file (a strict TOML subset) and its limits.
//! - [`shebang`]: `#!` parsing exactly as the kernel does it.
//! - [`decide`]: the decision for one exec call, returning a [`decide::Verdict`] with a
//!   stable [`Reason`].
//! - [`audit`]: one JSON line per decision, formatted into a caller's buffer.
#![cfg_attr(not(test), no_std)]

pub mod audit;
pub mod decide;
pub mod env;
pub mod memo;
#[cfg(test)]
pub mod memsys;
pub mod path;
pub mod policy;
pub mod profile;
pub mod reason;
pub mod reduction;
pub mod resolve;
pub mod shebang;
pub mod spawn;
pub mod sys;
pub mod text;
pub mod workspace;

pub use decide::{
    decide, decide_code_dirs, decide_launch, decide_object, path_candidates, path_search,
    search_goes_on, Candidate, Context, ExecName, Launch, Request, RuntimeIds, ShownPath, Target,
    Verdict,
};
pub use memo::{Memo, MemoTable};
pub use policy::{Policy, PolicyError};
pub use profile::Profile;
pub use reason::Reason;
pub use reduction::Reduction;
