//! What loading the guard costs every process, most of which never exec: the loader binds
//! each imported symbol, runs each initialiser, and zeroes a data page when `.bss` shares it
//! (a copy-on-write fault). These assertions keep that cost at its minimum; the end-to-end
//! benchmark measures it.

mod support;

use goblin::elf::dynamic::{
    DT_FINI, DT_FINI_ARRAY, DT_INIT, DT_INIT_ARRAY, DT_INIT_ARRAYSZ, DT_PREINIT_ARRAY,
};
use goblin::elf::program_header::{PF_W, PF_X, PT_GNU_RELRO, PT_LOAD};
use goblin::elf::Elf;
use std::collections::BTreeSet;

fn guard_bytes() -> Vec<u8> {
    std::fs::read(&support::tools().lib).unwrap()
}

#[test]
fn binds_only_the_symbols_the_guard_cannot_do_without() {
    let bytes = guard_bytes();
    let elf = Elf::parse(&bytes).unwrap();
    let mut imports = BTreeSet::new();
    for reloc in elf.dynrelas.iter().chain(elf.pltrelocs.iter()) {
        if reloc.r_sym == 0 {
            continue;
        }
        let sym = elf.dynsyms.get(reloc.r_sym).unwrap();
        imports.insert(elf.dynstrtab.get_at(sym.st_name).unwrap().to_string());
    }
    // errno must be libc's; `environ` is the caller's environment; dl_iterate_phdr finds libc's
    // dlsym (the guard exports its own), which finds the real posix_spawn, system, popen,
    // dlopen and fork. Everything else is a raw system call or defined inside the library.
    let allowed: BTreeSet<String> = ["__errno_location", "dl_iterate_phdr", "environ"]
        .map(String::from)
        .into();
    assert!(
        imports.is_subset(&allowed),
        "the guard binds {:?} at load; only {:?} are allowed",
        imports.difference(&allowed).collect::<Vec<_>>(),
        allowed
    );
}

/// One initialiser, no finaliser: at load the guard only captures host mode's inline policy
/// from the initial environment (the program could forge it later), and nothing runs at exit.
#[test]
fn runs_one_initialiser_at_load_and_nothing_at_exit() {
    let bytes = guard_bytes();
    let elf = Elf::parse(&bytes).unwrap();
    let dynamic = elf
        .dynamic
        .as_ref()
        .expect("a shared object has a dynamic section");
    for entry in &dynamic.dyns {
        assert!(
            ![DT_INIT, DT_FINI, DT_FINI_ARRAY, DT_PREINIT_ARRAY].contains(&entry.d_tag),
            "the guard has an initialiser or finaliser other than its one init_array entry \
             (dynamic tag {:#x})",
            entry.d_tag
        );
    }
    let init_array_size = dynamic
        .dyns
        .iter()
        .find(|d| d.d_tag == DT_INIT_ARRAYSZ)
        .map(|d| d.d_val);
    assert!(
        dynamic.dyns.iter().any(|d| d.d_tag == DT_INIT_ARRAY),
        "the guard must capture the initial environment at load"
    );
    assert_eq!(init_array_size, Some(8), "exactly one initialiser");
}

#[test]
fn leaves_no_data_page_for_the_loader_to_zero() {
    let bytes = guard_bytes();
    let elf = Elf::parse(&bytes).unwrap();
    let relro: Vec<_> = elf
        .program_headers
        .iter()
        .filter(|p| p.p_type == PT_GNU_RELRO)
        .map(|p| p.p_vaddr)
        .collect();
    // The RELRO segment's padding is zeroed too, but on the page its relocations write anyway.
    for seg in elf
        .program_headers
        .iter()
        .filter(|p| p.p_type == PT_LOAD && p.p_flags & PF_W != 0 && !relro.contains(&p.p_vaddr))
    {
        assert_eq!(
            seg.p_filesz, seg.p_memsz,
            "the writable segment at {:#x} has a .bss: the loader zeroes its page in every process",
            seg.p_vaddr
        );
    }
}

#[test]
fn no_segment_is_both_writable_and_executable() {
    // The constants may share the code's segment (build.rs: one mapping fewer per process),
    // but nothing the loader maps is ever writable and executable at once.
    let bytes = guard_bytes();
    let elf = Elf::parse(&bytes).unwrap();
    for seg in elf.program_headers.iter().filter(|p| p.p_type == PT_LOAD) {
        assert!(
            seg.p_flags & PF_W == 0 || seg.p_flags & PF_X == 0,
            "the segment at {:#x} is writable and executable",
            seg.p_vaddr
        );
    }
}

#[test]
fn what_runs_at_load_lies_in_the_first_fault_window() {
    // The loader reads the headers at the start of the file; the kernel maps a fault's whole
    // 64 KiB window of a file at once. The initialiser and the primitives it calls sit there
    // too (build.rs orders them first), so loading the guard faults in one window of its code.
    // A layout of the library as it ships: a debug build's code starts past that window. The
    // shipped one has no symbol table: read a build with one, laid out the same.
    let bytes = std::fs::read(support::release_lib_with_symbols()).unwrap();
    let elf = Elf::parse(&bytes).unwrap();
    let shipped = std::fs::read(support::release_lib()).unwrap();
    let shipped = Elf::parse(&shipped).unwrap();
    let segments = |e: &Elf| -> Vec<(u64, u64, u64)> {
        e.program_headers
            .iter()
            .map(|p| (p.p_vaddr, p.p_memsz, p.p_offset))
            .collect()
    };
    assert_eq!(
        segments(&elf),
        segments(&shipped),
        "the build with symbols is laid out otherwise than the shipped one"
    );
    if !laid_out_by_rust_lld(&elf) {
        execguard_testkit::skip("the load-order layout: the library was not linked by rust-lld");
        return;
    }
    for name in [
        "execguard_at_load",
        "__execguard_capture_initial_environment",
        "strlen",
        "memcpy",
    ] {
        let sym = elf
            .syms
            .iter()
            .find(|s| elf.strtab.get_at(s.st_name) == Some(name))
            .unwrap_or_else(|| panic!("{name} is not in the symbol table"));
        assert!(
            sym.st_value + sym.st_size <= 64 * 1024,
            "{name} at {:#x} lies outside the first 64 KiB",
            sym.st_value
        );
    }
}

#[test]
fn leaves_no_hole_for_the_loader_to_protect() {
    // A gap between two segments' pages is a mapping the loader makes PROT_NONE in every
    // process (build.rs: `-z separate-loadable-segments` keeps lld from leaving one before
    // the page-aligned data).
    let bytes = std::fs::read(support::release_lib()).unwrap();
    let elf = Elf::parse(&bytes).unwrap();
    let page = |a: u64| a & !0xfff;
    let mut loads: Vec<_> = elf
        .program_headers
        .iter()
        .filter(|p| p.p_type == PT_LOAD)
        .collect();
    loads.sort_by_key(|p| p.p_vaddr);
    // ld.so's own test: a segment's mapping ends with its file bytes' last page (a zeroed
    // tail beyond it is a mapping of its own).
    for pair in loads.windows(2) {
        let end = page(pair[0].p_vaddr + pair[0].p_filesz + 0xfff);
        assert_eq!(
            end,
            page(pair[1].p_vaddr),
            "a hole of {:#x} bytes lies between the segments at {:#x} and {:#x}",
            page(pair[1].p_vaddr).saturating_sub(end),
            pair[0].p_vaddr,
            pair[1].p_vaddr
        );
    }
}

#[test]
fn writes_one_data_page_at_load() {
    // What the loader writes (the relocations, `.dynamic`'s entries it adjusts) and where the
    // initialiser captures a session's policy lie on one page: one copy-on-write fault per
    // process (layout.ld). No RELRO: it would cost every process an mprotect and a page of its
    // own (build.rs says why it protects nothing here).
    let bytes = std::fs::read(support::release_lib()).unwrap();
    let elf = Elf::parse(&bytes).unwrap();
    if !laid_out_by_rust_lld(&elf) {
        execguard_testkit::skip("the data layout: the library was not linked by rust-lld");
        return;
    }
    assert!(
        !elf.program_headers.iter().any(|p| p.p_type == PT_GNU_RELRO),
        "the library has a RELRO segment: the loader mprotects it in every process"
    );
    let page = |a: u64| a & !0xfff;
    let section = |name: &str| {
        elf.section_headers
            .iter()
            .find(|h| elf.shdr_strtab.get_at(h.sh_name) == Some(name))
            .unwrap_or_else(|| panic!("no {name} section"))
    };
    // state::FIRST, alone in its output section (layout.ld; the library is stripped).
    let first = section(".data.first").sh_addr;
    let dynamic = section(".dynamic");
    let one_page = page(first);
    let mut written: Vec<(String, u64)> = elf
        .dynrelas
        .iter()
        .chain(elf.pltrelocs.iter())
        .map(|r| (format!("the relocation at {:#x}", r.r_offset), r.r_offset))
        .collect();
    written.push((".dynamic's start".into(), dynamic.sh_addr));
    written.push((
        ".dynamic's end".into(),
        dynamic.sh_addr + dynamic.sh_size - 1,
    ));
    // The cache state and the capture's lengths, then a 1.5 KiB policy with its prefix.
    written.push(("a 1.5 KiB captured policy".into(), first + 64 + 1536));
    assert!(
        written.len() > 3,
        "the library has no relocations: nothing was checked"
    );
    for (what, at) in written {
        assert_eq!(
            page(at),
            one_page,
            "{what} lies at {at:#x}, off state::FIRST's page {one_page:#x}"
        );
    }
}

#[test]
fn the_shipped_library_is_at_most_160_kb() {
    // Issue 31's budget for the file every guarded process maps (what it is made of:
    // benches/results/library-size.md). The size of rust-lld's layout, the one that ships.
    let lib = support::release_lib();
    let bytes = std::fs::read(lib).unwrap();
    if !laid_out_by_rust_lld(&Elf::parse(&bytes).unwrap()) {
        execguard_testkit::skip("the library's size: the library was not linked by rust-lld");
        return;
    }
    assert!(
        bytes.len() <= 160_000,
        "{} is {} bytes, over the 160 KB budget",
        lib.display(),
        bytes.len()
    );
}

/// Whether build.rs's layout applies: rust-lld links the code from the file's start.
fn laid_out_by_rust_lld(elf: &Elf) -> bool {
    elf.program_headers
        .iter()
        .any(|p| p.p_type == PT_LOAD && p.p_flags & PF_X != 0 && p.p_offset == 0)
}

/// The library links with GNU ld too: the system linker of aarch64 builds and of any build that
/// names its own, where build.rs's layout options do not apply. Every libc name the shim
/// defines is exported (from Rust, `exports.rs`: GNU ld refuses a second version script) and
/// guards: a workspace ELF is refused through each, a system one runs.
#[test]
fn links_with_gnu_ld_and_guards_through_the_shim_entry_points() {
    let Some(lib) = gnu_ld_build() else {
        return;
    };
    let bytes = std::fs::read(&lib).unwrap();
    let elf = Elf::parse(&bytes).unwrap();
    assert!(
        elf.program_headers.iter().any(|p| p.p_type == PT_GNU_RELRO),
        "not GNU ld's default layout: did build.rs apply rust-lld's options?"
    );
    let exported: BTreeSet<&str> = elf
        .dynsyms
        .iter()
        .filter(|s| s.st_shndx != 0)
        .filter_map(|s| elf.dynstrtab.get_at(s.st_name))
        .collect();
    for name in [
        "execl", "execle", "execlp", "syscall", "dlsym", "dlvsym", "execve",
    ] {
        assert!(exported.contains(name), "{name} is not exported");
    }
    let f = support::Fixture::new("gnu-ld");
    let probe = |entry: &str, target: &std::path::Path| {
        support::run(
            f.guarded(&f.strict(), &support::tools().probe)
                .env("LD_PRELOAD", &lib)
                .args([std::ffi::OsStr::new(entry), target.as_os_str()]),
        )
    };
    for entry in ["execl", "execle", "execlp", "syscall-execve", "execve"] {
        probe(entry, &f.payload).assert_denied("mutable_native");
    }
    probe("execl", &f.sys_argv).assert_ran();
}

/// `cargo build -p execguard-preload` linked by GNU ld (`-fuse-ld=bfd`), in a target directory
/// of its own; `None` (a loud skip) where there is no GNU ld.
fn gnu_ld_build() -> Option<std::path::PathBuf> {
    use std::process::Command;
    let has_bfd = Command::new("ld.bfd")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_bfd {
        execguard_testkit::skip("linking with GNU ld: no ld.bfd (Debian package binutils)");
        return None;
    }
    let target = support::target_tmp().join("gnu-ld");
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--release", "-p", "execguard-preload"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env("RUSTFLAGS", "-C link-arg=-fuse-ld=bfd")
        .status()
        .expect("cannot run cargo");
    assert!(status.success(), "the guard does not link with GNU ld");
    Some(target.join("release/libexecguard.so"))
}
