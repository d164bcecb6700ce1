//! git's option syntax: global options (`git.c`, exact spellings) and per-subcommand
//! `parse-options` rules (unique-prefix abbreviations, `--no-` negation, short bundles).
//!
//! The long option lists are the output of `git <cmd> --git-completion-helper-all` (git
//! 2.39), i.e. every spelling git accepts, including `--no-` forms. Short letters that take a
//! value come from `git <cmd> -h`.
//!
//! Errors only ever go one way: an option we do not know is read as a flag without a value,
//! so its would-be value is inspected as an option too. That can refuse an invocation git
//! would have read differently, never the reverse.

use crate::refusal::Reason;

/// How an option takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// A flag.
    None,
    /// `--opt=v`, `--opt v`, `-ov`, `-o v`.
    Required,
    /// Only attached: `--opt=v`, `-ov`.
    Optional,
}

/// What a dangerous option is refused as.
#[derive(Debug, Clone, Copy)]
pub struct Danger {
    /// Long name (without `--`), matched exactly or as an abbreviation.
    pub long: Option<&'static str>,
    pub short: Option<char>,
    pub reason: Reason,
    pub what: &'static str,
    /// When set, only values for which this returns true are refused.
    pub value_is_dangerous: Option<fn(&str) -> bool>,
}

const fn danger(
    long: Option<&'static str>,
    short: Option<char>,
    reason: Reason,
    what: &'static str,
) -> Danger {
    Danger {
        long,
        short,
        reason,
        what,
        value_is_dangerous: None,
    }
}

/// A subcommand's option model.
#[derive(Debug)]
pub struct SubcommandSpec {
    pub name: &'static str,
    /// Space-separated `--name` / `--name=` tokens (completion helper output).
    pub longs: &'static str,
    /// Short letters that take a required value.
    pub short_required: &'static str,
    /// Short letters that take an optional, attached value.
    pub short_optional: &'static str,
    pub dangers: &'static [Danger],
}

const NO_VERIFY: Danger = danger(
    Some("no-verify"),
    None,
    Reason::HookBypass,
    "skips repository hooks",
);

fn starts_with_slash(v: &str) -> bool {
    v.starts_with('/')
}

fn not_empty(v: &str) -> bool {
    !v.is_empty()
}

/// `--template=<dir>`: the template's hooks are copied into the new repository and run during
/// `clone` (post-checkout). `--template=` (empty) copies no templates at all.
const TEMPLATE: Danger = Danger {
    long: Some("template"),
    short: None,
    reason: Reason::CommandOption,
    what: "template hooks run",
    value_is_dangerous: Some(not_empty),
};

/// Merge strategies git has itself (builtins, and the `git-merge-resolve`/`-octopus` scripts
/// of its exec-path). Any other name runs `git-merge-<name>` found on `PATH`.
pub const OWN_MERGE_STRATEGIES: &[&str] =
    &["ort", "recursive", "resolve", "octopus", "ours", "subtree"];

fn foreign_strategy(v: &str) -> bool {
    !OWN_MERGE_STRATEGIES.contains(&v)
}

const STRATEGY: Danger = Danger {
    long: Some("strategy"),
    short: Some('s'),
    reason: Reason::CommandOption,
    what: "a merge strategy that is not git's own runs git-merge-<name> from PATH",
    value_is_dangerous: Some(foreign_strategy),
};

/// Modelled subcommands. Others get [`UNMODELLED_DANGERS`].
pub static SUBCOMMANDS: &[SubcommandSpec] = &[
    SubcommandSpec {
        name: "commit",
        longs: "--quiet --verbose --file= --author= --date= --message= --reedit-message= --reuse-message= --fixup= --squash= --reset-author --trailer= --signoff --template= --edit --cleanup= --status --gpg-sign --all --include --interactive --patch --only --no-verify --dry-run --short --branch --ahead-behind --porcelain --long --null --amend --no-post-rewrite --untracked-files --pathspec-from-file= --pathspec-file-nul --allow-empty --allow-empty-message --verify --post-rewrite --no-quiet --no-verbose --no-file --no-author --no-date --no-message --no-reedit-message --no-reuse-message --no-fixup --no-squash --no-reset-author --no-signoff --no-template --no-edit --no-cleanup --no-status --no-gpg-sign --no-all --no-include --no-interactive --no-patch --no-only --no-dry-run --no-short --no-branch --no-ahead-behind --no-porcelain --no-long --no-null --no-amend --no-untracked-files --no-pathspec-from-file --no-pathspec-file-nul --no-allow-empty --no-allow-empty-message",
        short_required: "mFcCt",
        short_optional: "uS",
        dangers: &[
            NO_VERIFY,
            danger(None, Some('n'), Reason::HookBypass, "skips pre-commit and commit-msg hooks"),
            danger(Some("no-post-rewrite"), None, Reason::HookBypass, "skips the post-rewrite hook"),
        ],
    },
    SubcommandSpec {
        name: "merge",
        longs: "--stat --summary --log --squash --commit --edit --cleanup= --ff --ff-only --rerere-autoupdate --verify-signatures --strategy= --strategy-option= --message= --file --into-name= --verbose --quiet --abort --quit --continue --allow-unrelated-histories --progress --gpg-sign --autostash --overwrite-ignore --signoff --no-verify --verify --no-stat --no-summary --no-log --no-squash --no-commit --no-edit --no-cleanup --no-ff --no-rerere-autoupdate --no-verify-signatures --no-strategy --no-strategy-option --no-message --no-into-name --no-verbose --no-quiet --no-abort --no-quit --no-continue --no-allow-unrelated-histories --no-progress --no-gpg-sign --no-autostash --no-overwrite-ignore --no-signoff",
        short_required: "sXmF",
        short_optional: "S",
        dangers: &[NO_VERIFY, STRATEGY],
    },
    SubcommandSpec {
        name: "pull",
        longs: "--verbose --quiet --progress --recurse-submodules --rebase --stat --summary --log --signoff --squash --commit --edit --cleanup= --ff --ff-only --verify --verify-signatures --autostash --strategy= --strategy-option= --gpg-sign --allow-unrelated-histories --all --append --upload-pack= --force --tags --prune --jobs --dry-run --keep --depth= --shallow-since= --shallow-exclude= --deepen= --unshallow --update-shallow --refmap= --server-option= --ipv4 --ipv6 --negotiation-tip= --show-forced-updates --set-upstream --no-verbose --no-quiet --no-progress --no-recurse-submodules --no-rebase --no-stat --no-summary --no-log --no-signoff --no-squash --no-commit --no-edit --no-cleanup --no-ff --no-verify --no-verify-signatures --no-autostash --no-strategy --no-strategy-option --no-gpg-sign --no-allow-unrelated-histories --no-all --no-append --no-upload-pack --no-force --no-tags --no-prune --no-jobs --no-dry-run --no-keep --no-depth --no-shallow-since --no-shallow-exclude --no-deepen --no-update-shallow --no-server-option --no-ipv4 --no-ipv6 --no-negotiation-tip --no-show-forced-updates --no-set-upstream",
        short_required: "sXo",
        short_optional: "rSj",
        dangers: &[
            NO_VERIFY,
            STRATEGY,
            danger(Some("upload-pack"), None, Reason::CommandOption, "runs a command"),
        ],
    },
    SubcommandSpec {
        name: "push",
        longs: "--verbose --quiet --repo= --all --mirror --delete --tags --dry-run --porcelain --force --force-with-lease --force-if-includes --recurse-submodules= --thin --receive-pack= --exec= --set-upstream --progress --prune --no-verify --follow-tags --signed --atomic --push-option= --ipv4 --ipv6 --verify --no-verbose --no-quiet --no-repo --no-all --no-mirror --no-delete --no-tags --no-dry-run --no-porcelain --no-force --no-force-with-lease --no-force-if-includes --no-recurse-submodules --no-thin --no-receive-pack --no-exec --no-set-upstream --no-progress --no-prune --no-follow-tags --no-signed --no-atomic --no-push-option --no-ipv4 --no-ipv6",
        short_required: "o",
        short_optional: "",
        dangers: &[
            NO_VERIFY,
            danger(Some("receive-pack"), None, Reason::CommandOption, "runs a command"),
            danger(Some("exec"), None, Reason::CommandOption, "runs a command"),
        ],
    },
    SubcommandSpec {
        name: "am",
        longs: "--interactive --binary --3way --quiet --signoff --utf8 --keep --keep-non-patch --message-id --keep-cr --no-keep-cr --scissors --quoted-cr= --whitespace= --ignore-space-change --ignore-whitespace --directory= --exclude= --include= --patch-format= --reject --resolvemsg= --continue --resolved --skip --abort --quit --show-current-patch --allow-empty --committer-date-is-author-date --ignore-date --rerere-autoupdate --gpg-sign --empty= --rebasing --no-verify --verify --no-interactive --no-binary --no-3way --no-quiet --no-signoff --no-utf8 --no-keep --no-keep-non-patch --no-message-id --no-scissors --no-whitespace --no-ignore-space-change --no-ignore-whitespace --no-directory --no-exclude --no-include --no-patch-format --no-reject --no-resolvemsg --no-committer-date-is-author-date --no-ignore-date --no-rerere-autoupdate --no-gpg-sign --no-rebasing",
        short_required: "Cp",
        short_optional: "S",
        dangers: &[
            NO_VERIFY,
            danger(None, Some('n'), Reason::HookBypass, "skips applypatch hooks"),
        ],
    },
    SubcommandSpec {
        name: "rebase",
        longs: "--onto= --keep-base --no-verify --quiet --verbose --no-stat --signoff --committer-date-is-author-date --reset-author-date --ignore-date --ignore-whitespace --whitespace= --force-rebase --no-ff --continue --skip --abort --quit --edit-todo --show-current-patch --apply --merge --interactive --preserve-merges --rerere-autoupdate --empty= --keep-empty --autosquash --update-refs --gpg-sign --autostash --exec= --allow-empty-message --rebase-merges --fork-point --strategy= --strategy-option= --root --reschedule-failed-exec --reapply-cherry-picks --verify --stat --ff --no-onto --no-keep-base --no-quiet --no-verbose --no-signoff --no-committer-date-is-author-date --no-reset-author-date --no-ignore-date --no-ignore-whitespace --no-whitespace --no-force-rebase --no-preserve-merges --no-rerere-autoupdate --no-keep-empty --no-autosquash --no-update-refs --no-gpg-sign --no-autostash --no-exec --no-allow-empty-message --no-rebase-merges --no-fork-point --no-strategy --no-strategy-option --no-root --no-reschedule-failed-exec --no-reapply-cherry-picks",
        short_required: "CxsX",
        short_optional: "Sr",
        dangers: &[
            NO_VERIFY,
            danger(Some("exec"), Some('x'), Reason::CommandOption, "runs a command after each commit"),
            STRATEGY,
        ],
    },
    SubcommandSpec {
        name: "fetch",
        longs: "--verbose --quiet --all --set-upstream --append --atomic --upload-pack= --force --multiple --tags --jobs= --prefetch --prune --prune-tags --recurse-submodules --dry-run --write-fetch-head --keep --update-head-ok --progress --depth= --shallow-since= --shallow-exclude= --deepen= --unshallow --refetch --submodule-prefix= --recurse-submodules-default= --update-shallow --refmap= --server-option= --ipv4 --ipv6 --negotiation-tip= --negotiate-only --filter= --auto-maintenance --auto-gc --show-forced-updates --write-commit-graph --stdin --no-verbose --no-quiet --no-all --no-set-upstream --no-append --no-atomic --no-upload-pack --no-force --no-multiple --no-tags --no-jobs --no-prefetch --no-prune --no-prune-tags --no-recurse-submodules --no-dry-run --no-write-fetch-head --no-keep --no-update-head-ok --no-progress --no-depth --no-shallow-since --no-shallow-exclude --no-deepen --no-submodule-prefix --no-recurse-submodules-default --no-update-shallow --no-server-option --no-ipv4 --no-ipv6 --no-negotiation-tip --no-negotiate-only --no-filter --no-auto-maintenance --no-auto-gc --no-show-forced-updates --no-write-commit-graph --no-stdin",
        short_required: "jo",
        short_optional: "",
        dangers: &[danger(Some("upload-pack"), None, Reason::CommandOption, "runs a command")],
    },
    SubcommandSpec {
        name: "clone",
        longs: "--verbose --quiet --progress --reject-shallow --no-checkout --bare --naked --mirror --local --no-hardlinks --shared --recurse-submodules --recursive --jobs= --template= --reference= --reference-if-able= --dissociate --origin= --branch= --upload-pack= --depth= --shallow-since= --shallow-exclude= --single-branch --no-tags --shallow-submodules --separate-git-dir= --config= --server-option= --ipv4 --ipv6 --filter= --also-filter-submodules --remote-submodules --sparse --bundle-uri= --checkout --hardlinks --tags --no-verbose --no-quiet --no-progress --no-reject-shallow --no-bare --no-naked --no-mirror --no-local --no-shared --no-recurse-submodules --no-recursive --no-jobs --no-template --no-reference --no-reference-if-able --no-dissociate --no-origin --no-branch --no-upload-pack --no-depth --no-shallow-since --no-shallow-exclude --no-single-branch --no-shallow-submodules --no-separate-git-dir --no-config --no-server-option --no-ipv4 --no-ipv6 --no-filter --no-also-filter-submodules --no-remote-submodules --no-sparse --no-bundle-uri",
        short_required: "jobuc",
        short_optional: "",
        dangers: &[
            danger(Some("upload-pack"), Some('u'), Reason::CommandOption, "runs a command"),
            TEMPLATE,
        ],
    },
    SubcommandSpec {
        name: "init",
        longs: "--template= --bare --shared --quiet --separate-git-dir= --initial-branch= --object-format= --no-template --no-bare --no-quiet --no-separate-git-dir --no-initial-branch --no-object-format",
        short_required: "b",
        short_optional: "",
        dangers: &[TEMPLATE],
    },
    SubcommandSpec {
        name: "ls-remote",
        longs: "--quiet --upload-pack= --exec= --tags --heads --refs --get-url --sort= --exit-code --symref --server-option= --no-quiet --no-upload-pack --no-exec --no-tags --no-heads --no-refs --no-get-url --no-sort --no-exit-code --no-symref --no-server-option",
        short_required: "o",
        short_optional: "",
        dangers: &[
            danger(Some("upload-pack"), None, Reason::CommandOption, "runs a command"),
            danger(Some("exec"), None, Reason::CommandOption, "runs a command"),
        ],
    },
    SubcommandSpec {
        name: "archive",
        longs: "--output= --remote= --exec= --format= --prefix= --add-file= --add-virtual-file= --worktree-attributes --verbose --list --no-output --no-remote --no-exec",
        short_required: "o",
        short_optional: "",
        dangers: &[danger(Some("exec"), None, Reason::CommandOption, "runs a command")],
    },
    SubcommandSpec {
        name: "difftool",
        longs: "--gui --dir-diff --no-prompt --prompt --symlinks --tool= --tool-help --trust-exit-code --extcmd= --no-index --index --no-gui --no-dir-diff --no-symlinks --no-tool --no-tool-help --no-trust-exit-code --no-extcmd",
        short_required: "tx",
        short_optional: "",
        dangers: &[danger(Some("extcmd"), Some('x'), Reason::CommandOption, "runs a command")],
    },
    SubcommandSpec {
        name: "grep",
        longs: "--cached --no-index --untracked --exclude-standard --recurse-submodules --invert-match --ignore-case --word-regexp --text --textconv --recursive --max-depth= --extended-regexp --basic-regexp --fixed-strings --perl-regexp --line-number --column --full-name --files-with-matches --name-only --files-without-match --null --only-matching --count --color --break --heading --context= --before-context= --after-context= --threads= --show-function --function-context --and --or --not --quiet --all-match --open-files-in-pager --ext-grep --max-count= --index --no-cached --no-untracked --no-exclude-standard --no-recurse-submodules --no-invert-match --no-ignore-case --no-word-regexp --no-text --no-textconv --no-recursive --no-extended-regexp --no-basic-regexp --no-fixed-strings --no-perl-regexp --no-line-number --no-column --no-full-name --no-files-with-matches --no-name-only --no-files-without-match --no-null --no-only-matching --no-count --no-color --no-break --no-heading --no-context --no-before-context --no-after-context --no-threads --no-show-function --no-function-context --no-or --no-quiet --no-all-match --no-open-files-in-pager --no-ext-grep --no-max-count",
        short_required: "CBAfem",
        short_optional: "O",
        dangers: &[danger(
            Some("open-files-in-pager"),
            Some('O'),
            Reason::CommandOption,
            "runs a pager command",
        )],
    },
    SubcommandSpec {
        name: "help",
        longs: "--all --external-commands --aliases --exclude-guides --man --web --info --verbose --guides --user-interfaces --developer-interfaces --config --config-for-completion --config-sections-for-completion --no-external-commands --no-aliases --no-exclude-guides --no-man --no-web --no-info --no-verbose",
        short_required: "",
        short_optional: "",
        dangers: &[danger(Some("web"), Some('w'), Reason::CommandOption, "starts a browser command")],
    },
    SubcommandSpec {
        name: "fetch-pack",
        longs: "--upload-pack= --exec=",
        short_required: "",
        short_optional: "",
        dangers: &[
            danger(Some("upload-pack"), None, Reason::CommandOption, "runs a command"),
            danger(Some("exec"), None, Reason::CommandOption, "runs a command"),
        ],
    },
    SubcommandSpec {
        name: "send-pack",
        longs: "--receive-pack= --exec=",
        short_required: "",
        short_optional: "",
        dangers: &[
            danger(Some("receive-pack"), None, Reason::CommandOption, "runs a command"),
            danger(Some("exec"), None, Reason::CommandOption, "runs a command"),
        ],
    },
    SubcommandSpec {
        name: "daemon",
        longs: "--access-hook=",
        short_required: "",
        short_optional: "",
        dangers: &[danger(Some("access-hook"), None, Reason::CommandOption, "runs a command")],
    },
    SubcommandSpec {
        name: "send-email",
        longs: "--to-cmd= --cc-cmd= --header-cmd= --sendmail-cmd= --smtp-server= --no-to-cmd --no-cc-cmd --no-header-cmd",
        short_required: "",
        short_optional: "",
        dangers: &[
            danger(Some("to-cmd"), None, Reason::CommandOption, "runs a command"),
            danger(Some("cc-cmd"), None, Reason::CommandOption, "runs a command"),
            danger(Some("header-cmd"), None, Reason::CommandOption, "runs a command"),
            danger(Some("sendmail-cmd"), None, Reason::CommandOption, "runs a command"),
            Danger {
                long: Some("smtp-server"),
                short: None,
                reason: Reason::CommandOption,
                what: "a path runs a command",
                value_is_dangerous: Some(starts_with_slash),
            },
        ],
    },
];

/// Dangerous long options checked on every subcommand we do not model (abbreviations of at
/// least three characters). Short letters mean different things per command, so none here.
pub static UNMODELLED_DANGERS: &[Danger] = &[
    NO_VERIFY,
    Danger {
        short: None,
        ..STRATEGY
    },
    danger(
        Some("upload-pack"),
        None,
        Reason::CommandOption,
        "runs a command",
    ),
    danger(
        Some("receive-pack"),
        None,
        Reason::CommandOption,
        "runs a command",
    ),
    danger(Some("exec"), None, Reason::CommandOption, "runs a command"),
    TEMPLATE,
    danger(
        Some("extcmd"),
        None,
        Reason::CommandOption,
        "runs a command",
    ),
    danger(
        Some("open-files-in-pager"),
        None,
        Reason::CommandOption,
        "runs a pager command",
    ),
    danger(
        Some("access-hook"),
        None,
        Reason::CommandOption,
        "runs a command",
    ),
];

pub fn find_subcommand(name: &str) -> Option<&'static SubcommandSpec> {
    SUBCOMMANDS.iter().find(|s| s.name == name)
}

/// git builtins (`git --list-cmds=builtins`, 2.39, plus later additions). An alias can never
/// shadow one of these.
pub static BUILTINS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "bisect--helper",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout--worker",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "credential-cache",
    "credential-cache--daemon",
    "credential-store",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "env--helper",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "fsck-objects",
    "fsmonitor--daemon",
    "gc",
    "get-tar-commit-id",
    "grep",
    "hash-object",
    "help",
    "hook",
    "index-pack",
    "init",
    "init-db",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-ours",
    "merge-recursive",
    "merge-recursive-ours",
    "merge-recursive-theirs",
    "merge-subtree",
    "merge-tree",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "pack-objects",
    "pack-redundant",
    "pack-refs",
    "patch-id",
    "pickaxe",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "remote",
    "remote-ext",
    "remote-fd",
    "repack",
    "replace",
    "replay",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-pack",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "submodule--helper",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-archive--writer",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

pub fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
}

/// A long option token from a spec's `longs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongOpt {
    pub name: &'static str,
    pub arg: ArgKind,
}

fn long_opts(spec: &SubcommandSpec) -> impl Iterator<Item = LongOpt> {
    spec.longs.split_ascii_whitespace().filter_map(|t| {
        let t = t.strip_prefix("--")?;
        if t.is_empty() {
            return None;
        }
        Some(match t.strip_suffix('=') {
            Some(n) => LongOpt {
                name: n,
                arg: ArgKind::Required,
            },
            None => LongOpt {
                name: t,
                arg: ArgKind::None,
            },
        })
    })
}

/// How git's parse-options would resolve `--<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LongMatch {
    Exact(LongOpt),
    Abbrev(LongOpt),
    Ambiguous,
    Unknown,
}

pub fn resolve_long(spec: &SubcommandSpec, name: &str) -> LongMatch {
    let mut found: Option<LongOpt> = None;
    let mut ambiguous = false;
    for opt in long_opts(spec) {
        if opt.name == name {
            return LongMatch::Exact(opt);
        }
        if opt.name.starts_with(name) {
            match found {
                None => found = Some(opt),
                Some(_) => ambiguous = true,
            }
        }
    }
    match (found, ambiguous) {
        (_, true) => LongMatch::Ambiguous,
        (Some(o), false) => LongMatch::Abbrev(o),
        (None, false) => LongMatch::Unknown,
    }
}

pub fn short_arg(spec: &SubcommandSpec, c: char) -> ArgKind {
    if spec.short_required.contains(c) {
        ArgKind::Required
    } else if spec.short_optional.contains(c) {
        ArgKind::Optional
    } else {
        ArgKind::None
    }
}

/// Does `--<name>` (as typed) select the dangerous long option `d`? Exact spellings always do;
/// an abbreviation does unless the typed name is exactly another option.
pub fn long_selects(spec: Option<&SubcommandSpec>, name: &str, d: &str) -> bool {
    if name == d {
        return true;
    }
    if name.is_empty() || !d.starts_with(name) {
        return false;
    }
    match spec {
        Some(spec) => !matches!(resolve_long(spec, name), LongMatch::Exact(_)),
        None => name.len() >= 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviations_resolve_like_parse_options() {
        let commit = find_subcommand("commit").unwrap();
        assert_eq!(
            resolve_long(commit, "mess"),
            LongMatch::Abbrev(LongOpt {
                name: "message",
                arg: ArgKind::Required
            })
        );
        assert_eq!(
            resolve_long(commit, "no-verif"),
            LongMatch::Abbrev(LongOpt {
                name: "no-verify",
                arg: ArgKind::None
            })
        );
        assert_eq!(resolve_long(commit, "a"), LongMatch::Ambiguous);
        assert!(long_selects(Some(commit), "no-verif", "no-verify"));
        assert!(long_selects(Some(commit), "no-ve", "no-verify"));
        assert!(!long_selects(Some(commit), "verify", "no-verify"));
        assert!(!long_selects(Some(commit), "no-verbose", "no-verify"));
        let merge = find_subcommand("merge").unwrap();
        // ambiguous with --no-verify-signatures: git errors, we refuse; both are safe.
        assert!(long_selects(Some(merge), "no-verif", "no-verify"));
        assert!(!long_selects(
            Some(merge),
            "no-verify-signatures",
            "no-verify"
        ));
    }
}
