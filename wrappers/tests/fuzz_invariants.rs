//! The fuzz targets' invariants (`wrappers/fuzz/invariants`) as property tests of the normal
//! suite, and the `GIT_CONFIG_PARAMETERS` parser against the real git: what git refuses, the
//! wrapper refuses; what git accepts, the wrapper reads as the same entries.

#[path = "../fuzz/invariants/mod.rs"]
mod invariants;

use execguard_wrappers::git::config::parse_config_parameters;
use proptest::prelude::*;
use std::process::Command;

/// Pieces `GIT_CONFIG_PARAMETERS` strings are made of: quotes, `=`, dots, key characters,
/// git's escapes, blanks of every kind.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "'",
        "'",
        "'",
        "=",
        "=",
        ".",
        ".",
        "a",
        "B",
        "1",
        "-",
        "_",
        " ",
        "\t",
        "\n",
        "\r",
        "\x0b",
        "\x0c",
        "\\'",
        "\\!",
        "!",
        "x.y",
        "'a.b'",
        "'=a'",
        "''",
        "core.pager",
        "é",
    ])
}

fn parameters() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..12).prop_map(|v| v.concat())
}

/// What the real git makes of `GIT_CONFIG_PARAMETERS=text`: `None` when it refuses it, else
/// its entries as `git config -z --list` prints them (canonical key, value or none).
fn git_reads(text: &str) -> Option<Vec<(String, Option<String>)>> {
    let out = Command::new("git")
        .args(["config", "-z", "--list"])
        .current_dir("/")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", "/nonexistent")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_PARAMETERS", text)
        .output()
        .expect("git is installed");
    if !out.status.success() {
        return None;
    }
    let list = String::from_utf8_lossy(&out.stdout).into_owned();
    Some(
        list.split_terminator('\0')
            .map(|item| match item.split_once('\n') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (item.to_string(), None),
            })
            .collect(),
    )
}

/// git's canonical form of a key: section and variable lowercased, the subsection kept.
fn canonical(key: &str) -> String {
    let (Some(first), Some(last)) = (key.find('.'), key.rfind('.')) else {
        return key.to_ascii_lowercase();
    };
    format!(
        "{}{}{}",
        key[..first].to_ascii_lowercase(),
        &key[first..last],
        key[last..].to_ascii_lowercase()
    )
}

fn wrapper_reads(text: &str) -> Option<Vec<(String, Option<String>)>> {
    parse_config_parameters(text.as_bytes()).ok().map(|v| {
        v.into_iter()
            .map(|e| (canonical(&e.key), e.value))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn config_parameters_invariants(data in prop::collection::vec(any::<u8>(), 0..64)) {
        invariants::config_parameters(&data);
    }

    #[test]
    fn config_parameters_invariants_on_git_like_text(text in parameters()) {
        invariants::config_parameters(text.as_bytes());
    }

    #[test]
    fn config_spec_invariants(text in "[a-zA-Z0-9.=_ '\"\\\\!-]{0,32}") {
        invariants::config_spec(text.as_bytes());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn config_parameters_read_as_git_reads_them(text in parameters()) {
        prop_assert_eq!(wrapper_reads(&text), git_reads(&text), "GIT_CONFIG_PARAMETERS={:?}", text);
    }
}

/// Found by the fuzz target: git refuses an empty key and a key without a section.
#[test]
fn keys_git_refuses_are_refused() {
    for text in [
        "''=",
        "'=a'=",
        "''=''",
        "'=a'='b'",
        "'a'='b'",
        "'a.1b'='x'",
        "'a.b.'",
        "'a_b.c'",
        // git's isspace is not C's: a vertical tab or form feed does not separate entries.
        "'a.b'\x0b'c.d'",
        "'a.b'='x'\x0c'c.d'",
        "'a.b'=\x0b",
    ] {
        assert_eq!(git_reads(text), None, "git accepts {text:?}");
        assert!(
            parse_config_parameters(text.as_bytes()).is_err(),
            "{text:?} accepted"
        );
    }
    for text in [
        "'.a.b'",
        "' a.b =x'",
        "'a.sub sec.d'='v'",
        "'A.B'",
        "'a.b='",
    ] {
        assert_eq!(wrapper_reads(text), git_reads(text), "{text:?}");
        assert!(git_reads(text).is_some(), "git refuses {text:?}");
    }
}

/// Found by `cargo fuzz run config_parameters`: a key with `=` in its subsection and no value
/// (`'c.=y.b'=`) re-quoted in the old style splits at that `=` into another key. The
/// invariant re-quotes in the new style, which holds every entry.
#[test]
fn a_key_with_an_equals_sign_and_no_value_round_trips() {
    for text in [&b"'c.=y.b'="[..], b"'c.b\xff=\xff.b'="] {
        invariants::config_parameters(text);
    }
    assert_eq!(wrapper_reads("'c.=y.b'="), git_reads("'c.=y.b'="));
}
