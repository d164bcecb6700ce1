fn main() {
    println!("cargo:rerun-if-changed=src/shim.c");
    cc::Build::new()
        .file("src/shim.c")
        .flag_if_supported("-fno-stack-protector")
        // The shim defines memcpy and friends: no loop in it may be turned into such a call.
        .flag_if_supported("-fno-tree-loop-distribute-patterns")
        .flag("-fno-builtin")
        .warnings(true)
        .link_lib_modifier("+whole-archive")
        .compile("execguard_shim");
    // No C runtime start files: they would run code at load and exit in every process
    // (frame_dummy, __do_global_dtors_aux) and bind four more symbols. The library has no
    // constructors or destructors of its own.
    println!("cargo:rustc-cdylib-link-arg=-nostartfiles");
    // Constants in the code's segment (read and execute, never write): the loader maps one
    // segment fewer in every process, and a fork child that decides faults its constants in
    // with its code (a shell loop: 1-2 page faults fewer per command, about 1% of its time).
    // An option of rust-lld, the linker rustc uses for this target since 1.90 unless told
    // otherwise; with any other linker the library keeps the default layout.
    if uses_rust_lld() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--no-rosegment");
        // Two segments, code and data, and no RELRO: RELRO costs every process an mprotect,
        // one more mapping and a copy-on-write page of its own (with layout.ld below, 11-14 µs
        // of a 580 µs /bin/true here, in round 10: commit 51b0dd5, whose notes left the tree
        // in 8ac49d5; git keeps them). What it protects, the relocated vtables and the GOT,
        // guards nothing here: a program that can write its own memory can rewrite the
        // guard's state and the libc functions it calls, and issue execve itself; the
        // kernel's W^X layers stand against that, not this library.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,norelro");
        // Everything the loader and the initialiser write, on the data segment's first page.
        let layout =
            std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("layout.ld");
        println!("cargo:rerun-if-changed=layout.ld");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-T,{}", layout.display());
        // Each segment starts on a page of the file too, so that the data segment's first page
        // holds all of layout.ld's sections and the start of FirstPage (with the segment at
        // the end of the code's last page, a 1 KiB policy would cross into a second page).
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,separate-loadable-segments");
        // What runs at load in every process (the initialiser and the primitives it calls)
        // first in the code, in the page-fault window of the headers the loader reads anyway:
        // one fault instead of three at each start. Then the entry points (small trampolines
        // into the decision): a process's first exec, and every fork child's, then faults
        // in one window of code fewer. Names the shim keeps stable and hidden, and the
        // exported ones.
        let order = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("load-order.txt");
        let first = [
            "execguard_at_load",
            "__execguard_capture_initial_environment",
            "strlen",
            "memcpy",
            "memset",
            "memcmp",
            "bcmp",
            "execve",
            "execv",
            "execvp",
            "execvpe",
            "execveat",
            "fexecve",
            "fork",
            "posix_spawn",
            "posix_spawnp",
            "system",
            "popen",
            "access",
            "faccessat",
            "dlopen",
            "memfd_create",
            "syscall",
            "__execguard_syscall_entry",
            "execl",
            "__execguard_execl",
            "execle",
            "__execguard_execle",
            "execlp",
            "__execguard_execlp",
        ];
        std::fs::write(&order, first.join("\n") + "\n")
            .expect("cannot write the symbol ordering file");
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,--symbol-ordering-file={}",
            order.display()
        );
    }
}

fn uses_rust_lld() -> bool {
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    if env("TARGET") != "x86_64-unknown-linux-gnu"
        || std::env::var_os("RUSTC_LINKER").is_some()
        || env("CARGO_ENCODED_RUSTFLAGS").contains("link")
    {
        return false;
    }
    let version = std::process::Command::new(env("RUSTC"))
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    // "rustc 1.95.0 (...)"
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    version.starts_with("rustc 1.") && minor.is_some_and(|m| m >= 90)
}
