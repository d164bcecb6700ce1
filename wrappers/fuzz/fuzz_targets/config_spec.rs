//! `-c` / `--config-env` specs and the key classifier: never panic; a key the classifier
//! refuses stays refused whatever the case of its section and variable.
#![no_main]

use execguard_wrappers::git::config::{classify_key, parse_config_env_spec, parse_config_spec, split_cmdline};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = parse_config_env_spec(s);
    let _ = split_cmdline(s);
    if let Ok(e) = parse_config_spec(s) {
        let verdict = classify_key(&e.key, e.value.as_deref(), "-c").is_err();
        let upper = e.key.to_ascii_uppercase();
        if !e.key.contains('.') || e.key.find('.') == e.key.rfind('.') {
            assert_eq!(classify_key(&upper, e.value.as_deref(), "-c").is_err(), verdict);
        }
    }
});
