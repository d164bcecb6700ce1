//! What a preload library is made of: size, DT_NEEDED, exports, load-time code.

use goblin::elf::dynamic::{DT_INIT, DT_INIT_ARRAYSZ};
use goblin::elf::sym::{STB_GLOBAL, STB_WEAK, STT_FUNC};
use goblin::elf::Elf;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The libc entry points that start a program; what an exec guard must interpose.
pub const EXEC_ENTRY_POINTS: &[&str] = &[
    "execve",
    "execv",
    "execvp",
    "execvpe",
    "execl",
    "execle",
    "execlp",
    "execveat",
    "fexecve",
    "posix_spawn",
    "posix_spawnp",
    "syscall",
    "system",
    "popen",
];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LibInfo {
    pub variant: String,
    pub path: String,
    pub size_bytes: u64,
    pub soname: Option<String>,
    pub needed: Vec<String>,
    /// Defined global/weak functions in .dynsym.
    pub exported_functions: usize,
    /// Which of [`EXEC_ENTRY_POINTS`] the library defines.
    pub exec_exports: Vec<String>,
    /// Entries in .init_array plus DT_INIT: code the loader runs at load time.
    pub load_time_initialisers: usize,
}

pub fn inspect(variant: &str, path: &Path) -> Result<LibInfo, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let elf = Elf::parse(&bytes).map_err(|e| format!("parse {}: {e}", path.display()))?;
    let mut exported = 0;
    let mut exec_exports = Vec::new();
    for sym in elf.dynsyms.iter() {
        let bind = sym.st_bind();
        if sym.st_shndx == 0
            || sym.st_type() != STT_FUNC
            || (bind != STB_GLOBAL && bind != STB_WEAK)
        {
            continue;
        }
        exported += 1;
        if let Some(name) = elf.dynstrtab.get_at(sym.st_name) {
            if EXEC_ENTRY_POINTS.contains(&name) && !exec_exports.iter().any(|n| n == name) {
                exec_exports.push(name.to_string());
            }
        }
    }
    exec_exports.sort_by_key(|n| EXEC_ENTRY_POINTS.iter().position(|e| e == n));
    let mut inits = 0;
    if let Some(dynamic) = &elf.dynamic {
        let ptr = std::mem::size_of::<u64>() as u64;
        for d in &dynamic.dyns {
            if d.d_tag == DT_INIT {
                inits += 1;
            } else if d.d_tag == DT_INIT_ARRAYSZ {
                inits += (d.d_val / ptr) as usize;
            }
        }
    }
    Ok(LibInfo {
        variant: variant.to_string(),
        path: path.display().to_string(),
        size_bytes: bytes.len() as u64,
        soname: elf.soname.map(str::to_string),
        needed: elf.libraries.iter().map(|s| s.to_string()).collect(),
        exported_functions: exported,
        exec_exports,
        load_time_initialisers: inits,
    })
}
