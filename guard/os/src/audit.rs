//! Appending one audit record to the log named by the policy: every writer (the guard, the
//! wrappers, the entrypoint, `execguard run`) goes through [`append_record`], so every record
//! obeys the same rule ([`execguard_policy::audit::append_whole`]).

use crate::{raw, with_c_path};
use execguard_policy::audit::{
    append_whole, format_record, AppendError, AppendLog, Decision, Record, RECORD_MAX,
};
use execguard_policy::sys::Errno;
use execguard_policy::Profile;
use libc::c_int;

/// How the log is opened: appending, created `0600` by its first writer, never through a
/// symlink, and without blocking (a FIFO with no reader fails with `ENXIO` instead of
/// hanging the exec that is being audited).
const FLAGS: c_int = libc::O_WRONLY
    | libc::O_APPEND
    | libc::O_CREAT
    | libc::O_CLOEXEC
    | libc::O_NOFOLLOW
    | libc::O_NONBLOCK;

struct Fd(c_int);

impl AppendLog for Fd {
    fn write(&mut self, bytes: &[u8]) -> Result<usize, Errno> {
        raw::write(self.0, bytes)
    }
    fn offset(&mut self) -> Result<u64, Errno> {
        raw::lseek(self.0, 0, libc::SEEK_CUR)
    }
    fn size(&mut self) -> Result<u64, Errno> {
        raw::fstat(self.0).map(|st| st.st_size as u64)
    }
    fn truncate(&mut self, len: u64) -> Result<(), Errno> {
        raw::ftruncate(self.0, len)
    }
}

/// Opens the log at `path` as [`FLAGS`] says and checks it is a regular file.
pub fn open_log(path: &[u8]) -> Result<c_int, Errno> {
    // SAFETY: with_c_path passes a NUL-terminated copy of `path`.
    let fd = with_c_path(path, |c| unsafe { raw::open(c, FLAGS, 0o600) })??;
    regular(fd)
}

/// [`open_log`], only if no component of `path` is a link.
fn open_log_exact(path: &[u8]) -> Result<c_int, Errno> {
    regular(crate::open_no_links(path, FLAGS, 0o600)?)
}

/// `fd` when it is a regular file; closed otherwise.
fn regular(fd: c_int) -> Result<c_int, Errno> {
    match raw::fstat(fd) {
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG => Ok(fd),
        Ok(_) => {
            raw::close(fd);
            Err(libc::EINVAL)
        }
        Err(e) => {
            raw::close(fd);
            Err(e)
        }
    }
}

/// [`append`] for a writer outside the session, at its end (the supervisor, with the caller's
/// rights, root's included): the log is opened only by a name with no link on it, so a
/// directory of the log that the session replaced by a link is not followed to where it points.
/// The caller passes the log's canonical name, taken before the session started.
///
/// A `log` that is a socket is a kept audit's writer (`execguard_audit`): the record is sent
/// there and kept once the writer says so.
pub fn append_exact(log: &[u8], record: &Record<'_>) -> Result<(), AppendError> {
    let mut buf = [0u8; RECORD_MAX];
    let n = format_record(record, &mut buf);
    // SAFETY: with_c_path passes a NUL-terminated copy of `log`.
    if let Ok(Ok(st)) = with_c_path(log, |c| unsafe { raw::stat(c) }) {
        if st.st_mode & libc::S_IFMT == libc::S_IFSOCK {
            return send_record_as(log, &buf[..n], Answer::Wait);
        }
    }
    let fd = open_log_exact(log).map_err(AppendError::Failed)?;
    let result = append_whole(&mut Fd(fd), &buf[..n]);
    raw::close(fd);
    result
}

/// Appends `record` (one formatted line) to the log at `path`, whole or not at all.
pub fn append_record(path: &[u8], record: &[u8]) -> Result<(), AppendError> {
    let fd = open_log(path).map_err(AppendError::Failed)?;
    let result = append_whole(&mut Fd(fd), record);
    raw::close(fd);
    result
}

/// A record of this process, now: the caller names the rest.
pub fn stamp<'a>(
    tool: &'a str,
    entry: &'a str,
    decision: Decision,
    reason: &'a str,
    profile: Option<Profile>,
    path: &'a [u8],
    target: &'a [u8],
) -> Record<'a> {
    let (sec, nsec) = raw::realtime();
    Record {
        time: (sec.max(0) as u64, nsec.max(0) as u32),
        pid: raw::getpid(),
        uid: raw::getuid(),
        tool,
        entry,
        decision,
        reason,
        profile,
        path,
        target,
    }
}

/// Formats `record` and appends it to the log at `log`, whole or not at all.
pub fn append(log: &[u8], record: &Record<'_>) -> Result<(), AppendError> {
    let mut buf = [0u8; RECORD_MAX];
    let n = format_record(record, &mut buf);
    append_record(log, &buf[..n])
}

/// How long a sender waits for the writer's answer: a writer that does not answer in this
/// time is taken as one that did not keep the record (the exec is refused).
const ANSWER_TIMEOUT_SECS: i64 = 5;

/// Sends one formatted record to the writer listening at `socket` (the policy's
/// `audit_socket`) and waits for its answer: `Ok` only when the writer says it kept it.
///
/// A new connection per record, by name: nothing depends on a descriptor the process could
/// have closed (`close_fds`, `closefrom`) or an environment it could have emptied (`env -i`:
/// the guard's policy snapshot still names the socket). One `SOCK_SEQPACKET` message: the
/// writer gets the whole record or nothing, even if this process is killed while sending.
pub fn send_record(socket: &[u8], record: &[u8]) -> Result<(), AppendError> {
    send_record_as(socket, record, Answer::Wait)
}

/// Whether a sender waits for the writer to say it kept the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// An exec that goes ahead only once its record is kept (an audited allow).
    Wait,
    /// A refusal: the exec is refused whatever happens, so the record need only be handed
    /// over whole (queued on the writer's connection, which keeps it after this process
    /// closes its end); a record the writer then cannot write is counted in its next
    /// `audit_lost` notice.
    Delivered,
}

/// [`send_record`], waiting for the writer's answer or only for the hand-over.
pub fn send_record_as(socket: &[u8], record: &[u8], answer: Answer) -> Result<(), AppendError> {
    let mut addr = Address::new();
    let dir = addr.set(socket).map_err(AppendError::Failed)?;
    let fd = match raw::socket_unix_seqpacket() {
        Ok(fd) => fd,
        Err(e) => {
            if let Some(d) = dir {
                raw::close(d);
            }
            return Err(AppendError::Failed(e));
        }
    };
    let result = (|| {
        raw::set_timeouts(fd, ANSWER_TIMEOUT_SECS)?;
        // SAFETY: `addr.sun` is a valid sockaddr_un whose first `addr.len` bytes are set.
        unsafe {
            raw::connect(
                fd,
                &addr.sun as *const _ as *const libc::sockaddr,
                addr.len as u32,
            )
        }?;
        raw::send(fd, record)?;
        if answer == Answer::Delivered {
            return Ok(());
        }
        let mut kept = [0u8; 1];
        match raw::recv(fd, &mut kept)? {
            1 if kept[0] == b'+' => Ok(()),
            _ => Err(libc::EIO),
        }
    })();
    raw::close(fd);
    if let Some(d) = dir {
        raw::close(d);
    }
    result.map_err(AppendError::Failed)
}

/// A UNIX socket address for a name of any length: one too long for `sun_path` (108 bytes) is
/// reached through its directory, opened `O_PATH`, as `/proc/self/fd/N/NAME`.
pub struct Address {
    pub sun: libc::sockaddr_un,
    pub len: usize,
}

impl Address {
    pub fn new() -> Address {
        Address {
            // SAFETY: all-zero is a valid sockaddr_un.
            sun: unsafe { core::mem::zeroed() },
            len: 0,
        }
    }

    /// Sets the address to `path`; returns the directory descriptor to close after the
    /// `connect` or `bind` when the name went through one.
    pub fn set(&mut self, path: &[u8]) -> Result<Option<c_int>, Errno> {
        if path.is_empty() || path.contains(&0) {
            return Err(libc::EINVAL);
        }
        self.sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let room = self.sun.sun_path.len() - 1;
        if path.len() <= room {
            self.put(&[path]);
            return Ok(None);
        }
        let cut = path
            .iter()
            .rposition(|&c| c == b'/')
            .ok_or(libc::ENAMETOOLONG)?;
        let (dir, name) = (&path[..cut.max(1)], &path[cut + 1..]);
        // SAFETY: with_c_path passes a NUL-terminated copy of `dir`.
        let fd = with_c_path(dir, |c| unsafe {
            raw::open(c, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)
        })??;
        let mut digits = [0u8; 20];
        let n = execguard_policy::text::decimal(fd as u64, &mut digits);
        if b"/proc/self/fd/".len() + n.len() + 1 + name.len() > room {
            raw::close(fd);
            return Err(libc::ENAMETOOLONG);
        }
        self.put(&[b"/proc/self/fd/", n, b"/", name]);
        Ok(Some(fd))
    }

    fn put(&mut self, parts: &[&[u8]]) {
        let mut at = 0;
        for part in parts {
            for &b in *part {
                self.sun.sun_path[at] = b as libc::c_char;
                at += 1;
            }
        }
        self.sun.sun_path[at] = 0;
        self.len = core::mem::size_of::<libc::sa_family_t>() + at + 1;
    }
}

impl Default for Address {
    fn default() -> Self {
        Self::new()
    }
}

/// Formats `record` and sends it to the writer at `socket` ([`send_record_as`]): an allow
/// waits until the writer kept it (the exec goes ahead only then), a refusal or a notice only
/// until it is handed over.
pub fn send(socket: &[u8], record: &Record<'_>) -> Result<(), AppendError> {
    let mut buf = [0u8; RECORD_MAX];
    let n = format_record(record, &mut buf);
    let answer = match record.decision {
        Decision::Allow => Answer::Wait,
        Decision::Deny | Decision::Notice => Answer::Delivered,
    };
    send_record_as(socket, &buf[..n], answer)
}

/// Where the policy sends records: to its writer's socket when it names one, else appended
/// to its log.
pub fn deliver(
    policy: &execguard_policy::Policy<'_>,
    record: &Record<'_>,
) -> Option<Result<(), AppendError>> {
    if let Some(socket) = policy.audit_socket() {
        return Some(send(socket, record));
    }
    policy.audit_log().map(|log| append(log, record))
}
