//! The container entrypoint (PID 1). See `execguard_container::entrypoint`.

fn main() {
    let code = execguard_container::entrypoint::main(
        std::env::args_os().skip(1).collect(),
        std::env::vars_os().collect(),
    );
    std::process::exit(code);
}
