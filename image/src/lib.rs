//! The execguard image as a library: the CLI's `execguard image` verb is a thin layer over it.
//!
//! The run profile ([`profile::PROFILE`]) is the one declaration of how a session container is
//! hardened. Everything that starts a container is generated from it:
//!
//! - the `docker run` arguments of `execguard image run` ([`docker::docker_run_args`]),
//! - `image/generated/compose.yaml` ([`render::compose_yaml`]),
//! - `image/generated/k8s-job.yaml` ([`render::k8s_job_yaml`]),
//! - the seccomp profile: Docker's default plus [`profile::SECCOMP_DENY`]
//!   ([`seccomp::seccomp_profile`]).
//!
//! [`render::generate`] with `check` fails when the committed files differ from what the
//! declaration produces; the unit tests check that the three renderings agree.

pub mod build;
pub mod docker;
pub mod profile;
pub mod render;
pub mod seccomp;

#[cfg(test)]
mod tests;
