//! node cases through the real wrapper binary against /usr/bin/node (a missing node fails the
//! test: nothing is skipped).

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const REAL_NODE: &str = "/usr/bin/node";
const WRAPPER: &str = env!("CARGO_BIN_EXE_execguard-node");

fn policy(dir: &Path) -> String {
    format!(
        "version = 1\naudit_log = \"{}\"\n[[runtime]]\nname = \"node\"\npath = \"{REAL_NODE}\"\nwrapper = \"{WRAPPER}\"\n",
        dir.join("audit.jsonl").display()
    )
}

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let policy = policy(dir);
    let mut c = Command::new(WRAPPER);
    c.args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("EXECGUARD_POLICY", policy);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn node_through_the_wrapper() {
    assert!(
        Path::new(REAL_NODE).exists(),
        "{REAL_NODE} is not installed: these tests need it (apt-get install -y nodejs)"
    );
    let dir = std::env::temp_dir().join(format!("eg-node-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("app.js"), "console.log('args:' + process.argv.slice(2).join(',')); console.log('opts:' + (process.env.NODE_OPTIONS || '') + ';' + (process.env.OPENSSL_CONF || ''));").unwrap();
    fs::write(
        dir.join("evil.js"),
        "require('fs').writeFileSync('pwned', 'x');",
    )
    .unwrap();

    // Scripts run normally, with their own arguments untouched (weakness 13).
    let out = run(
        &dir,
        &["app.js", "--no-verify", "-e", "x"],
        &[
            ("NODE_OPTIONS", "--require ./evil.js"),
            ("OPENSSL_CONF", "/tmp/o.cnf"),
            ("NODE_REPL_EXTERNAL_MODULE", "./evil.js"),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "args:--no-verify,-e,x\nopts:;\n"
    );
    assert_eq!(run(&dir, &["--version"], &[]).status.code(), Some(0));

    // Inline code is code in plain sight (npm's `postinstall: node -e ...`): it runs.
    let out = run(&dir, &["-e", "console.log('inline ' + 1)"], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "inline 1\n");
    let out = run(&dir, &["-p", "6*7"], &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");
    let mut child = Command::new(WRAPPER)
        .arg("-")
        .current_dir(&dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("EXECGUARD_POLICY", policy(&dir))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"console.log('stdin ok')")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "stdin ok\n");

    let refused: &[(&[&str], &str)] = &[
        (&["-r", "./evil.js", "app.js"], "node_code_loading"),
        (&["-e", "1", "-r", "./evil.js"], "node_code_loading"),
        (&["-p", "-r", "./evil.js"], "node_code_loading"),
        (&["--import=./evil.js", "app.js"], "node_code_loading"),
        (
            &["--experimental_loader=./evil.js", "app.js"],
            "node_code_loading",
        ),
        (&["--loader", "./evil.js", "app.js"], "node_code_loading"),
        (&["--env-file=.env", "app.js"], "node_code_loading"),
        (
            &["--openssl-config=/tmp/o.cnf", "app.js"],
            "node_code_loading",
        ),
        (&["--inspect", "app.js"], "node_inspector"),
        (&["--inspect-brk=0", "app.js"], "node_inspector"),
        (&["--run", "x"], "node_run"),
    ];
    for (args, code) in refused {
        let out = run(&dir, args, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("execguard-node: refused {code}: ")),
            "{args:?}: {err}"
        );
    }
    let audit = fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    assert_eq!(audit.lines().count(), refused.len());
    // The one record schema (guard/policy/src/audit.rs): tool, entry, decision, reason.
    for (line, (args, code)) in audit.lines().zip(refused) {
        let head = format!(
            ",\"tool\":\"node\",\"entry\":\"wrapper\",\"decision\":\"deny\",\"reason\":\"{code}\","
        );
        assert!(
            line.starts_with("{\"time\":") && line.contains(&head),
            "{args:?}: {line}"
        );
    }
    assert!(!dir.join("pwned").exists());
    let _ = fs::remove_dir_all(&dir);
}
