//! The writer outside the session: it binds the session's socket before the session starts,
//! takes each record a process of the session sends (one `SOCK_SEQPACKET` message per
//! connection: a message arrives whole or not at all), stamps it with what only it knows
//! (its time, the sender's pid and uid from `SO_PEERCRED`, the session, the sequence, the
//! previous line's digest), appends it to the kept log and answers `+` (kept) or `-` (not
//! kept: the sender refuses its exec, `audit_unwritable`). At the end it writes the session's
//! last record, signed.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ed25519_dalek::SigningKey;

use crate::key::StateDir;
use crate::line::{self, Body, Link, Stamp};
use crate::log::KeptLog;

/// What a session's first and last records say of it.
#[derive(Clone, Debug)]
pub struct Session {
    /// Who keeps it: `run` (the supervisor of `execguard run`), `entrypoint` (PID 1).
    pub tool: &'static str,
    pub workspace: String,
    pub profile: String,
    /// The assurance asked for at the start (the session reports what it got: [`Serving::finish`]).
    pub assurance: String,
}

/// The answers on the socket.
pub const KEPT: u8 = b'+';
pub const NOT_KEPT: u8 = b'-';

/// How long the writer waits for a connected process to send its record: a process that
/// connects and sends nothing holds the others up this long, no longer.
const RECV_TIMEOUT_MS: i64 = 200;

struct Chain {
    log: KeptLog,
    id: String,
    seq: u64,
    /// Records that could not be written (a full disk): said in a notice once one can be.
    lost: u64,
}

impl Chain {
    /// Appends `body` as the session's next record; `sign` signs it (the last record).
    fn append(&mut self, stamp: &Stamp, body: &Body, key: Option<&SigningKey>) -> io::Result<()> {
        if self.lost > 0 {
            let notice = Body::writer(
                &body.str("tool").unwrap_or_else(|| "run".into()),
                line::LOST,
                &[("lost", self.lost.into())],
            );
            if let Err(e) =
                self.append_one(&Stamp::now(std::process::id(), stamp.uid), &notice, None)
            {
                self.lost += 1;
                return Err(e);
            }
            self.lost = 0;
        }
        let r = self.append_one(stamp, body, key);
        if r.is_err() {
            self.lost += 1;
        }
        r
    }

    fn append_one(
        &mut self,
        stamp: &Stamp,
        body: &Body,
        key: Option<&SigningKey>,
    ) -> io::Result<()> {
        let (id, seq) = (&self.id, self.seq);
        self.log.append(|prev| {
            let l = line::build(
                stamp,
                &Link {
                    session: id,
                    seq,
                    prev,
                },
                body,
            );
            match key {
                Some(k) => line::sign(&l, k),
                None => l,
            }
        })?;
        self.seq += 1;
        Ok(())
    }
}

struct Shared {
    chain: Mutex<Chain>,
    key: SigningKey,
    session: Session,
    /// The session's first process (set once it is forked) and the assurance it reported
    /// (its `session_sealed`/`session_unsealed` record's `path`), which the last record names.
    reported: Mutex<(Option<u32>, Option<String>)>,
}

impl Shared {
    fn session_body(&self, reason: &str, assurance: &str) -> Body {
        Body::writer(
            self.session.tool,
            reason,
            &[
                ("profile", self.session.profile.as_str().into()),
                ("workspace", self.session.workspace.as_str().into()),
                ("assurance", assurance.into()),
                (
                    "key",
                    crate::hex(self.key.verifying_key().as_bytes()).into(),
                ),
            ],
        )
    }
}

/// A session's writer, bound and with its first record written, not serving yet.
pub struct Writer {
    shared: Arc<Shared>,
    listener: OwnedFd,
    socket: PathBuf,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A fresh session id: 16 random hex digits.
pub fn new_session_id() -> io::Result<String> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(crate::hex(&b))
}

impl Writer {
    /// Binds the session's socket in the state directory's `run/` and writes the session's
    /// first record. Call it before the session starts (before the fork and the seal): the
    /// socket must exist when the session's world is made, and its directory is one the
    /// session cannot write.
    pub fn start(state: &StateDir, session: Session) -> io::Result<Writer> {
        Self::start_at(state, session, None)
    }

    /// [`Writer::start`] with the socket bound at `socket` instead of the state directory's
    /// `run/` (the image's PID 1: its state directory is unmounted before the session starts,
    /// and the image policy names the socket).
    pub fn start_at(
        state: &StateDir,
        session: Session,
        socket: Option<PathBuf>,
    ) -> io::Result<Writer> {
        let key = state.signing_key()?;
        let id = new_session_id()?;
        let socket = socket.unwrap_or_else(|| state.socket_dir().join(format!("{id}.sock")));
        let mut addr = execguard_os::audit::Address::new();
        let dir = addr
            .set(socket.as_os_str().as_bytes())
            .map_err(io::Error::from_raw_os_error)?;
        // SAFETY: `dir` is a descriptor `set` opened for this bind and nothing else owns it.
        let _dir = dir.map(|d| unsafe { OwnedFd::from_raw_fd(d) });
        // SAFETY: socket takes integers; the result is checked and owned at once.
        let fd = cvt(unsafe {
            libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0)
        })?;
        // SAFETY: `fd` is a descriptor this process just opened and nothing else owns.
        let listener = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: `addr.sun` is a valid sockaddr_un whose first `addr.len` bytes are set.
        cvt(unsafe {
            libc::bind(
                fd,
                &addr.sun as *const _ as *const libc::sockaddr,
                addr.len as libc::socklen_t,
            )
        })?;
        // SAFETY: listen takes a descriptor and an integer.
        cvt(unsafe { libc::listen(fd, 4096) })?;
        let log = KeptLog::open(&state.log())?;
        let shared = Arc::new(Shared {
            chain: Mutex::new(Chain {
                log,
                id,
                seq: 0,
                lost: 0,
            }),
            key,
            session,
            reported: Mutex::new((None, None)),
        });
        let first = shared.session_body(line::SESSION_START, &shared.session.assurance);
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let written = shared
            .chain
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?
            .append(&Stamp::now(std::process::id(), uid), &first, None);
        if let Err(e) = written {
            let _ = std::fs::remove_file(&socket);
            return Err(e);
        }
        Ok(Writer {
            shared,
            listener,
            socket,
        })
    }

    /// The socket the session's processes send to (the policy names it: `audit_socket`).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn session_id(&self) -> String {
        self.shared
            .chain
            .lock()
            .map(|c| c.id.clone())
            .unwrap_or_default()
    }

    /// Notes the assurance the session got, for its last record (the image's PID 1 knows it
    /// once the seal is planned: the session's first process there is no execguard code).
    pub fn report_assurance(&self, assurance: &str) {
        if let Ok(mut r) = self.shared.reported.lock() {
            r.1 = Some(assurance.to_string());
        }
    }

    /// Keeps a record this process made itself (the session's first command, decided before
    /// the session exists), stamped with this process's pid.
    pub fn keep_own(&self, record: &[u8]) -> io::Result<()> {
        let body = Body::from_sender(record)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        self.shared
            .chain
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?
            .append(&Stamp::now(std::process::id(), uid), &body, None)
    }

    /// Ends a session that never started (its first command was refused): the last record,
    /// signed, and the socket removed.
    pub fn finish_unstarted(self) -> io::Result<()> {
        let _ = std::fs::remove_file(&self.socket);
        finish_chain(&self.shared, Some("not_started"))
    }

    /// Starts taking records on a thread of its own. Call it in the process that stays outside
    /// the session (after the fork: a forked child of a threaded process may not run Rust).
    pub fn serve(self, session_pid: Option<u32>) -> io::Result<Serving> {
        if let Ok(mut r) = self.shared.reported.lock() {
            r.0 = session_pid;
        }
        let mut pipe = [0; 2];
        // SAFETY: `pipe` has room for the two descriptors.
        cvt(unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) })?;
        // SAFETY: both descriptors were just made and nothing else owns them.
        let (stop_read, stop_write) =
            unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
        let shared = self.shared.clone();
        let listener = self.listener;
        let thread = std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || serve_loop(&shared, &listener, &stop_read))?;
        Ok(Serving {
            shared: self.shared,
            thread: Some(thread),
            stop: stop_write,
            socket: self.socket,
        })
    }
}

/// A writer taking records.
pub struct Serving {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    stop: OwnedFd,
    socket: PathBuf,
}

impl Serving {
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Ends the session's record once none of its processes is left: takes every record
    /// still queued on the socket, removes it, and writes the last record, naming the
    /// session with the assurance it reported (`assurance`; else the one asked for), signed.
    pub fn finish(mut self, assurance: Option<&str>) -> io::Result<()> {
        self.stop_thread();
        let _ = std::fs::remove_file(&self.socket);
        finish_chain(&self.shared, assurance)
    }

    fn stop_thread(&mut self) {
        if let Some(t) = self.thread.take() {
            // SAFETY: writing one byte from a valid buffer to a pipe this process owns.
            unsafe { libc::write(self.stop.as_raw_fd(), b"x".as_ptr().cast(), 1) };
            let _ = t.join();
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop_thread();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// The session's last record: named with `assurance`, else the one its first process
/// reported, else the one asked for; signed.
fn finish_chain(shared: &Shared, assurance: Option<&str>) -> io::Result<()> {
    let reported = shared.reported.lock().ok().and_then(|r| r.1.clone());
    let assurance = assurance
        .map(str::to_string)
        .or(reported)
        .unwrap_or_else(|| shared.session.assurance.clone());
    let last = shared.session_body(line::SESSION_END, &assurance);
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    shared
        .chain
        .lock()
        .map_err(|_| io::Error::other("poisoned"))?
        .append(
            &Stamp::now(std::process::id(), uid),
            &last,
            Some(&shared.key),
        )
}

fn serve_loop(shared: &Shared, listener: &OwnedFd, stop: &OwnedFd) {
    // A record's arrival must not preempt the session's own work (the exec that sent it goes
    // on at once when it does not wait for the answer): SCHED_BATCH takes wakeup preemption
    // away from this thread. Failing that, it still keeps every record, only sooner.
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler on the calling thread (0) with a valid sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    let mut fds = [
        libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two pollfd for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[1].revents != 0 {
            // The session has ended: take what is queued, then stop.
            // SAFETY: fcntl on a descriptor this thread borrows; integer arguments.
            unsafe {
                let fl = libc::fcntl(listener.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(listener.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
            while take_one(shared, listener.as_raw_fd()) {}
            return;
        }
        if fds[0].revents != 0 {
            take_one(shared, listener.as_raw_fd());
        }
    }
}

/// Accepts one connection and keeps its record; false when none was waiting.
fn take_one(shared: &Shared, listener: RawFd) -> bool {
    // SAFETY: accept4 with null address pointers; the result is checked and owned at once.
    let fd = unsafe {
        libc::accept4(
            listener,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        // A connection that went away before it was taken is no reason to stop.
        return matches!(
            e.raw_os_error(),
            Some(libc::ECONNABORTED | libc::EINTR | libc::EPROTO)
        );
    }
    // SAFETY: `fd` was just accepted and nothing else owns it.
    let conn = unsafe { OwnedFd::from_raw_fd(fd) };
    let answer = match keep(shared, &conn) {
        Some(Ok(())) => KEPT,
        Some(Err(())) => NOT_KEPT,
        None => return true,
    };
    // SAFETY: sending one byte from a valid buffer on a descriptor this thread owns;
    // MSG_NOSIGNAL: a sender that left raises no SIGPIPE here.
    unsafe { libc::send(fd, [answer].as_ptr().cast(), 1, libc::MSG_NOSIGNAL) };
    true
}

/// The assurance the session's first process reports (before its exec: execguard's own
/// code), taken from its first `session_sealed`/`session_unsealed` record; from any other
/// process, or a second time, such a record is only a record.
fn note_assurance(shared: &Shared, stamp: &Stamp, body: &Body) {
    let Ok(mut r) = shared.reported.lock() else {
        return;
    };
    let reason = body.str("reason");
    if r.0 == Some(stamp.pid)
        && r.1.is_none()
        && body.str("tool").as_deref() == Some("run")
        && matches!(
            reason.as_deref(),
            Some("session_sealed" | "session_unsealed")
        )
    {
        r.1 = body.str("path");
    }
}

/// The sender's credentials, as the kernel took them when it connected.
fn peer(fd: RawFd) -> io::Result<libc::ucred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid out-pointers of the sizes given.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut _ as *mut libc::c_void,
            &mut len,
        )
    })?;
    Ok(cred)
}

/// Reads one record from `conn` and keeps it: `None` when the sender sent none (it went
/// away, or waited too long), `Some(Err)` when it was refused or could not be written.
fn keep(shared: &Shared, conn: &OwnedFd) -> Option<Result<(), ()>> {
    let fd = conn.as_raw_fd();
    let cred = peer(fd).ok()?;
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: (RECV_TIMEOUT_MS * 1000) as libc::suseconds_t,
    };
    // SAFETY: `tv` is a valid timeval of the size given.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    let mut buf = vec![0u8; execguard_policy::audit::RECORD_MAX + 1];
    let n = loop {
        // SAFETY: `buf` is writable for its length; MSG_TRUNC makes the kernel return the
        // message's real length, so an oversized one is seen.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_TRUNC) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        break n;
    };
    if n <= 0 {
        return None;
    }
    let n = n as usize;
    if n > execguard_policy::audit::RECORD_MAX {
        return Some(Err(()));
    }
    let Ok(body) = Body::from_sender(&buf[..n]) else {
        return Some(Err(()));
    };
    let stamp = Stamp::now(cred.pid.max(0) as u32, cred.uid);
    note_assurance(shared, &stamp, &body);
    let mut chain = shared.chain.lock().ok()?;
    Some(chain.append(&stamp, &body, None).map_err(|_| ()))
}
