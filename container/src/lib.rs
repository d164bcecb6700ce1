//! The execguard container start chain.
//!
//! Two small binaries sit on this library:
//!
//! * `execguard-entrypoint` runs as PID 1 of the agent container. It validates the managed
//!   environment ([`env`]), verifies the control plane against the image manifest ([`manifest`]),
//!   records the runtime state in a root-owned directory ([`state`]), adds the mapped user
//!   ([`user`]), builds the provider home ([`home`]), drops every privilege and verifies the drop
//!   ([`privs`]), then starts the provider wrapper (or an explicit arbitrary command) and stays
//!   as a tini-style init that forwards signals and reaps zombies (`execguard_session::supervisor`,
//!   the same supervisor as the host chain's).
//! * `execguard-provider` is the provider wrapper: it accepts only a start by the entrypoint chain
//!   ([`chain`]), applies the per-provider argument policy ([`provider`]), pins the environment and
//!   execs the real provider CLI.
//!
//! # Test strategy
//! Every host path is injected through [`Paths`], so unit tests run against a temporary root.
//! Privileged calls go through the [`privs::Syscall`] trait; tests pass the recording double
//! [`privs::RecordingSyscall`] explicitly. Integration tests in `tests/` run the real binaries as
//! root inside a private mount and PID namespace with a throw-away root file system.

pub mod allowlist;
pub mod audit;
pub mod chain;
pub mod entrypoint;
pub mod env;
pub mod home;
pub mod kept;
pub mod manifest;
pub mod noexec;
pub mod paths;
pub mod privs;
pub mod provider;
pub mod provider_main;
pub mod repo_config;
pub mod session;
pub mod state;
pub mod sys;
pub mod user;

pub use env::{EnvRefusal, SessionEnv};
pub use execguard_policy::Profile;
pub use paths::Paths;
pub use provider::{check_provider_args, ProviderRefusal};
pub use session::{Agent, Autonomy, Mutability};

/// Exit status of every refusal (bad environment, tampered control plane, refused argument).
pub const EXIT_REFUSED: i32 = 2;
/// Exit status when the command could be found but not executed (tini and shells agree).
pub const EXIT_CANNOT_EXECUTE: i32 = execguard_session::reaper::EXIT_CANNOT_EXECUTE;
/// Exit status when the command was not found.
pub const EXIT_NOT_FOUND: i32 = execguard_session::reaper::EXIT_NOT_FOUND;
