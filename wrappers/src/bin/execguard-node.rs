//! `execguard-node`, installed as `node`: see `execguard_wrappers::launch`.

fn main() {
    std::process::exit(execguard_wrappers::launch::main_node());
}
