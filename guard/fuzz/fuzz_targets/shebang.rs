//! `shebang::parse` on arbitrary bytes: see `invariants::shebang`.
#![no_main]

#[path = "../invariants/mod.rs"]
mod invariants;

libfuzzer_sys::fuzz_target!(|data: &[u8]| invariants::shebang(data));
