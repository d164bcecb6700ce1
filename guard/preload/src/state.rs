//! The policy in force for this process. Host mode's inline policy is captured when the guard
//! is loaded, before the program runs (so the program cannot forge it); the policy is parsed
//! on the first exec and cached without locks.
//!
//! The first caller moves the cache from EMPTY to LOADING, fills it and publishes READY.
//! A caller that finds it LOADING (another thread, or a fork child of a process caught
//! mid-load) does not wait: it loads a private copy on its own stack. So no exec ever blocks,
//! and `vfork` children and post-`fork` children of threaded programs are safe.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU8, Ordering};
use execguard_os::{raw, CList, Distrust, LibcSys};
use execguard_policy::path::{basename, PATH_MAX};
use execguard_policy::policy::{Index, MAX_POLICY_BYTES};
use execguard_policy::{Policy, Profile, Reason, RuntimeIds};
use libc::{c_char, c_int};

pub const SYSTEM_POLICY: &[u8] = b"/etc/execguard/policy.toml\0";
/// The environment entry that carries the policy in host mode (name and `=`).
pub const POLICY_PREFIX: &[u8] = b"EXECGUARD_POLICY=";
pub const PRELOAD_PREFIX: &[u8] = b"LD_PRELOAD=";
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
    /// The policy text: in the load-time capture (host mode) or in the mapping the system
    /// policy was read into ([`SystemText`]); valid as long as this `Loaded`.
    text: *const u8,
    text_len: usize,
    index: Option<Index>,
    pub runtimes: RuntimeIds,
}

impl Loaded {
    const EMPTY: Loaded = Loaded {
        error: Some(Reason::InternalError),
        source: Source::System,
        text: core::ptr::null(),
        text_len: 0,
        index: None,
        runtimes: RuntimeIds::NONE,
    };

    pub fn text(&self) -> &[u8] {
        if self.text.is_null() {
            return &[];
        }
        // SAFETY: `text` points at `text_len` initialised bytes that outlive `self`: the
        // capture (never written after load) or the system text's mapping, which is unmapped
        // only with this value (`with_private_copy`) or never (the cache).
        unsafe { core::slice::from_raw_parts(self.text, self.text_len) }
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

    /// `EXECGUARD_POLICY=<text>` as a C string (host mode: the entry captured at load).
    pub fn entry_ptr(&self) -> *const c_char {
        initial().buf.as_ptr().cast()
    }

    /// The guard's own path, from the `LD_PRELOAD` this process was started with.
    pub fn self_lib(&self) -> Option<&'static [u8]> {
        initial().self_lib()
    }

    /// Loads the policy in force.
    fn load(&mut self) {
        self.error = self.try_load().err();
    }

    fn try_load(&mut self) -> Result<(), Reason> {
        let system = &SYSTEM_POLICY[..SYSTEM_POLICY.len() - 1];
        match execguard_os::trusted_file(system) {
            Ok((fd, _)) => {
                self.source = Source::System;
                let read = SystemText::map().map(|buf| {
                    self.text = buf.as_ptr();
                    read_all(fd, buf)
                });
                raw::close(fd);
                self.text_len = read.map_err(|_| Reason::InternalError)??;
            }
            Err(Distrust::Missing) => {
                self.source = Source::Session;
                let text = initial().policy()?;
                self.text = text.as_ptr();
                self.text_len = text.len();
            }
            Err(_) => return Err(Reason::PolicyUntrusted),
        }
        let policy = Policy::parse(self.text()).map_err(|_| Reason::PolicyInvalid)?;
        let mut profile = policy.profile();
        if let Some(path) = policy.runtime_profile() {
            // A state file the session could replace would let it pick its own profile.
            if policy.in_write_set(path) {
                return Err(Reason::PolicyUntrusted);
            }
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
}

/// Host mode: what the process was started with, taken by [`__execguard_capture_initial_environment`]
/// before any of the program's own code ran. Reading it back later (from `environ` or
/// `/proc/self/environ`, which is the same memory) would let the program forge it: perl's
/// `$0` overwrites that area, and a non-dumpable process (the wrappers) cannot even open its
/// own `/proc/self/environ`. It lies in [`FirstPage`].
#[repr(C)]
struct Initial {
    /// Length of the policy text; [`NOT_FOUND`] or [`TOO_LARGE`] when there is none.
    policy_len: usize,
    self_lib_len: usize,
    /// `EXECGUARD_POLICY=<text>\0`, then the guard's own path: one run of bytes, so that
    /// the capture writes as few pages as it can (each is a copy-on-write fault at load).
    buf: [u8; POLICY_PREFIX.len() + MAX_POLICY_BYTES + 1 + PATH_MAX],
}

const NOT_FOUND: usize = usize::MAX;
const TOO_LARGE: usize = usize::MAX - 1;

impl Initial {
    fn policy(&self) -> Result<&[u8], Reason> {
        match self.policy_len {
            NOT_FOUND => Err(Reason::PolicyMissing),
            TOO_LARGE => Err(Reason::PolicyInvalid),
            n => Ok(&self.buf[POLICY_PREFIX.len()..POLICY_PREFIX.len() + n]),
        }
    }

    fn self_lib(&self) -> Option<&[u8]> {
        let at = POLICY_PREFIX.len() + self.policy().ok()?.len() + 1;
        (self.self_lib_len > 0).then(|| &self.buf[at..at + self.self_lib_len])
    }

    /// Copies the first `EXECGUARD_POLICY` entry (as getenv finds it) and the guard's path
    /// from the first `LD_PRELOAD`. Nothing is written before the scan has found a policy: a
    /// process started without one leaves the capture's page shared with the file, and one
    /// with a policy takes a single copy-on-write fault (a read first would cost a second).
    fn capture(&mut self, env: &CList) {
        use execguard_policy::sys::StrList;
        let (mut policy, mut preload) = (None, None);
        // Only these two names are looked for: the other entries are not measured.
        let named = |i: &usize| {
            env.first_byte(*i)
                .is_some_and(|c| c == POLICY_PREFIX[0] || c == PRELOAD_PREFIX[0])
        };
        for e in (0..env.len()).filter(named).filter_map(|i| env.get(i)) {
            if policy.is_none() {
                if let Some(text) = e.strip_prefix(POLICY_PREFIX) {
                    policy = Some(text);
                    continue;
                }
            }
            if preload.is_none() {
                preload = e.strip_prefix(PRELOAD_PREFIX);
            }
        }
        let Some(text) = policy else {
            return;
        };
        if text.len() > MAX_POLICY_BYTES {
            self.policy_len = TOO_LARGE;
            return;
        }
        let at = POLICY_PREFIX.len();
        self.buf[at..at + text.len()].copy_from_slice(text);
        self.buf[at + text.len()] = 0;
        self.policy_len = text.len();
        let Some(list) = preload else {
            return;
        };
        let at = at + text.len() + 1;
        if let Some(lib) = list
            .split(|&c| c == b':' || c == b' ')
            .find(|e| basename(e) == LIB_NAME && e.starts_with(b"/") && e.len() < PATH_MAX)
        {
            self.buf[at..at + lib.len()].copy_from_slice(lib);
            self.self_lib_len = lib.len();
        }
    }
}

struct InitialCell(UnsafeCell<Initial>);

// SAFETY: written only by `__execguard_capture_initial_environment`, which the loader runs once, before
// the program's own code and so before any other thread exists; only read after that.
unsafe impl Sync for InitialCell {}

/// What the first exec of a process writes, in the page where host mode's initialiser has
/// written the captured policy already: the cache's state (the decision stacks' slots lie just
/// before it, in `decision_stack`). In
/// pages of their own, each cost a fresh process a read fault, then a copy-on-write fault
/// (the exec chain: 69.9 -> 67.7 page faults per hop). Small fields first, so that a policy
/// of up to about 1.5 KiB (a session's is about 1 KiB) is captured in this one page too: with
/// rust-lld, `layout.ld` puts it right after what relocation writes, on the data segment's
/// first page, which the loader has made the process's own already. Nothing here is written
/// in a `fork` child that only decides.
#[repr(C, align(64))]
pub struct FirstPage {
    /// [`Cache`]'s state: EMPTY, LOADING or READY.
    cache_state: AtomicU8,
    initial: InitialCell,
}

// Named for layout.ld.
#[link_section = ".data.first"]
pub static FIRST: FirstPage = FirstPage {
    cache_state: AtomicU8::new(EMPTY),
    initial: InitialCell(UnsafeCell::new(Initial {
        policy_len: NOT_FOUND,
        self_lib_len: 0,
        buf: {
            // The prefix is in the file image, so the capture writes only the text.
            let mut b = [0; POLICY_PREFIX.len() + MAX_POLICY_BYTES + 1 + PATH_MAX];
            let mut i = 0;
            while i < POLICY_PREFIX.len() {
                b[i] = POLICY_PREFIX[i];
                i += 1;
            }
            b
        },
    })),
};

fn initial() -> &'static Initial {
    // SAFETY: no writer exists once the program runs (see `InitialCell`).
    unsafe { &*FIRST.initial.0.get() }
}

/// The guard's one initialiser: the loader calls it (through the shim's constructor, which
/// keeps it hidden and puts it first in the code) with the initial environment, after libc
/// is ready and before the program's own initialisers and `main`. It only scans the entry
/// pointers (and copies the policy when there is one): most processes never exec.
///
/// # Safety
/// Called once, by the loader's initialiser, with `envp` NULL or a NULL-terminated array of
/// C strings.
#[no_mangle]
pub unsafe extern "C" fn __execguard_capture_initial_environment(
    _argc: c_int,
    _argv: *const *const c_char,
    envp: *const *const c_char,
) {
    // SAFETY: the loader's contract above; the strings outlive this call.
    let env = unsafe { CList::new(envp) };
    // SAFETY: see `InitialCell`: this is its only writer, running before any reader.
    unsafe { &mut *FIRST.initial.0.get() }.capture(&env);
}

/// Reads a whole trusted file ([`execguard_os::trusted_file`]) into `out`.
fn read_all(fd: c_int, out: &mut [u8]) -> Result<usize, Reason> {
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
    let fd = match execguard_os::trusted_file(path) {
        Ok((fd, _)) => fd,
        Err(Distrust::Missing) => return Ok(None),
        Err(_) => return Err(Reason::PolicyUntrusted),
    };
    let mut buf = [0u8; 32];
    let read = read_all(fd, &mut buf);
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

/// The system policy's text (image mode) is read into a mapping made when the file exists,
/// not into a buffer in the library: 16 KiB of zeros in the file of every host, where host
/// mode never uses them. Not on the stack: the caller's may be small (a thread, a `clone`
/// child).
struct SystemText;

impl SystemText {
    fn map() -> Result<&'static mut [u8; MAX_POLICY_BYTES], c_int> {
        let ptr = raw::map_anonymous(MAX_POLICY_BYTES)?;
        // SAFETY: a fresh zero-filled mapping of exactly this size and alignment 1, which
        // nothing else refers to; unmapped only by `unmap` below.
        Ok(unsafe { &mut *ptr.cast::<[u8; MAX_POLICY_BYTES]>() })
    }

    /// Unmaps the text `loaded` was read into, if it was.
    ///
    /// # Safety
    /// Nothing refers to `loaded`'s text after this.
    unsafe fn unmap(loaded: &Loaded) {
        if loaded.source == Source::System && !loaded.text.is_null() {
            // SAFETY: `text` is the start of `map`'s mapping (the system source reads into
            // nothing else); the caller's contract.
            unsafe { raw::unmap(loaded.text.cast_mut(), MAX_POLICY_BYTES) };
        }
    }
}

/// The cached policy; its state is [`FirstPage::cache_state`]. Page-aligned, so that loading
/// the policy (which writes `slot`, about 3.4 KiB) makes one page of it the process's own,
/// not two.
#[repr(C, align(4096))]
struct Cache {
    /// Initialised at compile time, so the first exec only writes what it loads.
    slot: UnsafeCell<Loaded>,
}

// SAFETY: `slot` is written only by the thread that moved the state from EMPTY to LOADING,
// and read only after the state is READY (Release/Acquire), after which it is never written
// again.
unsafe impl Sync for Cache {}

static CACHE: Cache = Cache {
    slot: UnsafeCell::new(Loaded::EMPTY),
};

/// Another thread is loading the cache (or was, when this process forked): load a private copy
/// rather than wait.
#[inline(never)]
#[cold]
fn with_private_copy<R>(f: impl FnOnce(&Loaded) -> R) -> R {
    let mut local = Loaded::EMPTY;
    crate::decision_stack::run(|| local.load());
    let result = f(&local);
    // SAFETY: `local` is not used after this.
    unsafe { SystemText::unmap(&local) };
    result
}

/// Loads the policy now if it is not loaded yet (before `fork`, so that children inherit it).
pub fn prime() {
    if FIRST.cache_state.load(Ordering::Acquire) != READY {
        with(|_| ());
    }
}

/// Runs `f` with the policy in force, loading it on first use.
pub fn with<R>(f: impl FnOnce(&Loaded) -> R) -> R {
    match FIRST.cache_state.load(Ordering::Acquire) {
        READY => {
            // SAFETY: READY means the slot was fully written and published (see `Cache`).
            f(unsafe { &*CACHE.slot.get() })
        }
        EMPTY
            if FIRST
                .cache_state
                .compare_exchange(EMPTY, LOADING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok() =>
        {
            // SAFETY: this thread won EMPTY -> LOADING, so it alone may write the slot.
            let loaded = unsafe { &mut *CACHE.slot.get() };
            crate::decision_stack::run(|| loaded.load());
            FIRST.cache_state.store(READY, Ordering::Release);
            f(loaded)
        }
        _ => with_private_copy(f),
    }
}
