//! The seal glue: the partition a policy describes, and the call into `execguard_seal` that
//! seals this process for the session (then its inherited descriptors are opened again).

use execguard_policy::{Policy, Profile};
use std::path::{Path, PathBuf};

/// The partition a policy describes (docs/write-set.md): its mutable roots are the write set,
/// its exec dirs the execute side inside it, and under `development` and `build` the
/// workspace and the `executable_roots` (in a session: its temp dirs and home layer) get
/// both rights.
/// Each name is resolved as this process resolved it when it checked it
/// ([`crate::paths::canonical`]), never afresh: this is built before the fork and the seal
/// works from it, by these names.
pub fn partition(policy: &Policy) -> execguard_seal::Partition {
    partition_with_temp(policy, None)
}

/// [`partition`], with the session's own temp dir (a development session's,
/// [`crate::session_temp`]) a write-set root of its own that gets both rights, as the
/// workspace does.
pub fn partition_with_temp(policy: &Policy, temp: Option<&Path>) -> execguard_seal::Partition {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let path = |b: &[u8]| PathBuf::from(OsStr::from_bytes(b));
    let both: Vec<PathBuf> = match policy.profile() {
        Profile::Development | Profile::Build => core::iter::once(policy.workspace())
            .chain(policy.executable_roots())
            .map(path)
            .collect(),
        _ => Vec::new(),
    };
    let temp = (!both.is_empty())
        .then_some(temp)
        .flatten()
        .map(Path::to_path_buf);
    execguard_seal::Partition::resolved(
        policy.mutable_roots().map(path).chain(temp.clone()),
        policy.exec_dirs().map(path),
        both.into_iter().chain(temp),
        &|p| crate::paths::canonical(p).ok(),
    )
}

/// Seals this process for the session `policy` describes: the `noexec` mounts, the Landlock
/// partition and the seccomp filter (executable memfds refused in strict sessions). Without
/// the mounts a program that maps a written file executable itself would run it, so a session
/// the kernel cannot give them is refused, unless `allow_exec_mappings` accepts it (then said
/// once and reported `reduced:mappings_guard_only`).
pub fn seal(
    sys: &dyn crate::sys::SessionSys,
    policy: &Policy,
    partition: &execguard_seal::Partition,
    allow_exec_mappings: bool,
    carry: Option<&std::os::fd::OwnedFd>,
    world: Option<&execguard_seal::world::World>,
) -> Result<execguard_seal::Enforcement, execguard_seal::SealError> {
    // A path that does not exist gets no rule: make the audit log now, so it can be written
    // (not a kept log: its writer made it, and no process of the session opens it).
    if let Some(log) = policy
        .audit_log()
        .filter(|_| policy.audit_socket().is_none())
    {
        use std::os::unix::ffi::OsStrExt;
        let log = Path::new(std::ffi::OsStr::from_bytes(log));
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a link put in its place since the CLI checked it.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(log)
            .map_err(|e| execguard_seal::SealError::Apply {
                step: "create the audit log",
                detail: format!("{}: {e}", log.display()),
            })?;
    }
    let enforcement = execguard_seal::seal(
        sys.seal_sys(),
        partition,
        &execguard_seal::Options {
            memfd_noexec: policy.profile() == Profile::Strict,
            mounts: if allow_exec_mappings {
                execguard_seal::MountsMode::BestEffort
            } else {
                execguard_seal::MountsMode::Required
            },
            reduced: match policy.profile() {
                Profile::Strict => None,
                p => Some(execguard_policy::Reduction::Profile(p)),
            },
            world,
        },
    )?;
    crate::inherited::reopen_inherited(sys, carry)?;
    Ok(enforcement)
}

/// Can the kernel enforce the partition? Without it the session refuses to start (typed
/// error, exit 2) unless `allow_unsealed` (`--allow-unsealed`) accepts the reduced
/// assurance, said once.
pub fn available(sys: &dyn crate::sys::SessionSys, allow_unsealed: bool) -> anyhow::Result<bool> {
    match sys.partition_abi() {
        Ok(_) => Ok(true),
        Err(e) if allow_unsealed => {
            eprintln!("execguard: warning: reduced assurance: running unsealed ({e})");
            Ok(false)
        }
        Err(e) => anyhow::bail!("{e}; pass --allow-unsealed to run without the seal"),
    }
}

/// What a host session is held to once [`seal_host`] is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub sealed: bool,
    /// `strict`, or the reductions (`reduced:...`).
    pub assurance: String,
    /// The port of the supervisor's proxy in the session's own network, if it has one.
    pub proxy_port: Option<u16>,
}

/// A host session's seal: sealed as its policy says ([`seal`]), or, unsealed (breakglass,
/// `--allow-unsealed`), the reduction it runs at. `verbose` prints the report.
pub fn seal_host(
    sys: &dyn crate::sys::SessionSys,
    policy: &Policy,
    partition: &execguard_seal::Partition,
    allow_exec_mappings: bool,
    carry: Option<&std::os::fd::OwnedFd>,
    (world, world_reductions): (
        &execguard_seal::world::World,
        &[execguard_policy::Reduction],
    ),
    verbose: bool,
) -> anyhow::Result<Held> {
    if !policy.seal() {
        let why = if policy.profile() == Profile::Breakglass {
            "reduced:breakglass"
        } else {
            "reduced:unsealed"
        };
        if verbose {
            eprintln!("execguard: assurance: {why}");
        }
        if policy.audit_socket().is_some() {
            // The writer still keeps every record, but nothing keeps the session from the
            // log and the key: said once, as every reduction is.
            eprintln!("execguard: notice: {why}: without the seal the session can reach the kept audit's log and key; `execguard audit verify` shows a cut or an edit, not a log rewritten whole with the key (docs/audit.md)");
        }
        return Ok(Held {
            sealed: false,
            assurance: why.into(),
            proxy_port: None,
        });
    }
    let mut report = seal(sys, policy, partition, allow_exec_mappings, carry, Some(world)).map_err(|e| match e {
        execguard_seal::SealError::Noexec { .. }
        | execguard_seal::SealError::NamespaceUnfinished { .. } => anyhow::anyhow!(
            "{e}; the session could map written files executable: fix the cause or pass --allow-exec-mappings to run with only the guard's refusals"
        ),
        execguard_seal::SealError::World { .. } => anyhow::anyhow!(
            "{e}; fix the cause, or run a reduced world (--allow-shared-home, --allow-shared-temp, --allow-outside-sockets)"
        ),
        execguard_seal::SealError::Network { .. } => anyhow::anyhow!(
            "{e}; this kernel gives the session no network of its own: run with --allow-host-network to share the host's (its loopback services included)"
        ),
        e => anyhow::anyhow!("{e}"),
    })?;
    report
        .assurance
        .reductions
        .extend(world_reductions.iter().copied());
    if verbose {
        for line in report.lines() {
            eprintln!("execguard: {line}");
        }
    }
    let proxy_port = report
        .namespace
        .as_ref()
        .and_then(|ns| ns.world.as_ref())
        .and_then(|w| w.network.as_ref())
        .map(|net| net.proxy_port);
    Ok(Held {
        sealed: true,
        assurance: report.assurance.to_string(),
        proxy_port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::RecordingSessionSys;

    /// Each way on from the kernel's answer: sealed; unsealed when the operator accepts the
    /// reduced assurance; else refused with the way forward.
    #[test]
    fn the_seal_is_had_refused_or_reduced_as_asked() {
        /// The kernel's answer, `--allow-unsealed`, and sealed or the refusal.
        type Row = (
            Option<Result<i64, String>>,
            bool,
            Result<bool, &'static str>,
        );
        let rows: [Row; 4] = [
            (Some(Ok(7)), false, Ok(true)),
            (Some(Ok(2)), true, Ok(true)),
            (Some(Err("no Landlock".into())), true, Ok(false)),
            (
                Some(Err("no Landlock".into())),
                false,
                Err("seal_unavailable: the kernel cannot enforce the W^X partition: no Landlock; pass --allow-unsealed"),
            ),
        ];
        for (abi, allow_unsealed, want) in rows {
            let sys = RecordingSessionSys {
                abi: abi.clone(),
                ..Default::default()
            };
            let got = available(&sys, allow_unsealed).map_err(|e| e.to_string());
            match (&want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g, "{abi:?} {allow_unsealed}"),
                (Err(w), Err(g)) => assert!(g.contains(w), "{abi:?}: {g}"),
                _ => panic!("{abi:?} {allow_unsealed}: want {want:?}, got {got:?}"),
            }
            assert_eq!(sys.calls(), ["partition_abi"]);
        }
    }
}
