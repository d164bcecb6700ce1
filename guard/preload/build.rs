fn main() {
    println!("cargo:rerun-if-changed=src/shim.c");
    println!("cargo:rerun-if-changed=exports.map");
    cc::Build::new()
        .file("src/shim.c")
        .flag_if_supported("-fno-stack-protector")
        .warnings(true)
        .link_lib_modifier("+whole-archive")
        .compile("execguard_shim");
    // rustc's own version script exports only Rust symbols; add the shim's variadic entry points.
    let map =
        std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("exports.map");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
}
