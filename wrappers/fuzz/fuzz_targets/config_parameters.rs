//! GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT parsers: see `invariants::config_parameters`.
#![no_main]

// Each target uses part of the shared invariants.
#[allow(dead_code)]
#[path = "../invariants/mod.rs"]
mod invariants;

libfuzzer_sys::fuzz_target!(|data: &[u8]| invariants::config_parameters(data));
