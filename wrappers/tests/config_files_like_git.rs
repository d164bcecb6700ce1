//! The wrapper's config-file parser against git's own reading of the same files
//! (`git config --file F --list -z`), on files written the way people write them.

use std::process::Command;

use execguard_wrappers::git::files::parse_config_file;

const SAMPLES: &[&str] = &[
    "# sample\n[user]\n\tname = \"Jane \\\"JD\\\" Doe\"   ; trailing comment\n\temail=jane@example.com\n[core]\n\tautocrlf\n\tpager = less -FRX\n\texcludesfile = ~/.gitignore_global\n",
    "[alias]\n\tlg = log --graph --pretty=format:'%Cred%h%Creset -%C(yellow)%d%Creset %s' --abbrev-commit\n\tst = status \\\n\t  -sb\n\tx = \"!f() { echo \\\"a;b#c\\\"; }; f\"\n",
    "[url \"git@github.com:\"]\n\tinsteadOf = https://github.com/\n[includeIf \"gitdir:~/work/\"]\n\tpath = ~/.gitconfig-work\n[Section.Sub]\n\tKey = V\n",
    "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\trequired = true\n[color \"diff\"]\n\tmeta = yellow bold\n[a]\r\n\tb = c\r\n[e \"x\\\\y\"]\n\tk = \"  spaced  \" tail  \n\tempty =\n\tlast",
];

#[test]
fn the_parser_reads_config_files_as_git_does() {
    let dir = std::env::temp_dir().join(format!("eg-cfgfiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, text) in SAMPLES.iter().enumerate() {
        let f = dir.join(format!("c{i}"));
        std::fs::write(&f, text).unwrap();
        let out = Command::new("/usr/bin/git")
            .args(["config", "--file"])
            .arg(&f)
            .args(["--list", "-z"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git rejects sample {i}");
        let git: Vec<(String, Option<String>)> = out
            .stdout
            .split(|b| *b == 0)
            .filter(|r| !r.is_empty())
            .map(|r| {
                let s = String::from_utf8_lossy(r).into_owned();
                match s.split_once('\n') {
                    Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
                    None => (s, None),
                }
            })
            .collect();
        let ours: Vec<(String, Option<String>)> = parse_config_file(text.as_bytes())
            .unwrap()
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect();
        assert_eq!(ours, git, "sample {i}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
