//! GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT parsers: never panic, and every entry they
//! accept re-quotes to a string that parses back to the same entry.
#![no_main]

use execguard_wrappers::git::config::{parse_config_count, parse_config_parameters};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse_config_count(data);
    if let Ok(entries) = parse_config_parameters(data) {
        let q = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        for e in entries {
            let text = match &e.value {
                Some(v) => format!("{}={}", q(&e.key), q(v)),
                None => q(&e.key),
            };
            let again = parse_config_parameters(text.as_bytes()).expect("re-quoted entry parses");
            if e.value.is_some() || !e.key.contains('=') {
                assert_eq!(again, vec![e]);
            }
        }
    }
});
