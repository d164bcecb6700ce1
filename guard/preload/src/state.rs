//! The policy in force for this process, loaded on the first exec (nothing runs at load time)
//! and cached without locks.
//!
//! The first caller moves the cache from EMPTY to LOADING, fills it and publishes READY.
//! A caller that finds it LOADING (another thread, or a fork child of a process caught
//! mid-load) does not wait: it loads a private copy on its own stack. So no exec ever blocks,
//! and `vfork` children and post-`fork` children of threaded programs are safe.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU8, Ordering};
use execguard_os::{raw, LibcSys};
use execguard_policy::path::{basename, PathBuf, PATH_MAX};
use execguard_policy::policy::{Index, MAX_POLICY_BYTES};
use execguard_policy::{Policy, Profile, Reason, RuntimeIds};
use libc::{c_char, c_int};

pub const SYSTEM_POLICY: &[u8] = b"/etc/execguard/policy.toml\0";
/// The environment entry that carries the policy in host mode (name and `=`).
pub const POLICY_PREFIX: &[u8] = b"EXECGUARD_POLICY=";
const PRELOAD_PREFIX: &[u8] = b"LD_PRELOAD=";
/// The guard library's file name; the `LD_PRELOAD` entry with this name is the guard itself.
pub const LIB_NAME: &[u8] = b"libexecguard.so";

/// Where the policy came from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Root-owned `/etc/execguard/policy.toml` (image mode, with `/etc/ld.so.preload`).
    System,
    /// Inline in the initial environment (host mode): children must inherit guard and policy.
    Session,
}

pub struct Loaded {
    pub error: Option<Reason>,
    pub source: Source,
    /// `EXECGUARD_POLICY=<text>\0`, so host mode can hand the same entry to children.
    entry: [u8; POLICY_PREFIX.len() + MAX_POLICY_BYTES + 1],
    text_len: usize,
    index: Option<Index>,
    pub runtimes: RuntimeIds,
    self_lib: [u8; PATH_MAX],
    self_lib_len: usize,
}

impl Loaded {
    const EMPTY: Loaded = Loaded {
        error: Some(Reason::InternalError),
        source: Source::System,
        entry: [0; POLICY_PREFIX.len() + MAX_POLICY_BYTES + 1],
        text_len: 0,
        index: None,
        runtimes: RuntimeIds::NONE,
        self_lib: [0; PATH_MAX],
        self_lib_len: 0,
    };

    pub fn text(&self) -> &[u8] {
        &self.entry[POLICY_PREFIX.len()..POLICY_PREFIX.len() + self.text_len]
    }

    /// The policy with the profile in force, or the reason there is none.
    pub fn policy(&self) -> Result<Policy<'_>, Reason> {
        match (&self.error, &self.index) {
            // The index was stored with the profile in force already applied.
            (None, Some(index)) => Ok(Policy::from_parts(self.text(), index)),
            (Some(reason), _) => Err(*reason),
            (None, None) => Err(Reason::InternalError),
        }
    }

    /// `EXECGUARD_POLICY=<text>` as a C string.
    pub fn entry_ptr(&self) -> *const c_char {
        self.entry.as_ptr().cast()
    }

    pub fn self_lib(&self) -> Option<&[u8]> {
        (self.self_lib_len > 0).then(|| &self.self_lib[..self.self_lib_len])
    }

    fn load(&mut self) {
        self.error = self.try_load().err();
    }

    fn try_load(&mut self) -> Result<(), Reason> {
        self.entry[..POLICY_PREFIX.len()].copy_from_slice(POLICY_PREFIX);
        let text_at = POLICY_PREFIX.len();
        let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        // SAFETY: SYSTEM_POLICY is NUL-terminated.
        match unsafe { raw::open(SYSTEM_POLICY.as_ptr().cast(), flags, 0) } {
            Ok(fd) => {
                self.source = Source::System;
                let read = read_trusted(fd, &mut self.entry[text_at..text_at + MAX_POLICY_BYTES]);
                raw::close(fd);
                self.text_len = read?;
            }
            Err(libc::ENOENT) => {
                self.source = Source::Session;
                self.read_initial_environment()?;
            }
            Err(_) => return Err(Reason::PolicyUntrusted),
        }
        let policy = Policy::parse(self.text()).map_err(|_| Reason::PolicyInvalid)?;
        let mut profile = policy.profile();
        if let Some(path) = policy.runtime_profile() {
            if let Some(from_state) = runtime_profile(path)? {
                profile = from_state;
            }
        }
        let runtimes = RuntimeIds::resolve(&mut LibcSys, &policy);
        let index = policy.with_profile(profile).index().clone();
        self.runtimes = runtimes;
        self.index = Some(index);
        Ok(())
    }

    /// Host mode: the policy and the guard's own path come from the environment this process
    /// was started with (`/proc/self/environ`), which `setenv`/`putenv` cannot change.
    fn read_initial_environment(&mut self) -> Result<(), Reason> {
        let flags = libc::O_RDONLY | libc::O_CLOEXEC;
        // SAFETY: literal, NUL-terminated.
        let fd = unsafe { raw::open(c"/proc/self/environ".as_ptr(), flags, 0) }
            .map_err(|_| Reason::ProcUnavailable)?;
        let mut preload = PathBuf::new();
        let mut scan = EnvScan {
            policy_len: None,
            preload_len: None,
            overflow: false,
        };
        let text_at = POLICY_PREFIX.len();
        let (policy_out, _) = self.entry[text_at..].split_at_mut(MAX_POLICY_BYTES);
        let result = scan.run(fd, policy_out, &mut preload);
        raw::close(fd);
        result?;
        if scan.overflow {
            return Err(Reason::PolicyInvalid);
        }
        self.text_len = scan.policy_len.ok_or(Reason::PolicyMissing)?;
        if scan.preload_len.is_some() {
            let list = preload.as_bytes();
            if let Some(lib) = list
                .split(|&c| c == b':' || c == b' ')
                .find(|e| basename(e) == LIB_NAME && e.starts_with(b"/"))
            {
                self.self_lib[..lib.len()].copy_from_slice(lib);
                self.self_lib_len = lib.len();
            }
        }
        Ok(())
    }
}

/// Streams `/proc/self/environ`, copying the values of `EXECGUARD_POLICY` and `LD_PRELOAD`
/// (first occurrence of each, as getenv would find).
struct EnvScan {
    policy_len: Option<usize>,
    preload_len: Option<usize>,
    overflow: bool,
}

#[derive(Clone, Copy)]
enum Field {
    Policy,
    Preload,
}

impl EnvScan {
    /// Streams the file in chunks and handles it an entry segment at a time: only the start of
    /// each entry is compared with the two prefixes, and values are copied in bulk.
    fn run(&mut self, fd: c_int, policy: &mut [u8], preload: &mut PathBuf) -> Result<(), Reason> {
        let mut chunk = [0u8; 4096];
        // Position inside the current entry, and which prefixes it still matches.
        let mut pos = 0usize;
        let (mut maybe_policy, mut maybe_preload) = (true, true);
        let mut copying: Option<(Field, usize)> = None;
        loop {
            let n = match raw::read(fd, &mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(libc::EINTR) => continue,
                Err(_) => return Err(Reason::ProcUnavailable),
            };
            let mut rest = &chunk[..n];
            while !rest.is_empty() {
                let nul = rest.iter().position(|&c| c == 0);
                let seg = &rest[..nul.unwrap_or(rest.len())];
                rest = nul.map_or(&[][..], |k| &rest[k + 1..]);
                let mut value = None;
                match &mut copying {
                    Some(_) => value = Some(seg),
                    None if maybe_policy || maybe_preload => {
                        let advance = |prefix: &[u8], still: &mut bool| -> Option<usize> {
                            let want = &prefix[pos.min(prefix.len())..];
                            let k = want.len().min(seg.len());
                            *still &= seg[..k] == want[..k];
                            (*still && pos + k == prefix.len()).then_some(k)
                        };
                        if let Some(k) = advance(POLICY_PREFIX, &mut maybe_policy) {
                            copying = Some((Field::Policy, 0));
                            value = Some(&seg[k..]);
                        } else if let Some(k) = advance(PRELOAD_PREFIX, &mut maybe_preload) {
                            copying = Some((Field::Preload, 0));
                            value = Some(&seg[k..]);
                        }
                        pos += seg.len();
                    }
                    None => {}
                }
                if let (Some(v), Some((field, len))) = (value, &mut copying) {
                    match field {
                        Field::Policy => {
                            let room = policy.len() - *len;
                            let take = v.len().min(room);
                            policy[*len..*len + take].copy_from_slice(&v[..take]);
                            *len += take;
                            self.overflow |= take < v.len();
                        }
                        // A preload list longer than a path only loses entries after the
                        // guard's own, which comes first when execguard set it.
                        Field::Preload => {
                            let _ = preload.push_bytes(v);
                        }
                    }
                }
                if nul.is_some() {
                    if let Some((field, len)) = copying.take() {
                        match field {
                            Field::Policy => self.policy_len = Some(len),
                            Field::Preload => self.preload_len = Some(preload.as_bytes().len()),
                        }
                    }
                    pos = 0;
                    maybe_policy = self.policy_len.is_none();
                    maybe_preload = self.preload_len.is_none();
                }
            }
        }
        Ok(())
    }
}

/// Reads a whole file that must be root-owned, regular and writable by root alone.
fn read_trusted(fd: c_int, out: &mut [u8]) -> Result<usize, Reason> {
    let st = raw::fstat(fd).map_err(|_| Reason::PolicyUntrusted)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_uid != 0 || st.st_mode & 0o022 != 0 {
        return Err(Reason::PolicyUntrusted);
    }
    let mut len = 0;
    loop {
        if len == out.len() {
            // One more byte would exceed the limit: refuse rather than cut the policy.
            let mut probe = [0u8; 1];
            return match raw::read(fd, &mut probe) {
                Ok(0) => Ok(len),
                _ => Err(Reason::PolicyInvalid),
            };
        }
        match raw::read(fd, &mut out[len..]) {
            Ok(0) => return Ok(len),
            Ok(n) => len += n,
            Err(libc::EINTR) => {}
            Err(_) => return Err(Reason::PolicyInvalid),
        }
    }
}

/// The profile from a root-owned runtime state file; `None` when the file does not exist.
fn runtime_profile(path: &[u8]) -> Result<Option<Profile>, Reason> {
    let c = execguard_os::CPath::new(path).map_err(|_| Reason::PolicyInvalid)?;
    let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    // SAFETY: `c` is NUL-terminated.
    let fd = match unsafe { raw::open(c.ptr(), flags, 0) } {
        Ok(fd) => fd,
        Err(libc::ENOENT) => return Ok(None),
        Err(_) => return Err(Reason::PolicyUntrusted),
    };
    let mut buf = [0u8; 32];
    let read = read_trusted(fd, &mut buf);
    raw::close(fd);
    let n = read?;
    let name = buf[..n].strip_suffix(b"\n").unwrap_or(&buf[..n]);
    Profile::from_name(name)
        .map(Some)
        .ok_or(Reason::PolicyInvalid)
}

const EMPTY: u8 = 0;
const LOADING: u8 = 1;
const READY: u8 = 2;

struct Cache {
    state: AtomicU8,
    /// Initialised at compile time, so the first exec only writes what it loads: constructing
    /// an empty `Loaded` at run time meant writing its 22 KiB in every new process.
    slot: UnsafeCell<Loaded>,
}

// SAFETY: `slot` is written only by the thread that moved `state` from EMPTY to LOADING, and
// read only after `state` is READY (Release/Acquire), after which it is never written again.
unsafe impl Sync for Cache {}

static CACHE: Cache = Cache {
    state: AtomicU8::new(EMPTY),
    slot: UnsafeCell::new(Loaded::EMPTY),
};

/// Another thread is loading the cache (or was, when this process forked): load a private copy
/// on this stack rather than wait. Out of line: its 22 KiB must not sit in the ordinary path's
/// frame (stack probes would touch every page of it).
#[inline(never)]
#[cold]
fn with_private_copy<R>(f: impl FnOnce(&Loaded) -> R) -> R {
    let mut local = Loaded::EMPTY;
    local.load();
    f(&local)
}

/// Loads the policy now if it is not loaded yet (before `fork`, so that children inherit it).
pub fn prime() {
    if CACHE.state.load(Ordering::Acquire) != READY {
        with(|_| ());
    }
}

/// Runs `f` with the policy in force, loading it on first use.
pub fn with<R>(f: impl FnOnce(&Loaded) -> R) -> R {
    match CACHE.state.load(Ordering::Acquire) {
        READY => {
            // SAFETY: READY means the slot was fully written and published (see `Cache`).
            f(unsafe { &*CACHE.slot.get() })
        }
        EMPTY
            if CACHE
                .state
                .compare_exchange(EMPTY, LOADING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok() =>
        {
            // SAFETY: this thread won EMPTY -> LOADING, so it alone may write the slot.
            let loaded = unsafe { &mut *CACHE.slot.get() };
            loaded.load();
            CACHE.state.store(READY, Ordering::Release);
            f(loaded)
        }
        _ => with_private_copy(f),
    }
}
