//! The provider wrapper. See `execguard_container::provider_main`.

fn main() {
    let code = execguard_container::provider_main::main(
        std::env::args_os().skip(1).collect(),
        std::env::vars_os().collect(),
    );
    std::process::exit(code);
}
