//! The session vocabulary: which agent, how autonomous, how mutable.

use std::fmt;

/// The provider CLI a session runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Agent {
    Codex,
    Claude,
    Gemini,
    Copilot,
}

impl Agent {
    pub const ALL: [Agent; 4] = [Self::Codex, Self::Claude, Self::Gemini, Self::Copilot];

    /// The stable name used in `AGENT_NAME`, the runtime state and binary names.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Codex => "codex",
            Self::Claude => "claude",
            Self::Gemini => "gemini",
            Self::Copilot => "copilot",
        }
    }

    /// Exact, lower-case names only; anything else is `None` (callers refuse it).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the provider asks before acting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Autonomy {
    /// The provider acts without asking (the container is the boundary).
    Yolo,
    /// The provider asks before risky actions.
    Prompt,
}

impl Autonomy {
    pub const ALL: [Autonomy; 2] = [Self::Yolo, Self::Prompt];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Yolo => "yolo",
            Self::Prompt => "prompt",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

/// How the container was started by the host launcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mutability {
    /// Started as root with SETUID/SETGID/SETPCAP; the entrypoint prepares state, then drops.
    Ephemeral,
    /// A read-only root file system. Started as root (the launcher: SETUID/SETGID/SETPCAP, CHOWN/FOWNER/DAC_OVERRIDE for the home, and
    /// SYS_ADMIN until the session starts, to record the runtime state and make the write set
    /// `noexec`) or as the mapped user (Kubernetes `runAsNonRoot`: strict only).
    Readonly,
}

impl Mutability {
    pub const ALL: [Mutability; 2] = [Self::Ephemeral, Self::Readonly];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ephemeral => "ephemeral",
            Self::Readonly => "readonly",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == name)
    }
}
