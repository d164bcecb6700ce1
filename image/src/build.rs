//! `execguard image build`: runs `image/build.sh` from a source tree.

use anyhow::{bail, Context as _, Result};
use std::path::Path;
use std::process::{Command, ExitStatus};

/// What to build.
#[derive(Debug, Clone, Default)]
pub struct BuildRequest {
    pub tag: String,
    pub base_image: Option<String>,
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
    cmd.status().context("starting image/build.sh")
}
