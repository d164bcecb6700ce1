//! GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT parsers: see `invariants::config_parameters`.
#![no_main]

#[path = "../invariants/mod.rs"]
mod invariants;

libfuzzer_sys::fuzz_target!(|data: &[u8]| invariants::config_parameters(data));
