//! `execguard exec-dirs list|add|remove`: the operator's record of the directories inside
//! `$HOME` that sessions run programs from (`~/.config/execguard/exec-dirs`), changed
//! outside sessions instead of by hand.

use anyhow::{bail, Result};
use execguard_session::exec_dirs;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// The recorded exec dirs and whether each counts now, then the directories of programs
    /// in $HOME that sessions write but never run
    List,
    /// Record DIR (inside $HOME) as an exec dir: later sessions run its programs and cannot
    /// write it
    Add { dir: PathBuf },
    /// Stop recording DIR: later sessions write it and never run what is in it
    Remove { dir: PathBuf },
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    let Some(home) = exec_dirs::home() else {
        bail!("exec_dirs_no_home: $HOME is not an absolute directory other than /; set it");
    };
    let record = exec_dirs::exec_dir_record(&home);
    match cmd {
        Command::List => {
            println!("record: {}", record.display());
            for d in exec_dirs::recorded_dirs(&home)? {
                println!("{}\t{}", d.path.display(), d.state.as_str());
            }
            for d in exec_dirs::unrecorded_dirs(&home)? {
                println!(
                    "{}\tnot recorded: written, never run (`execguard exec-dirs add {}`)",
                    d.display(),
                    d.display()
                );
            }
        }
        Command::Add { dir } => {
            let added = exec_dirs::add_recorded(&home, &dir)?;
            println!(
                "recorded {} in {}: sessions that start from now on run its programs and cannot write it",
                added.display(),
                record.display()
            );
        }
        Command::Remove { dir } => {
            if !exec_dirs::remove_recorded(&home, &dir)? {
                bail!(
                    "exec_dir_not_recorded: {} is not in {} (`execguard exec-dirs list` shows what is)",
                    dir.display(),
                    record.display()
                );
            }
            println!(
                "removed {} from {}: sessions that start from now on write it and never run its programs",
                dir.display(),
                record.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
