//! The wrapper fuzz targets' invariants, in one place: `cargo fuzz` runs them
//! (`fuzz_targets/*.rs`) and so does the normal test suite (`wrappers/tests/fuzz_invariants.rs`),
//! so they cannot rot unseen.

use execguard_wrappers::git::config::{
    classify_key, parse_config_count, parse_config_env_spec, parse_config_parameters,
    parse_config_spec, split_cmdline,
};

/// `GIT_CONFIG_PARAMETERS` and `GIT_CONFIG_COUNT` parsers: never panic, and every entry they
/// accept re-quotes to a string that parses back to the same entry.
pub fn config_parameters(data: &[u8]) {
    let _ = parse_config_count(data);
    if let Ok(entries) = parse_config_parameters(data) {
        let q = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        for e in entries {
            assert!(!e.key.is_empty(), "an empty key was accepted: {data:?}");
            // The new style (`'key'='value'`, `'key'=` for the implicit boolean) says every
            // entry: the old one cannot hold a key with `=` in its subsection.
            let text = match &e.value {
                Some(v) => format!("{}={}", q(&e.key), q(v)),
                None => format!("{}=", q(&e.key)),
            };
            let again = parse_config_parameters(text.as_bytes())
                .unwrap_or_else(|err| panic!("re-quoted entry {text:?} does not parse: {err}"));
            assert_eq!(again, vec![e]);
        }
    }
}

/// `-c` / `--config-env` specs and the key classifier: never panic; a key the classifier
/// refuses stays refused whatever the case of its section and variable.
pub fn config_spec(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_config_env_spec(s);
    let _ = split_cmdline(s);
    if let Ok(e) = parse_config_spec(s) {
        let verdict = classify_key(&e.key, e.value.as_deref(), "-c").is_err();
        let upper = e.key.to_ascii_uppercase();
        if !e.key.contains('.') || e.key.find('.') == e.key.rfind('.') {
            assert_eq!(
                classify_key(&upper, e.value.as_deref(), "-c").is_err(),
                verdict
            );
        }
    }
}
