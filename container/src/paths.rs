//! Every host path the start chain touches, injectable so tests never see the host's `/etc`.

use std::path::{Path, PathBuf};

use crate::session::Agent;

/// Host paths used by the entrypoint and the provider wrapper.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    /// Prefix for the paths listed in the control-plane manifest (`/` in production).
    pub root: PathBuf,
    /// `/etc`: passwd, group, shadow and `ld.so.preload`.
    pub etc: PathBuf,
    /// `/run/execguard`: parent of the runtime state directory, root-owned 0755.
    pub run_dir: PathBuf,
    /// `/state`: the session's writable tmpfs.
    pub state: PathBuf,
    /// `/workspace`: the mounted workspace (instruction files are imported from it).
    pub workspace: PathBuf,
    /// The control-plane manifest written at image build time.
    pub manifest: PathBuf,
    /// Directory of the start-chain binaries.
    pub libexec: PathBuf,
    /// Provider home baselines: `<baselines>/<agent>/...` mirrored into the home.
    pub baselines: PathBuf,
    /// The guard library (must appear in the manifest).
    pub guard_library: PathBuf,
}

impl Paths {
    /// The layout of the execguard image.
    pub fn production() -> Self {
        Self::under(Path::new("/"))
    }

    /// The image layout below `root` (tests use a temporary directory).
    pub fn under(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            etc: root.join("etc"),
            run_dir: root.join("run/execguard"),
            state: root.join("state"),
            workspace: root.join("workspace"),
            manifest: root.join("usr/local/libexec/execguard/control-plane.sha256"),
            libexec: root.join("usr/local/libexec/execguard"),
            baselines: root.join("usr/local/share/execguard/home"),
            guard_library: root.join("usr/local/lib/libexecguard.so"),
        }
    }

    /// `/run/execguard/state`: the root-owned runtime state directory.
    pub fn state_dir(&self) -> PathBuf {
        self.run_dir.join("state")
    }

    /// `/state/agent-home`: the managed provider home.
    pub fn agent_home(&self) -> PathBuf {
        self.state.join("agent-home")
    }

    /// `/state/tmp`: the provider's TMPDIR.
    pub fn agent_tmp(&self) -> PathBuf {
        self.state.join("tmp")
    }

    /// `/etc/ld.so.preload`.
    pub fn ld_so_preload(&self) -> PathBuf {
        self.etc.join("ld.so.preload")
    }

    /// The entrypoint binary.
    pub fn entrypoint_bin(&self) -> PathBuf {
        self.libexec.join("execguard-entrypoint")
    }

    /// The provider wrapper binary.
    pub fn provider_bin(&self) -> PathBuf {
        self.libexec.join("execguard-provider")
    }

    /// The real provider CLI, moved out of PATH.
    pub fn real_provider(&self, agent: Agent) -> PathBuf {
        self.libexec.join("real").join(agent.as_str())
    }

    /// The arguments the provider wrapper puts before the user's: a provider that is a JS bundle
    /// (gemini) runs on its own Node.js (`real/gemini`), which is given the bundle first.
    pub fn provider_leading_args(&self, agent: Agent) -> Vec<PathBuf> {
        match agent {
            Agent::Gemini => vec![self
                .libexec
                .join("providers/gemini/node_modules/@google/gemini-cli/bundle/gemini.js")],
            Agent::Claude | Agent::Codex | Agent::Copilot => Vec::new(),
        }
    }

    /// Files that must be listed (and match) in the manifest, besides what it lists itself.
    pub fn required_control_files(&self) -> Vec<PathBuf> {
        vec![
            self.ld_so_preload(),
            self.guard_library.clone(),
            self.entrypoint_bin(),
            self.provider_bin(),
        ]
    }

    /// The image's env policy file: extra variable names the provider may receive.
    pub fn env_policy(&self) -> PathBuf {
        self.etc.join("execguard/provider-env.allow")
    }

    /// Maps a path as written in the manifest (absolute, image view) to the host view.
    pub fn host_path(&self, image_path: &Path) -> PathBuf {
        match image_path.strip_prefix("/") {
            Ok(rel) => self.root.join(rel),
            Err(_) => self.root.join(image_path),
        }
    }

    /// Maps a host-view path back to the image view used in the manifest.
    pub fn image_path(&self, host_path: &Path) -> PathBuf {
        match host_path.strip_prefix(&self.root) {
            Ok(rel) => Path::new("/").join(rel),
            Err(_) => host_path.to_path_buf(),
        }
    }
}

/// Fixed PATH of every process the chain starts.
pub const PINNED_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// HOME of the provider (image view).
pub const AGENT_HOME: &str = "/state/agent-home";
/// TMPDIR of the provider (image view).
pub const AGENT_TMP: &str = "/state/tmp";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_layout_is_absolute_and_image_paths_round_trip() {
        let p = Paths::production();
        assert_eq!(p.state_dir(), Path::new("/run/execguard/state"));
        assert_eq!(p.agent_home(), Path::new(AGENT_HOME));
        assert_eq!(p.agent_tmp(), Path::new(AGENT_TMP));
        let t = Paths::under(Path::new("/tmp/x"));
        assert_eq!(
            t.host_path(Path::new("/etc/ld.so.preload")),
            Path::new("/tmp/x/etc/ld.so.preload")
        );
        assert_eq!(
            t.image_path(&t.ld_so_preload()),
            Path::new("/etc/ld.so.preload")
        );
        assert_eq!(
            t.real_provider(Agent::Codex),
            Path::new("/tmp/x/usr/local/libexec/execguard/real/codex")
        );
    }
}
