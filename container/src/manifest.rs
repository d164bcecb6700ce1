//! The control-plane manifest: sha256 of every file that decides what the guard enforces.
//!
//! Format (the `sha256sum` format, so it can also be checked by hand):
//! `<64 lower-case hex>  <absolute image path>\n` per file, sorted by path, no duplicates.
//!
//! The image build calls [`generate_manifest`] (or `execguard-entrypoint --generate-manifest`) and
//! records the manifest's own sha256 as an image label; the host launcher passes that digest in
//! `EXECGUARD_MANIFEST_SHA256`, so the manifest is not self-attesting. At start,
//! [`verify_manifest`] refuses when the manifest's digest differs, when it is not root-owned or is
//! writable by others, when a required file is not listed (the guard library, `/etc/ld.so.preload`,
//! every library `ld.so.preload` names, both start-chain binaries), or when any listed file is
//! missing, not a regular file, reached through a symlink, or hashes differently.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::paths::Paths;
use crate::sys;

const MANIFEST_LIMIT: usize = 1 << 20;

/// Lower-case hex encoding.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// Lower-case hex sha256 of a byte string.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Failure to generate or verify the manifest. `code()` is stable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    #[error("failed to read the manifest {path}: {source}")]
    ManifestUnreadable { path: PathBuf, source: io::Error },
    #[error("the manifest {path} is not a root-owned regular file closed to group/other writes")]
    ManifestUntrusted { path: PathBuf },
    #[error("the manifest's sha256 {actual} differs from the pinned {expected}")]
    DigestMismatch { expected: String, actual: String },
    #[error("the manifest is malformed at line {line}")]
    Malformed { line: usize },
    #[error("the manifest does not list {path}")]
    Incomplete { path: PathBuf },
    #[error("failed to read control file {path}: {source}")]
    FileUnreadable { path: PathBuf, source: io::Error },
    #[error("control file {path} is missing")]
    FileMissing { path: PathBuf },
    #[error("control file {path} is not a regular file")]
    NotRegular { path: PathBuf },
    #[error("control file {path} was modified (sha256 {actual}, manifest {expected})")]
    Modified {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("path {path} cannot appear in a manifest")]
    BadPath { path: PathBuf },
}

impl ManifestError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::ManifestUnreadable { .. } => "manifest_unreadable",
            Self::ManifestUntrusted { .. } => "manifest_untrusted",
            Self::DigestMismatch { .. } => "manifest_digest_mismatch",
            Self::Malformed { .. } => "manifest_malformed",
            Self::Incomplete { .. } => "manifest_incomplete",
            Self::FileUnreadable { .. } => "control_file_unreadable",
            Self::FileMissing { .. } => "control_file_missing",
            Self::NotRegular { .. } => "control_file_not_regular",
            Self::Modified { .. } => "control_file_modified",
            Self::BadPath { .. } => "manifest_bad_path",
        }
    }
}

/// A parsed manifest: image path → sha256 hex.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    pub entries: BTreeMap<PathBuf, String>,
}

fn valid_image_path(p: &Path) -> bool {
    p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && !p.as_os_str().as_encoded_bytes().contains(&b'\n')
        && p != Path::new("/")
}

impl Manifest {
    /// Strict parser: every line `<64 hex>  <absolute path>`, sorted, unique.
    pub fn parse(text: &str) -> Result<Self, ManifestError> {
        let mut entries = BTreeMap::new();
        let mut last: Option<PathBuf> = None;
        for (i, line) in text.split_terminator('\n').enumerate() {
            let bad = || ManifestError::Malformed { line: i + 1 };
            let (digest, path) = line.split_once("  ").ok_or_else(bad)?;
            if digest.len() != 64
                || !digest
                    .bytes()
                    .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
            {
                return Err(bad());
            }
            let path = PathBuf::from(path);
            if !valid_image_path(&path) || last.as_ref().is_some_and(|l| *l >= path) {
                return Err(bad());
            }
            last = Some(path.clone());
            entries.insert(path, digest.to_owned());
        }
        if !text.is_empty() && !text.ends_with('\n') {
            return Err(ManifestError::Malformed {
                line: text.lines().count(),
            });
        }
        Ok(Self { entries })
    }

    /// The canonical text form.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for (path, digest) in &self.entries {
            s.push_str(digest);
            s.push_str("  ");
            s.push_str(&path.to_string_lossy());
            s.push('\n');
        }
        s
    }
}

/// Hashes a control file reached without following any symlink.
fn hash_file(host_path: &Path, image_path: &Path) -> Result<String, ManifestError> {
    let fd =
        sys::open_nofollow(host_path, libc::O_RDONLY | libc::O_NONBLOCK, 0).map_err(|source| {
            if source.raw_os_error() == Some(libc::ENOENT) {
                ManifestError::FileMissing {
                    path: image_path.to_path_buf(),
                }
            } else {
                ManifestError::FileUnreadable {
                    path: image_path.to_path_buf(),
                    source,
                }
            }
        })?;
    let meta = sys::fstat(&fd).map_err(|source| ManifestError::FileUnreadable {
        path: image_path.to_path_buf(),
        source,
    })?;
    if !meta.file_type().is_file() {
        return Err(ManifestError::NotRegular {
            path: image_path.to_path_buf(),
        });
    }
    let mut file = std::fs::File::from(fd);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|source| ManifestError::FileUnreadable {
                path: image_path.to_path_buf(),
                source,
            })?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Builds the manifest for `image_paths` (absolute, image view) as found below `paths.root`.
/// The image build calls this after installing every control-plane file.
pub fn generate_manifest(
    paths: &Paths,
    image_paths: &[PathBuf],
) -> Result<Manifest, ManifestError> {
    let mut manifest = Manifest::default();
    for p in image_paths {
        if !valid_image_path(p) {
            return Err(ManifestError::BadPath { path: p.clone() });
        }
        let digest = hash_file(&paths.host_path(p), p)?;
        manifest.entries.insert(p.clone(), digest);
    }
    Ok(manifest)
}

/// Libraries named by `ld.so.preload` (whitespace or colon separated, as the loader reads it).
pub fn preload_libraries(text: &str) -> Vec<PathBuf> {
    text.split(|c: char| c.is_whitespace() || c == ':')
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// What verification covered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestReport {
    pub files_verified: usize,
}

/// Verifies the control plane against the manifest pinned by `expected_sha256`.
pub fn verify_manifest(
    paths: &Paths,
    expected_sha256: &str,
) -> Result<ManifestReport, ManifestError> {
    let mpath = paths.image_path(&paths.manifest);
    let fd = sys::open_nofollow(&paths.manifest, libc::O_RDONLY | libc::O_NONBLOCK, 0).map_err(
        |source| ManifestError::ManifestUnreadable {
            path: mpath.clone(),
            source,
        },
    )?;
    let meta = sys::fstat(&fd).map_err(|source| ManifestError::ManifestUnreadable {
        path: mpath.clone(),
        source,
    })?;
    if !meta.file_type().is_file() || !sys::is_root_owned_not_shared(&meta) {
        return Err(ManifestError::ManifestUntrusted { path: mpath });
    }
    let bytes = sys::read_limited(fd, MANIFEST_LIMIT).map_err(|source| {
        ManifestError::ManifestUnreadable {
            path: mpath.clone(),
            source,
        }
    })?;
    let actual = sha256_hex(&bytes);
    if actual != expected_sha256 {
        return Err(ManifestError::DigestMismatch {
            expected: expected_sha256.to_owned(),
            actual,
        });
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| ManifestError::Malformed { line: 0 })?;
    let manifest = Manifest::parse(text)?;

    // Every required file must be listed, and verified first.
    let mut required: Vec<PathBuf> = paths
        .required_control_files()
        .iter()
        .map(|p| paths.image_path(p))
        .collect();
    for p in &required {
        if !manifest.entries.contains_key(p) {
            return Err(ManifestError::Incomplete { path: p.clone() });
        }
    }
    // The preload file is verified below; the libraries it names must be listed too, so that a
    // verified ld.so.preload cannot point at an unverified library.
    let preload_image = paths.image_path(&paths.ld_so_preload());
    let preload_digest = hash_file(&paths.ld_so_preload(), &preload_image)?;
    if manifest.entries.get(&preload_image) != Some(&preload_digest) {
        return Err(ManifestError::Modified {
            path: preload_image,
            expected: manifest
                .entries
                .get(&paths.image_path(&paths.ld_so_preload()))
                .cloned()
                .unwrap_or_default(),
            actual: preload_digest,
        });
    }
    let preload_fd =
        sys::open_nofollow(&paths.ld_so_preload(), libc::O_RDONLY | libc::O_NONBLOCK, 0).map_err(
            |source| ManifestError::FileUnreadable {
                path: preload_image.clone(),
                source,
            },
        )?;
    let preload = sys::read_limited(preload_fd, MANIFEST_LIMIT).map_err(|source| {
        ManifestError::FileUnreadable {
            path: preload_image.clone(),
            source,
        }
    })?;
    for lib in preload_libraries(&String::from_utf8_lossy(&preload)) {
        if !manifest.entries.contains_key(&lib) {
            return Err(ManifestError::Incomplete { path: lib });
        }
        required.push(lib);
    }

    for (path, expected) in &manifest.entries {
        let actual = hash_file(&paths.host_path(path), path)?;
        if actual != *expected {
            return Err(ManifestError::Modified {
                path: path.clone(),
                expected: expected.clone(),
                actual,
            });
        }
    }
    Ok(ManifestReport {
        files_verified: manifest.entries.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn image(tag: &str) -> (Paths, String) {
        let d =
            std::env::temp_dir().join(format!("execguard-manifest-{tag}-{}", std::process::id()));
        let _ignored = std::fs::remove_dir_all(&d);
        let paths = Paths::under(&d);
        std::fs::create_dir_all(&paths.etc).unwrap();
        std::fs::create_dir_all(&paths.libexec).unwrap();
        std::fs::create_dir_all(paths.guard_library.parent().unwrap()).unwrap();
        std::fs::write(paths.ld_so_preload(), "/usr/local/lib/libexecguard.so\n").unwrap();
        std::fs::write(&paths.guard_library, b"\x7fELF guard").unwrap();
        std::fs::write(paths.entrypoint_bin(), b"entrypoint").unwrap();
        std::fs::write(paths.provider_bin(), b"provider").unwrap();
        std::fs::write(paths.etc.join("policy"), b"policy").unwrap();
        let listed: Vec<PathBuf> = paths
            .required_control_files()
            .iter()
            .chain([paths.etc.join("policy")].iter())
            .map(|p| paths.image_path(p))
            .collect();
        let text = generate_manifest(&paths, &listed).unwrap().render();
        std::fs::write(&paths.manifest, &text).unwrap();
        std::fs::set_permissions(&paths.manifest, std::fs::Permissions::from_mode(0o444)).unwrap();
        let digest = sha256_hex(text.as_bytes());
        (paths, digest)
    }

    #[test]
    fn a_generated_manifest_verifies_and_round_trips() {
        let (paths, digest) = image("ok");
        let report = verify_manifest(&paths, &digest).unwrap();
        assert_eq!(report.files_verified, 5);
        let text = std::fs::read_to_string(&paths.manifest).unwrap();
        assert_eq!(Manifest::parse(&text).unwrap().render(), text);
        assert!(text.contains("  /etc/ld.so.preload\n"));
        std::fs::remove_dir_all(&paths.root).unwrap();
    }

    #[test]
    fn tampering_is_refused_with_a_stable_code() {
        type Tamper = fn(&Paths);
        let cases: [(&str, Tamper, &str); 7] = [
            (
                "guard modified",
                |p| std::fs::write(&p.guard_library, b"evil").unwrap(),
                "control_file_modified",
            ),
            (
                "policy modified",
                |p| std::fs::write(p.etc.join("policy"), b"allow all").unwrap(),
                "control_file_modified",
            ),
            (
                "preload emptied",
                |p| std::fs::write(p.ld_so_preload(), b"").unwrap(),
                "control_file_modified",
            ),
            (
                "provider removed",
                |p| std::fs::remove_file(p.provider_bin()).unwrap(),
                "control_file_missing",
            ),
            (
                "guard replaced by a symlink",
                |p| {
                    std::fs::rename(&p.guard_library, p.guard_library.with_extension("real"))
                        .unwrap();
                    std::os::unix::fs::symlink(
                        p.guard_library.with_extension("real"),
                        &p.guard_library,
                    )
                    .unwrap();
                },
                "control_file_unreadable",
            ),
            (
                "manifest rewritten",
                |p| {
                    std::fs::set_permissions(&p.manifest, std::fs::Permissions::from_mode(0o644))
                        .unwrap();
                    std::fs::write(&p.manifest, b"").unwrap();
                },
                "manifest_digest_mismatch",
            ),
            (
                "manifest group-writable",
                |p| {
                    std::fs::set_permissions(&p.manifest, std::fs::Permissions::from_mode(0o664))
                        .unwrap()
                },
                "manifest_untrusted",
            ),
        ];
        for (i, (name, tamper, code)) in cases.into_iter().enumerate() {
            let (paths, digest) = image(&format!("tamper{i}"));
            tamper(&paths);
            let err = verify_manifest(&paths, &digest).expect_err(name);
            assert_eq!(err.code(), code, "{name}: {err}");
            std::fs::remove_dir_all(&paths.root).unwrap();
        }
    }

    #[test]
    fn an_incomplete_manifest_is_refused() {
        let (paths, _) = image("incomplete");
        // A manifest that omits the provider binary, pinned correctly, is still refused.
        let listed = [
            paths.ld_so_preload(),
            paths.guard_library.clone(),
            paths.entrypoint_bin(),
        ];
        let listed: Vec<PathBuf> = listed.iter().map(|p| paths.image_path(p)).collect();
        let text = generate_manifest(&paths, &listed).unwrap().render();
        std::fs::set_permissions(&paths.manifest, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&paths.manifest, &text).unwrap();
        let err = verify_manifest(&paths, &sha256_hex(text.as_bytes())).unwrap_err();
        assert_eq!(err.code(), "manifest_incomplete");
        // ld.so.preload naming an unlisted library is refused too.
        std::fs::write(paths.ld_so_preload(), "/tmp/evil.so\n").unwrap();
        let all: Vec<PathBuf> = paths
            .required_control_files()
            .iter()
            .map(|p| paths.image_path(p))
            .collect();
        let text = generate_manifest(&paths, &all).unwrap().render();
        std::fs::write(&paths.manifest, &text).unwrap();
        let err = verify_manifest(&paths, &sha256_hex(text.as_bytes())).unwrap_err();
        assert_eq!(err.code(), "manifest_incomplete");
        assert!(err.to_string().contains("/tmp/evil.so"));
        std::fs::remove_dir_all(&paths.root).unwrap();
    }

    #[test]
    fn the_parser_is_strict() {
        let d = "a".repeat(64);
        let good = format!("{d}  /a\n{d}  /b\n");
        assert_eq!(Manifest::parse(&good).unwrap().entries.len(), 2);
        for bad in [
            format!("{d}  /b\n{d}  /a\n"),
            format!("{d}  /a\n{d}  /a\n"),
            format!("{d} /a\n"),
            format!("{d}  a\n"),
            format!("{d}  /a/../b\n"),
            format!("{}  /a\n", "A".repeat(64)),
            format!("{}  /a\n", "a".repeat(63)),
            format!("{d}  /a"),
        ] {
            assert!(Manifest::parse(&bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            preload_libraries("/a.so /b.so:/c.so\n"),
            vec![PathBuf::from("/a.so"), "/b.so".into(), "/c.so".into()]
        );
    }
}
