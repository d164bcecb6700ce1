//! `execguard doctor`: what protects this process and this machine, and what does not.

use anyhow::Result;
use execguard_policy::Reduction;
use execguard_seal::{Assurance, MountReport, Partition};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// How many statically linked programs to list
    #[arg(long, default_value_t = 20)]
    list: usize,
    /// Print the enforcement report of this process as one JSON object instead
    #[arg(long)]
    json: bool,
}

/// What this process is held to, as the kernel shows it from inside: the partition of the
/// policy in force, the mounts of its write set, whether the kernel refuses to execute a file
/// written there, the seccomp filters and `no_new_privs`, and the assurance that follows.
#[derive(serde::Serialize)]
struct Observed {
    landlock_abi: Option<i64>,
    write_set: Vec<PathBuf>,
    exec_dirs: Vec<PathBuf>,
    both: Vec<PathBuf>,
    /// The write-set root probed, and whether the kernel refused to execute a file there.
    exec_probe: Option<(String, bool)>,
    user_namespace: bool,
    seccomp_filters: u32,
    no_new_privs: bool,
    mounts: Vec<MountReport>,
    /// Second names of either side (another mount of the same file system).
    aliases: execguard_seal::aliases::Aliases,
    assurance: Assurance,
}

/// A field of /proc/self/status.
fn status_field(name: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

fn observe(partition: &Partition, profile: Option<execguard_policy::Profile>) -> Observed {
    // A development (or build) session's workspace, temp dirs and home layer (the policy's
    // `executable_roots`: the partition's both rights) run what it builds there: none of
    // them can show that the kernel refuses written programs, and their mounts keep exec.
    let runs_written = |p: &Path| partition.both.iter().any(|b| p.starts_with(b));
    let roots: Vec<String> = partition
        .write_set
        .iter()
        .filter(|r| !runs_written(r))
        .map(|r| r.display().to_string())
        .collect();
    let exec_probe = seal_probe(&roots);
    let seccomp_filters = status_field("Seccomp_filters")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let no_new_privs = status_field("NoNewPrivs").is_some_and(|v| v == "1");
    let user_namespace = std::fs::read_to_string("/proc/self/uid_map")
        .is_ok_and(|m| m.split_whitespace().collect::<Vec<_>>() != ["0", "0", "4294967295"]);
    let report = execguard_seal::report::report(partition);
    let aliases =
        execguard_seal::aliases::aliases(partition, &execguard_seal::mountinfo::mountinfo());
    let mut reductions = Vec::new();
    match profile {
        Some(execguard_policy::Profile::Strict) => {}
        Some(p) => reductions.push(Reduction::Profile(p)),
        None => reductions.push(Reduction::NoPolicy),
    }
    if !matches!(exec_probe, Some((_, true))) {
        reductions.push(Reduction::Unsealed);
    }
    if seccomp_filters == 0 {
        reductions.push(Reduction::NoSeccomp);
    }
    // A reduced profile's workspace keeps exec on purpose (its profile is the reduction).
    if report
        .iter()
        .any(|m| !m.noexec && !runs_written(&m.mount_point))
    {
        reductions.push(Reduction::WriteSetNotAllNoexec);
    }
    if !aliases.is_empty() {
        reductions.push(Reduction::WriteSetAliased);
    }
    Observed {
        landlock_abi: execguard_seal::kernel_abi(execguard_seal::host_sys()).ok(),
        write_set: partition.write_set.clone(),
        exec_dirs: partition.exec_dirs.clone(),
        both: partition.both.clone(),
        exec_probe,
        user_namespace,
        seccomp_filters,
        no_new_privs,
        mounts: report,
        aliases,
        assurance: Assurance::from_reductions(reductions),
    }
}

/// Is this file a statically linked ELF program (no PT_INTERP)? Such programs never load a
/// preload library, so the guard cannot see their execs.
fn is_static_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut head = vec![0u8; 64 * 1024];
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let Ok(n) = f.read(&mut head) else {
        return false;
    };
    head.truncate(n);
    let Ok(header) = goblin::elf::Elf::parse_header(&head) else {
        return false;
    };
    if header.e_type != goblin::elf::header::ET_EXEC && header.e_type != goblin::elf::header::ET_DYN
    {
        return false;
    }
    let ctx = goblin::container::Ctx::new(
        if header.e_ident[goblin::elf::header::EI_CLASS] == goblin::elf::header::ELFCLASS64 {
            goblin::container::Container::Big
        } else {
            goblin::container::Container::Little
        },
        if header.e_ident[goblin::elf::header::EI_DATA] == goblin::elf::header::ELFDATA2MSB {
            goblin::container::Endian::Big
        } else {
            goblin::container::Endian::Little
        },
    );
    let Ok(phdrs) = goblin::elf::ProgramHeader::parse(
        &head,
        header.e_phoff as usize,
        header.e_phnum as usize,
        ctx,
    ) else {
        return false;
    };
    // A program with no PT_INTERP is linked statically (or static-pie): no loader, no preload.
    !phdrs
        .iter()
        .any(|p| p.p_type == goblin::elf::program_header::PT_INTERP)
}

fn static_programs_on_path() -> Vec<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
    let mut seen = std::collections::HashSet::new();
    let mut found = Vec::new();
    for dir in std::env::split_paths(&path) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(real) = execguard_session::paths::canonical(&p) else {
                continue;
            };
            let Ok(meta) = real.metadata() else { continue };
            if !meta.is_file()
                || meta.permissions().mode() & 0o111 == 0
                || !seen.insert(real.clone())
            {
                continue;
            }
            if is_static_elf(&real) {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}

fn guard_mapped() -> bool {
    std::fs::read_to_string("/proc/self/maps").is_ok_and(|m| {
        m.lines()
            .any(|l| l.ends_with(execguard_session::runtimes::LIB_NAME))
    })
}

/// The partition of the policy in force, or the built-in write set without one.
fn partition_of(loaded: Option<&execguard_load::Loaded>) -> Partition {
    match loaded {
        Some(l) => execguard_session::seal::partition(&l.policy()),
        None => Partition::new(
            execguard_policy::policy::BUILTIN_MUTABLE_ROOTS
                .iter()
                .map(|r| PathBuf::from(String::from_utf8_lossy(r).into_owned())),
        ),
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.json {
        let loaded = execguard_session::policy_text::policy_in_force()?;
        let observed = observe(
            &partition_of(loaded.as_ref()),
            loaded.as_ref().map(|l| l.policy().profile()),
        );
        println!("{}", serde_json::to_string(&observed)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("guard");
    println!(
        "  loaded in this process: {}",
        if guard_mapped() { "yes" } else { "no" }
    );
    match std::fs::read_to_string("/etc/ld.so.preload") {
        Ok(t) => println!(
            "  /etc/ld.so.preload: {}",
            t.split_whitespace().collect::<Vec<_>>().join(" ")
        ),
        Err(_) => println!(
            "  /etc/ld.so.preload: absent (host mode: only `execguard run` sessions are guarded)"
        ),
    }
    match execguard_session::runtimes::guard_library() {
        Ok(p) => println!("  library: {}", p.display()),
        Err(e) => println!("  library: not found ({e})"),
    }
    println!("policy");
    let loaded = match execguard_session::policy_text::policy_in_force() {
        Ok(Some(l)) => Some(l),
        Ok(None) => {
            println!("  none in force (no /etc/execguard/policy.toml, no EXECGUARD_POLICY): the guard would refuse every exec");
            None
        }
        Err(e) => {
            println!("  invalid: {e}");
            None
        }
    };
    let partition = partition_of(loaded.as_ref());
    if let Some(l) = &loaded {
        let p = l.policy();
        let source = match &l.source {
            execguard_load::Source::System(path) => path.display().to_string(),
            execguard_load::Source::Environment => "EXECGUARD_POLICY (host session)".into(),
        };
        println!("  source: {source}");
        println!("  profile: {}", p.profile().as_str());
        println!(
            "  allow-list: {}",
            if p.has_allow_list() {
                format!("{} commands", p.allow_commands().count())
            } else {
                "off".into()
            }
        );
        for rt in p.runtimes() {
            println!("  protected runtime: {rt}");
        }
    }
    let observed = observe(&partition, loaded.as_ref().map(|l| l.policy().profile()));
    println!("partition (docs/write-set.md)");
    for root in &partition.write_set {
        println!(
            "  write set: {}{}",
            root.display(),
            if root.exists() {
                ""
            } else {
                " (absent: no rule, neither writable nor executable)"
            }
        );
    }
    for dir in &partition.exec_dirs {
        println!("  exec dir (executable, read-only): {}", dir.display());
    }
    for dir in &partition.both {
        println!("  both rights (reduced profile): {}", dir.display());
    }
    println!("  everything else: executable, not writable");
    println!("write-set mounts");
    for m in &observed.mounts {
        println!(
            "  {} ({}, for {}): {}",
            m.mount_point.display(),
            m.fstype,
            m.root.display(),
            if m.noexec {
                "noexec (the kernel refuses exec and exec-mappings)"
            } else if observed.both.iter().any(|b| m.mount_point.starts_with(b)) {
                "exec allowed: both rights, where this profile runs what the session builds"
            } else {
                "exec allowed by the mount: the guard refuses written objects to dlopen and the loader, but not a program's own executable mapping"
            }
        );
    }
    println!("second names (another mount of the same file system)");
    for (root, name) in &observed.aliases.write_set {
        println!(
            "  {} is also {}, outside the write set: what the session writes would run there",
            root.display(),
            name.display()
        );
    }
    for (dir, name) in &observed.aliases.exec_dirs {
        println!(
            "  exec dir {} is also {}, on the write side",
            dir.display(),
            name.display()
        );
    }
    if observed.aliases.is_empty() {
        println!("  none");
    }
    println!("kernel");
    match execguard_seal::kernel_abi(execguard_seal::host_sys()) {
        Ok(v) => println!("  landlock: ABI {v}"),
        Err(e) => println!(
            "  landlock: unavailable ({})",
            std::io::Error::from_raw_os_error(e)
        ),
    }
    match std::fs::read_to_string("/proc/sys/vm/memfd_noexec") {
        Ok(v) => println!(
            "  vm.memfd_noexec: {} ({})",
            v.trim(),
            match v.trim() {
                "2" => "no memfd can be executed",
                "1" => "memfds are created non-executable unless asked",
                _ => "memfds may be executed unless the session's seccomp filter refuses them",
            }
        ),
        Err(_) => println!("  vm.memfd_noexec: not supported by this kernel (before 6.3)"),
    }
    let policy_seal = loaded.as_ref().is_some_and(|l| l.policy().seal());
    let probe = observed.exec_probe.clone();
    match &probe {
        Some((root, true)) => println!(
            "  seal: this process is sealed (the kernel refused to execute a file written in {root})"
        ),
        Some((root, false)) => println!(
            "  seal: not sealed (the kernel executed a file in {root}){}",
            if policy_seal {
                "; the policy says seal = true: this process escaped it"
            } else {
                ""
            }
        ),
        None => println!("  seal: unknown (no writable write-set root to probe)"),
    }
    println!(
        "  seccomp: {} filters, no_new_privs {}",
        observed.seccomp_filters,
        if observed.no_new_privs { "on" } else { "off" }
    );
    println!(
        "  user namespace: {}",
        if observed.user_namespace {
            "yes (the session's own)"
        } else {
            "no"
        }
    );
    println!("world (docs/session.md#the-sessions-world)");
    for line in execguard_session::world::observe() {
        println!("{line}");
    }
    println!("assurance: {}", observed.assurance);
    let statics = static_programs_on_path();
    println!(
        "statically linked programs on PATH: {} (no preload library sees their execs)",
        statics.len()
    );
    for p in statics.iter().take(args.list) {
        println!("  {}", p.display());
    }
    if !statics.is_empty() && !matches!(probe, Some((_, true))) {
        println!("warning: this process is not sealed: these programs (and any Go program) can start native code from the write set; run them in an `execguard run` session (sealed by default) or the image's strict profile");
    }
    Ok(ExitCode::SUCCESS)
}

/// Is this process sealed? Copies `/bin/true` into the first writable write-set root, and asks the kernel to execute it in a child with the raw system call (the
/// guard, if loaded here, is not consulted). `Some((root, refused))`, or `None` when no root
/// can be probed.
fn seal_probe(roots: &[String]) -> Option<(String, bool)> {
    use std::os::unix::ffi::OsStrExt;
    for root in roots {
        let path = Path::new(root);
        // A noexec mount refuses the probe as surely as Landlock does: either is the kernel.
        if !path.is_dir() || !nix_access_w(path) {
            continue;
        }
        let probe = path.join(format!(".execguard-seal-probe-{}", std::process::id()));
        if std::fs::copy("/bin/true", &probe).is_err() {
            continue;
        }
        let c = std::ffi::CString::new(probe.as_os_str().as_bytes()).ok()?;
        // SAFETY: fork in a process that is single-threaded here (doctor spawns no threads);
        // the child only makes the raw execve system call and _exit, both async-signal-safe.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let argv = [c.as_ptr(), std::ptr::null()];
            let envp: [*const libc::c_char; 1] = [std::ptr::null()];
            // SAFETY: valid NUL-terminated path and NULL-terminated arrays; on failure the
            // child exits with the errno.
            let ret =
                unsafe { execguard_os::raw::execve(c.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
            // SAFETY: _exit never returns and is async-signal-safe.
            unsafe { libc::_exit((-ret).clamp(1, 255) as i32) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let _ = std::fs::remove_file(&probe);
        let refused = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == libc::EACCES;
        return Some((root.clone(), refused));
    }
    None
}

fn nix_access_w(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
    else {
        return false;
    };
    // SAFETY: `c` is a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}
