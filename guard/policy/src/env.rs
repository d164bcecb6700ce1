//! The environment variables glibc treats as unsafe for setuid programs (its
//! `UNSECURE_ENVVARS`, which the loader removes from a setuid program's environment), each with
//! what it makes glibc do. The ones that make glibc map code from a file they name are checked
//! against the mutable roots at every exec; the rest name data (or output) files, never code.

/// What glibc does with a variable's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvUse {
    /// A list of shared objects the loader maps (split at `:` and blanks; names without `/`
    /// are searched in library directories, which are checked on their own).
    Objects,
    /// A list of directories code is loaded from (split at `:` and `;`; an empty entry is the
    /// current directory).
    CodeDirs,
    /// Data, settings or output only: why, in a few words.
    NoCode(&'static str),
}

/// glibc 2.36's `UNSECURE_ENVVARS` (sysdeps/generic/unsecvars.h), in its order. A test reads
/// the installed loader's own copy of the list and checks that this table has every entry.
pub const UNSECURE_ENVVARS: [(&[u8], EnvUse); 22] = [
    (b"GCONV_PATH", EnvUse::CodeDirs), // iconv modules, dlopen'ed from these directories
    (
        b"GETCONF_DIR",
        EnvUse::NoCode("getconf execs a program from it: that exec is decided"),
    ),
    (b"HOSTALIASES", EnvUse::NoCode("resolver data")),
    (b"LD_AUDIT", EnvUse::Objects),
    (b"LD_DEBUG", EnvUse::NoCode("loader diagnostics")),
    (
        b"LD_DEBUG_OUTPUT",
        EnvUse::NoCode("loader diagnostics file"),
    ),
    (b"LD_DYNAMIC_WEAK", EnvUse::NoCode("symbol binding rule")),
    (
        b"LD_HWCAP_MASK",
        EnvUse::NoCode("selects subdirectories of checked directories"),
    ),
    (b"LD_LIBRARY_PATH", EnvUse::CodeDirs),
    (b"LD_ORIGIN_PATH", EnvUse::CodeDirs), // stands in for $ORIGIN when /proc is missing
    (b"LD_PRELOAD", EnvUse::Objects),
    (
        b"LD_PROFILE",
        EnvUse::NoCode("names an object already loaded"),
    ),
    (b"LD_SHOW_AUXV", EnvUse::NoCode("loader diagnostics")),
    (b"LOCALDOMAIN", EnvUse::NoCode("resolver data")),
    (b"LOCPATH", EnvUse::NoCode("locale data, mapped read-only")),
    (b"MALLOC_TRACE", EnvUse::NoCode("mtrace output file")),
    (b"NIS_PATH", EnvUse::NoCode("NIS+ data")),
    (
        b"NLSPATH",
        EnvUse::NoCode("message catalogs, mapped read-only"),
    ),
    (b"RESOLV_HOST_CONF", EnvUse::NoCode("resolver data")),
    (b"RES_OPTIONS", EnvUse::NoCode("resolver data")),
    (b"TMPDIR", EnvUse::NoCode("temporary files")),
    (b"TZDIR", EnvUse::NoCode("time zone data")),
];

/// How glibc uses `NAME=value` (`entry`), if the variable makes it map code: the use and the
/// value. Cheap for the common entry: the code variables start with `G` or `L`.
pub fn code_use(entry: &[u8]) -> Option<(EnvUse, &[u8])> {
    if !matches!(entry.first(), Some(b'G' | b'L')) {
        return None;
    }
    let eq = entry.iter().position(|&c| c == b'=')?;
    let (name, value) = (&entry[..eq], &entry[eq + 1..]);
    code_variable(name).map(|u| (u, value))
}

/// The code variables of [`UNSECURE_ENVVARS`] (a test checks that the two agree), as a match:
/// searching the table would link it into the guard, 44 pointers the loader relocates in
/// every process that loads it.
fn code_variable(name: &[u8]) -> Option<EnvUse> {
    match name {
        b"LD_PRELOAD" | b"LD_AUDIT" => Some(EnvUse::Objects),
        b"LD_LIBRARY_PATH" | b"GCONV_PATH" | b"LD_ORIGIN_PATH" => Some(EnvUse::CodeDirs),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_variables_are_the_tables() {
        for (name, table_use) in UNSECURE_ENVVARS {
            let code = (!matches!(table_use, EnvUse::NoCode(_))).then_some(table_use);
            assert_eq!(
                code_variable(name),
                code,
                "{}",
                String::from_utf8_lossy(name)
            );
        }
    }

    #[test]
    fn only_code_variables_are_checked() {
        let cases: &[(&[u8], Option<EnvUse>)] = &[
            (b"LD_PRELOAD=/x.so", Some(EnvUse::Objects)),
            (b"LD_AUDIT=/x.so", Some(EnvUse::Objects)),
            (b"LD_LIBRARY_PATH=/ws", Some(EnvUse::CodeDirs)),
            (b"GCONV_PATH=/ws", Some(EnvUse::CodeDirs)),
            (b"GCONV_PATH=", Some(EnvUse::CodeDirs)),
            (b"LD_ORIGIN_PATH=/ws", Some(EnvUse::CodeDirs)),
            (b"LOCPATH=/ws", None),
            (b"TMPDIR=/tmp", None),
            (b"GCONV_PATHX=/ws", None),
            (b"LD_PRELOAD", None),
            (b"PATH=/ws", None),
            (b"", None),
        ];
        for &(entry, want) in cases {
            assert_eq!(code_use(entry).map(|(u, _)| u), want, "{entry:?}");
        }
        assert_eq!(
            code_use(b"GCONV_PATH=/a:/b").map(|(_, v)| v),
            Some(&b"/a:/b"[..])
        );
    }
}
