//! `execguard home diff | accept PATH | discard`: a workspace's home layer, outside any
//! session (docs/session.md). Nothing of the layer reaches the real `$HOME` unless named here.

use anyhow::Result;
use execguard_session::world;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum Command {
    /// What this workspace's sessions changed in their home layer
    Diff(Args),
    /// Hand PATH (a file, link, removal or directory of the layer) back to the real $HOME
    Accept {
        #[command(flatten)]
        args: Args,
        /// The path, absolute or relative to $HOME
        path: PathBuf,
    },
    /// Forget this workspace's home layer (its next session starts from the real $HOME)
    Discard(Args),
}

#[derive(clap::Args)]
pub struct Args {
    /// The workspace; default: the current directory
    #[arg(long)]
    workspace: Option<PathBuf>,
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Diff(args) => {
            let (home, layer) = world::home_and_layer(args.workspace.as_deref())?;
            for c in world::changes(&home, &layer.join("upper")) {
                println!("{} {}", c.kind, home.join(&c.path).display());
            }
        }
        Command::Accept { args, path } => {
            let (home, layer) = world::home_and_layer(args.workspace.as_deref())?;
            let n = world::accept_path(&home, &layer, &path)?;
            eprintln!(
                "execguard: handed back {n} entr{} of {}",
                if n == 1 { "y" } else { "ies" },
                path.display()
            );
        }
        Command::Discard(args) => {
            let (_, layer) = world::home_and_layer(args.workspace.as_deref())?;
            if world::discard(&layer)? {
                eprintln!("execguard: discarded {}", layer.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
