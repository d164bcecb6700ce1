//! Guard profiles.

/// How strictly the guard treats native code from mutable places.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Profile {
    /// Default managed session: every rule on.
    Strict,
    /// Interactive development: file-backed native code from mutable roots may run.
    Development,
    /// Image preparation and builds: native code from mutable places may run.
    Build,
    /// Explicit higher-trust work: everything runs, every decision is audited.
    Breakglass,
}

impl Profile {
    pub const ALL: [Profile; 4] = [
        Self::Strict,
        Self::Development,
        Self::Build,
        Self::Breakglass,
    ];

    /// The stable name used in policies, environments and audit records.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Strict => "strict",
            Self::Development => "development",
            Self::Build => "build",
            Self::Breakglass => "breakglass",
        }
    }

    /// Parses an exact, lower-case profile name; anything else is `None` (callers refuse it).
    pub fn from_name(name: &[u8]) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().as_bytes() == name)
    }
}

impl Profile {
    /// May file-backed native code from mutable roots run?
    pub fn allows_mutable_native(self) -> bool {
        !matches!(self, Profile::Strict)
    }
    /// May native code with no name on disk (memfd, deleted) run?
    pub fn allows_anonymous_native(self) -> bool {
        matches!(self, Profile::Build | Profile::Breakglass)
    }
}
