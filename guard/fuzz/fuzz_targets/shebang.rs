//! `shebang::parse` on arbitrary bytes: see `invariants::shebang`.
#![no_main]

// Each target uses part of the shared invariants.
#[allow(dead_code)]
#[path = "../invariants/mod.rs"]
mod invariants;

libfuzzer_sys::fuzz_target!(|data: &[u8]| invariants::shebang(data));
