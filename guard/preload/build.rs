fn main() {
    println!("cargo:rerun-if-changed=src/shim.c");
    println!("cargo:rerun-if-changed=exports.map");
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
    // rustc's own version script exports only Rust symbols; add the shim's variadic entry points.
    let map =
        std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("exports.map");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
}
