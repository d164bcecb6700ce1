//! `execguard image build`: runs `image/build.sh` from a source tree.

use crate::docker::Refusal;
use crate::profile::PROVIDERS;
use anyhow::{bail, Context as _, Result};
use std::path::Path;
use std::process::{Command, ExitStatus};

/// What to build.
#[derive(Debug, Clone, Default)]
pub struct BuildRequest {
    pub tag: String,
    pub base_image: Option<String>,
    /// A subset of [`PROVIDERS`]; `None`: every provider that installs.
    pub providers: Option<Vec<String>>,
}

/// Runs `<source>/image/build.sh` for the request and returns its status.
pub fn build(source: &Path, req: &BuildRequest) -> Result<ExitStatus> {
    let script = source.join("image/build.sh");
    if !script.is_file() {
        bail!(
            "{} not found: pass --source with the repository",
            script.display()
        );
    }
    let mut cmd = Command::new("bash");
    cmd.arg(&script).env("EXECGUARD_IMAGE_TAG", &req.tag);
    if let Some(base) = &req.base_image {
        cmd.env("BASE_IMAGE", base);
    }
    if let Some(list) = &req.providers {
        if let Some(bad) = list.iter().find(|p| !PROVIDERS.contains(&p.as_str())) {
            return Err(Refusal::coded(
                "provider_unknown",
                format!(
                    "{bad:?}: --providers takes a subset of {}",
                    PROVIDERS.join(",")
                ),
            )
            .into());
        }
        if list.is_empty() {
            bail!("--providers needs at least one of {}", PROVIDERS.join(","));
        }
        cmd.env("EXECGUARD_PROVIDERS", list.join(","));
    }
    cmd.status().context("starting image/build.sh")
}
