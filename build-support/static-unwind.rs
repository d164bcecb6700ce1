//! Build script of the crates that ship programs (the CLI, the wrappers, the container start
//! chain): link the unwinder into each program instead of loading `libgcc_s.so.1` when it
//! starts. Every `execguard run`, and every git and node a session starts through a wrapper,
//! would otherwise map that library and run its constructor, whose CPUID queries trap to the
//! hypervisor on a virtual machine (about 0.1 ms per process here; the start-up budget is
//! 3 ms). Rust's std links with `-lgcc_s`: a linker script of that name, found first on the
//! search path, stands in for it with GCC's static `libgcc_eh.a` (what `-static-libgcc`
//! uses). Where GCC has no such archive, and in cross builds, the programs link `libgcc_s.so.1`
//! as before.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CC");
    let target = std::env::var("TARGET").unwrap_or_default();
    // Native builds only: `cc` below is the host's compiler, whose archive a cross build
    // could not link.
    if !target.ends_with("-linux-gnu") || std::env::var("HOST").ok() != Some(target) {
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let Some(archive) = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.is_absolute() && p.is_file())
    else {
        println!("cargo:warning=libgcc_eh.a not found: the programs load libgcc_s.so.1");
        return;
    };
    let dir = Path::new(&std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("unwind");
    std::fs::create_dir_all(&dir).expect("cannot create the linker script's directory");
    std::fs::write(
        dir.join("libgcc_s.so"),
        format!("INPUT({})\n", archive.display()),
    )
    .expect("cannot write the linker script");
    println!("cargo:rustc-link-search=native={}", dir.display());
}
