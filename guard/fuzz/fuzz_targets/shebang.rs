//! `shebang::parse` on arbitrary bytes: never panics, and whatever it returns lies inside the
//! kernel's 256-byte buffer with the kernel's invariants.
#![no_main]

use execguard_policy::shebang::{pad, parse, Shebang, BINPRM_BUF_SIZE};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let buf = pad(data);
    match parse(&buf) {
        Shebang::NotScript => assert!(!data.starts_with(b"#!")),
        Shebang::Invalid => assert!(data.starts_with(b"#!")),
        Shebang::Script {
            interpreter,
            argument,
        } => {
            assert!(data.starts_with(b"#!"));
            assert!(!interpreter.is_empty());
            assert!(interpreter.len() < BINPRM_BUF_SIZE);
            // The name stops at a blank or NUL and never holds a newline.
            assert!(!interpreter
                .iter()
                .any(|&c| c == b' ' || c == b'\t' || c == 0 || c == b'\n'));
            if let Some(a) = argument {
                assert!(!a.is_empty());
                assert!(!a.contains(&0) && !a.contains(&b'\n'));
                assert!(!a.starts_with(b" ") && !a.starts_with(b"\t"));
                assert!(!a.ends_with(b" ") && !a.ends_with(b"\t"));
            }
        }
    }
});
