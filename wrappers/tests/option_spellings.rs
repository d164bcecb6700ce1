//! Property tests over option spellings: every abbreviation of `--no-verify` that git
//! accepts, any bundle containing `-n`, and `_`/`-` spellings of node's refused options.

use std::ffi::OsString;
use std::path::Path;

use execguard_wrappers::git::{check_git_with, GitContext, ShimRule, StaticConfig};
use proptest::prelude::*;

fn git(args: &[String]) -> Result<(), String> {
    let reader = StaticConfig::default();
    let ctx = GitContext {
        reader: &reader,
        shim: ShimRule::default(),
        internal_child: false,
    };
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    check_git_with(&args, &[], Path::new("/"), &ctx)
        .map(|_| ())
        .map_err(|r| r.code().to_owned())
}

proptest! {
    #[test]
    fn every_abbreviation_of_no_verify_is_refused(
        sub in prop::sample::select(vec!["commit", "merge", "push", "pull", "rebase", "am"]),
        len in 4usize..=9,
        value in prop::option::of("[a-z]{0,4}"),
    ) {
        let mut opt = format!("--{}", &"no-verify"[..len]);
        if let Some(v) = value { opt.push('='); opt.push_str(&v); }
        prop_assert_eq!(git(&[sub.to_owned(), opt]), Err("hook_bypass".to_owned()));
    }

    #[test]
    fn commit_bundles_with_n_are_refused_unless_n_is_a_value(
        before in "[aqsvez]{0,3}",
        after in "[aqsvez]{0,3}",
    ) {
        let bundle = format!("-{before}n{after}");
        prop_assert_eq!(git(&["commit".into(), bundle]), Err("hook_bypass".to_owned()));
        // After a value-taking letter the rest is the value: -m<text> never means -n.
        let msg = format!("-{before}m{after}n");
        prop_assert!(git(&["commit".into(), msg]).is_ok());
    }

    #[test]
    fn rebase_exec_spellings_are_refused(len in 3usize..=4, attached in any::<bool>()) {
        let name = &"exec"[..len];
        let args = if attached {
            vec!["rebase".into(), format!("--{name}=touch x")]
        } else {
            vec!["rebase".into(), format!("--{name}"), "touch x".into()]
        };
        prop_assert_eq!(git(&args), Err("command_option".to_owned()));
    }

    #[test]
    fn node_underscore_spellings_are_refused(
        opt in prop::sample::select(vec!["experimental-loader", "env-file", "openssl-config", "inspect-brk", "env-file-if-exists"]),
        mask in any::<u8>(),
        eq in any::<bool>(),
    ) {
        let mut name = String::new();
        for (i, c) in opt.chars().enumerate() {
            name.push(if c == '-' && mask & (1 << (i % 8)) != 0 { '_' } else { c });
        }
        let args: Vec<OsString> = if eq {
            vec![format!("--{name}=x").into(), "a.js".into()]
        } else {
            vec![format!("--{name}").into(), "x".into(), "a.js".into()]
        };
        prop_assert!(execguard_wrappers::node::check_node(&args).is_err(), "{:?}", args);
    }

    #[test]
    fn config_count_agrees_with_strtoul(n in 0u32..1000, ws in "[ \t]{0,2}", plus in any::<bool>()) {
        let s = format!("{ws}{}{n}", if plus { "+" } else { "" });
        prop_assert_eq!(execguard_wrappers::git::config::parse_config_count(s.as_bytes()).ok(), Some(n as usize));
    }

    #[test]
    fn config_parameters_round_trip_gits_quoting(key in "[a-z]{1,5}\\.[a-z]{1,5}", value in "[ -~]{0,12}") {
        let q = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        let env = format!("{}={}", q(&key), q(&value));
        let parsed = execguard_wrappers::git::config::parse_config_parameters(env.as_bytes()).unwrap();
        prop_assert_eq!(parsed.len(), 1);
        prop_assert_eq!(&parsed[0].key, &key);
        prop_assert_eq!(parsed[0].value.as_deref(), Some(value.as_str()));
    }
}

#[test]
fn every_reason_code_is_documented() {
    let readme = include_str!("../README.md");
    for r in execguard_wrappers::Reason::ALL {
        assert!(
            readme.contains(&format!("| `{}` |", r.as_str())),
            "{} missing from README",
            r.as_str()
        );
    }
}
