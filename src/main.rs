//! `execguard`: run commands under the exec guard, explain its decisions, check a machine.

mod commands;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "execguard",
    version,
    about = "Exec-level defence for AI coding agent sessions"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Each subcommand's options are built only when it is the one asked for: every session's
/// start parses this line, and building the whole tree was about 3% of it.
#[derive(Subcommand)]
#[command(defer = true)]
enum Command {
    /// Run a command under the guard (exits with the command's status)
    Run(commands::run::Args),
    /// Say what the guard would decide for a command, without running it
    Check(commands::check::Args),
    /// Report what protects this process and this machine
    Doctor(commands::doctor::Args),
    /// Policy tools
    #[command(subcommand)]
    Policy(commands::policy::Command),
    /// Summarise an audit log
    Audit(commands::audit::Args),
    /// The exec dirs in $HOME sessions run programs from: list, add, remove (outside sessions)
    #[command(subcommand, name = "exec-dirs")]
    ExecDirs(commands::exec_dirs::Command),
    /// The hardened image: build it, run sessions in it, render its run profile
    #[command(subcommand)]
    Image(commands::image::Command),
    /// A workspace's home layer: what its sessions changed in $HOME, handed back on request
    #[command(subcommand)]
    Home(commands::home::Command),
    /// Reach HOST PORT through the session's proxy on stdin/stdout (the session's ssh ProxyCommand)
    Connect(commands::connect::Args),
}

fn main() -> ExitCode {
    // A closed stdout (`execguard doctor | head -1`) ends the command quietly, as it ends
    // `cat`: Rust ignores SIGPIPE, which turns the next print into a panic (an abort here).
    // SAFETY: restoring the default disposition of SIGPIPE before any thread is started.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => commands::run::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Doctor(args) => commands::doctor::run(args),
        Command::Policy(cmd) => commands::policy::run(cmd),
        Command::Audit(args) => commands::audit::run(args),
        Command::ExecDirs(cmd) => commands::exec_dirs::run(cmd),
        Command::Image(cmd) => commands::image::run(cmd),
        Command::Home(cmd) => commands::home::run(cmd),
        Command::Connect(args) => commands::connect::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("execguard: {err:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    /// clap's own checks of every subcommand, the deferred ones built too.
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
