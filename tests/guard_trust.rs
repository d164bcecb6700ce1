//! The one trust rule for control files (`execguard_os::trusted_file`: the policy file, the
//! runtime-profile state, manifests): a regular file opened without following a final
//! symlink, owned by root and writable by root alone, in directories likewise.

mod support;

use execguard_os::{trusted_file, Distrust};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use support::*;

fn verdict(path: &Path) -> Result<(), Distrust> {
    trusted_file(path.as_os_str().as_bytes()).map(|(fd, _)| {
        // SAFETY: the descriptor trusted_file opened, closed once here.
        unsafe { libc::close(fd) };
    })
}

fn mode(path: &Path, m: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(m)).unwrap();
}

#[test]
fn control_files_are_trusted_only_when_root_alone_could_have_written_them() {
    if !execguard_testkit::require_root("trusted_file: the fixtures are root-owned") {
        return;
    }
    let base = target_tmp().join(format!("trust-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("open")).unwrap();
    std::fs::create_dir_all(base.join("sticky/sub")).unwrap();
    mode(&base, 0o755);
    mode(&base.join("open"), 0o777);
    mode(&base.join("sticky"), 0o1777);
    let write = |name: &str, m: u32| {
        let p = base.join(name);
        std::fs::write(&p, b"version = 1\n").unwrap();
        mode(&p, m);
        p
    };
    let good = write("good", 0o644);
    let shared = write("shared", 0o664);
    let world = write("world", 0o666);
    let user = write("user", 0o644);
    std::os::unix::fs::chown(&user, Some(1001), Some(1001)).unwrap();
    let in_open_dir = write("open/file", 0o644);
    let under_sticky = write("sticky/sub/file", 0o644);
    let user_dir = base.join("sticky/userdir");
    std::fs::create_dir_all(&user_dir).unwrap();
    let in_user_dir = write("sticky/userdir/file", 0o644);
    std::os::unix::fs::chown(&user_dir, Some(1001), Some(1001)).unwrap();
    symlink(&good, base.join("link")).unwrap();
    let cases: &[(&Path, Result<(), Distrust>)] = &[
        (&good, Ok(())),
        (&shared, Err(Distrust::Writable)),
        (&world, Err(Distrust::Writable)),
        (&user, Err(Distrust::Writable)),
        (&in_open_dir, Err(Distrust::Replaceable)),
        (&under_sticky, Ok(())), // root-owned entries below a sticky dir stay root's
        (&in_user_dir, Err(Distrust::Replaceable)),
        (&base.join("link"), Err(Distrust::Unopenable(libc::ELOOP))),
        (&base.join("open"), Err(Distrust::NotRegular)),
        (&base.join("missing"), Err(Distrust::Missing)),
        (
            Path::new("relative"),
            Err(Distrust::Unopenable(libc::EINVAL)),
        ),
    ];
    for (path, want) in cases {
        assert_eq!(verdict(path), *want, "{}", path.display());
    }
    std::fs::remove_dir_all(&base).unwrap();
}
