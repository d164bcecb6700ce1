//! The node wrapper's decision, following node's own option parser: `_` and `-` are the same
//! in option names, `--opt=value` and `--opt value` for options that take values, the `-pe`
//! style short bundles, `--` ending node's options, and the first non-option being the
//! script (everything after it belongs to the script).
//!
//! Threat (rule 4 of `wrappers/README.md`): code hidden inside an approved invocation, loaded
//! before the code the command line shows. Inline code (`-e`, `-p`, a script on stdin, the
//! REPL) is code in plain sight, as a script file is: allowed.

use std::ffi::OsString;

use crate::refusal::{Reason, Refusal};

/// node options that take a value (node 20 `--help`, plus newer ones). An option missing
/// here would have its value read as the script name, which ends option parsing early; so
/// the list errs towards including names.
const VALUE_OPTIONS: &[&str] = &[
    "allow-fs-read",
    "allow-fs-write",
    "build-snapshot-config",
    "conditions",
    "cpu-prof-dir",
    "cpu-prof-interval",
    "cpu-prof-name",
    "diagnostic-dir",
    "disable-proto",
    "disable-warning",
    "dns-result-order",
    "env-file",
    "env-file-if-exists",
    "eval",
    "experimental-default-type",
    "experimental-loader",
    "loader",
    "experimental-policy",
    "experimental-sea-config",
    "heap-prof-dir",
    "heap-prof-interval",
    "heap-prof-name",
    "heapsnapshot-near-heap-limit",
    "heapsnapshot-signal",
    "icu-data-dir",
    "import",
    "input-type",
    "inspect-publish-uid",
    "max-http-header-size",
    "network-family-autoselection-attempt-timeout",
    "openssl-config",
    "policy-integrity",
    "print",
    "redirect-warnings",
    "report-directory",
    "report-dir",
    "report-filename",
    "report-signal",
    "require",
    "secure-heap",
    "secure-heap-min",
    "snapshot-blob",
    "test-concurrency",
    "test-name-pattern",
    "test-skip-pattern",
    "test-reporter",
    "test-reporter-destination",
    "test-shard",
    "test-timeout",
    "title",
    "tls-cipher-list",
    "tls-keylog",
    "trace-event-categories",
    "trace-event-file-pattern",
    "trace-require-module",
    "unhandled-rejections",
    "use-largepages",
    "v8-pool-size",
    "watch-path",
    "debug-port",
    "inspect-port",
    "experimental-config-file",
    "run",
    "stack-trace-limit",
    "max-old-space-size",
    "max-semi-space-size",
    "localstorage-file",
    "experimental-sea-config",
    "env-file",
    "test-coverage-include",
    "test-coverage-exclude",
];

/// Built-in test reporters; any other value is a module node would load.
const BUILTIN_REPORTERS: &[&str] = &["spec", "tap", "dot", "junit", "lcov"];

fn classify_long(name: &str, value: Option<&str>) -> Option<(Reason, &'static str)> {
    use Reason::*;
    Some(match name {
        "require" | "import" | "loader" | "experimental-loader" => {
            (NodeCodeLoading, "loads code before the script")
        }
        "env-file" | "env-file-if-exists" => (
            NodeCodeLoading,
            "loads environment (NODE_OPTIONS) from a file",
        ),
        "experimental-config-file" | "experimental-default-config-file" => {
            (NodeCodeLoading, "loads node options from a file")
        }
        "openssl-config" => (
            NodeCodeLoading,
            "loads an OpenSSL config (engines run code)",
        ),
        "experimental-network-imports" => (NodeCodeLoading, "imports code over the network"),
        "snapshot-blob" => (NodeCodeLoading, "starts from a heap snapshot"),
        "test-reporter" if !value.is_some_and(|v| BUILTIN_REPORTERS.contains(&v)) => {
            (NodeCodeLoading, "loads a reporter module")
        }
        n if n == "inspect"
            || n.starts_with("inspect-")
            || n == "debug"
            || n == "debug-brk"
            || n == "debug-port" =>
        {
            (NodeInspector, "opens the inspector")
        }
        "run" => (NodeRun, "runs a package.json script through a shell"),
        _ => return None,
    })
}

/// node never takes an option's value from an argument that starts with `-` (it reports a
/// missing argument, or reads the option as boolean as `-p` does): so neither do we.
fn takes_next(args: &[OsString], i: usize) -> bool {
    args.get(i)
        .is_some_and(|a| !(a.len() > 1 && a.as_encoded_bytes().starts_with(b"-")))
}

/// Short options: `-r` loads a module; `-e`, `-p`, `-C` take a value (attached or next).
fn short_takes_value(c: char) -> bool {
    matches!(c, 'e' | 'p' | 'C')
}

/// What node would run: the script, if any (`None` for inline code, stdin, the REPL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePlan {
    pub script: Option<OsString>,
}

/// Where the image keeps what its providers run (`docs/image.md`): a script there is a
/// provider, which starts only through its provider policy.
pub const PROVIDER_DIR: &str = "/usr/local/libexec/execguard/";

/// Refuses a script that is a protected provider's (by its canonical name, so no link or
/// relative spelling gets around it).
pub fn check_script(plan: &NodePlan) -> Result<(), Refusal> {
    let Some(script) = &plan.script else {
        return Ok(());
    };
    let canonical = std::fs::canonicalize(script).unwrap_or_else(|_| script.into());
    if canonical.starts_with(PROVIDER_DIR) {
        return Err(Refusal::new(
            Reason::NodeProviderScript,
            format!(
                "node {}: a protected provider's script",
                canonical.display()
            ),
        ));
    }
    Ok(())
}

/// Check a node invocation (`args` excludes argv[0]). The environment is not consulted:
/// `NODE_OPTIONS`, `OPENSSL_CONF`, `NODE_REPL_EXTERNAL_MODULE` and friends are never passed
/// to node (see `env::build_child_env`).
pub fn check_node(args: &[OsString]) -> Result<NodePlan, Refusal> {
    let mut i = 0;
    while i < args.len() {
        let raw = args[i].to_string_lossy().into_owned();
        i += 1;
        if raw == "--" {
            return Ok(NodePlan {
                script: args.get(i).cloned(),
            });
        }
        if let Some(body) = raw.strip_prefix("--") {
            let (name, inline) = match body.find('=') {
                Some(k) => (&body[..k], Some(&body[k + 1..])),
                None => (body, None),
            };
            let name = name.replace('_', "-");
            let mut value = inline.map(str::to_owned);
            if value.is_none() && VALUE_OPTIONS.contains(&name.as_str()) && takes_next(args, i) {
                value = Some(args[i].to_string_lossy().into_owned());
                i += 1;
            }
            if name.starts_with("no-") {
                continue; // negation of a boolean option
            }
            if let Some((reason, what)) = classify_long(&name, value.as_deref()) {
                return Err(Refusal::new(reason, format!("node {raw}: {what}")));
            }
            continue;
        }
        if raw.len() > 1 && raw.starts_with('-') {
            let letters: Vec<char> = raw[1..].chars().collect();
            // Anywhere in a bundle: a letter read as a value by us could be an option to node.
            if letters.contains(&'r') {
                return Err(Refusal::new(
                    Reason::NodeCodeLoading,
                    format!("node {raw}: loads code before the script"),
                ));
            }
            for (j, c) in letters.iter().enumerate() {
                if short_takes_value(*c) {
                    if j + 1 == letters.len() && takes_next(args, i) {
                        i += 1; // the value is the next argument
                    }
                    break; // the rest of the bundle is the value
                }
            }
            continue;
        }
        return Ok(NodePlan {
            script: Some(args[i - 1].clone()),
        });
    }
    Ok(NodePlan { script: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Result<NodePlan, Refusal> {
        let v: Vec<OsString> = args.iter().map(OsString::from).collect();
        check_node(&v)
    }

    #[test]
    fn provider_scripts_are_refused_by_their_canonical_name() {
        let plan = |s: &str| NodePlan {
            script: Some(s.into()),
        };
        let refused = check_script(&plan(
            "/usr/local/libexec/execguard/providers/gemini/node_modules/@google/gemini-cli/bundle/gemini.js",
        ))
        .unwrap_err();
        assert_eq!(refused.code(), Reason::NodeProviderScript.as_str());
        assert!(check_script(&plan("/usr/local/lib/app.js")).is_ok());
        assert!(check_script(&NodePlan { script: None }).is_ok());
    }

    #[test]
    fn node_corpus() {
        let refused: &[(&[&str], &str)] = &[
            (&["-r", "x", "a.js"], "node_code_loading"),
            (&["-er", "x"], "node_code_loading"),
            (&["-e", "1", "--require", "x"], "node_code_loading"),
            (&["-p", "1", "-r", "x"], "node_code_loading"),
            (&["-p", "-r", "x"], "node_code_loading"),
            (&["-e", "-r", "x"], "node_code_loading"),
            (&["--title", "--require", "x"], "node_code_loading"),
            (&["--require=x", "a.js"], "node_code_loading"),
            (&["--import", "x", "a.js"], "node_code_loading"),
            (&["--import=x", "-e", "1"], "node_code_loading"),
            (&["--loader", "x", "a.js"], "node_code_loading"),
            (&["--experimental-loader=x", "a.js"], "node_code_loading"),
            (&["--experimental_loader=x", "a.js"], "node_code_loading"),
            (&["--experimental_loader", "x", "a.js"], "node_code_loading"),
            (&["--env-file=.env", "a.js"], "node_code_loading"),
            (&["--env-file-if-exists=.env", "a.js"], "node_code_loading"),
            (&["--env_file", ".env", "a.js"], "node_code_loading"),
            (
                &["--experimental-config-file=c.json", "a.js"],
                "node_code_loading",
            ),
            (
                &["--experimental-default-config-file", "a.js"],
                "node_code_loading",
            ),
            (
                &["--openssl-config=/tmp/o.cnf", "a.js"],
                "node_code_loading",
            ),
            (&["--inspect", "a.js"], "node_inspector"),
            (&["--inspect=0.0.0.0:9229", "a.js"], "node_inspector"),
            (&["--inspect-brk", "a.js"], "node_inspector"),
            (&["--inspect_wait", "a.js"], "node_inspector"),
            (&["--inspect-port=1", "a.js"], "node_inspector"),
            (&["--inspect", "-e", "1"], "node_inspector"),
            (&["--run", "build"], "node_run"),
            (&["--title", "x", "--require", "y"], "node_code_loading"),
            (&["--title", "-r", "y", "-e", "1"], "node_code_loading"),
            (&["--test-reporter=./r.js", "--test"], "node_code_loading"),
        ];
        for (args, code) in refused {
            let r = check(args).expect_err(&format!("{args:?} must be refused"));
            assert_eq!(r.code(), *code, "{args:?}");
        }
        // Inline code is code in plain sight: allowed, like a script file.
        let allowed: &[&[&str]] = &[
            &["a.js"],
            &["a.js", "-e", "x", "--inspect", "--no-verify", "-r", "y"],
            &["--", "a.js", "-e"],
            &["-e", "1"],
            &["--eval=1"],
            &["-p", "1"],
            &["-pe", "1"],
            &["--print", "1"],
            &["-i"],
            &[],
            &["-"],
            &["--", "-"],
            &["--no-warnings"],
            &["-v"],
            &["--version"],
            &["-h"],
            &["--title", "-e", "a.js"],
            &["--no-experimental-fetch", "a.js"],
            &["--test"],
            &["--test-reporter=spec", "--test"],
            &["-C", "development", "a.js"],
            &["--stack-trace-limit", "50", "a.js"],
        ];
        for args in allowed {
            assert!(
                check(args).is_ok(),
                "{args:?} must be allowed: {:?}",
                check(args)
            );
        }
        assert_eq!(
            check(&["--title", "t", "a.js"]).unwrap().script,
            Some("a.js".into())
        );
        assert_eq!(check(&["-e", "1"]).unwrap().script, None);
    }
}
