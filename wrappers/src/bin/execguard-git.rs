//! `execguard-git`, installed as `git`: see `execguard_wrappers::launch`.

fn main() {
    std::process::exit(execguard_wrappers::launch::main_git());
}
