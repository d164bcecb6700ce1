#!/bin/sh
# git's own test suite, on a named subset, against the git wrapper (GIT_TEST_INSTALLED).
# A compatibility report, not CI. Usage:
#   benches/git-suite/run.sh GIT_SRC WRAPPER [TESTS...]
# GIT_SRC: the source of the installed git (Debian: add a deb-src line for the same mirror,
#   `apt-get source git`), with its test helpers built:
#   make NO_CURL=1 NO_GETTEXT=1 NO_TCLTK=1 NO_EXPAT=1 t/helper/test-tool GIT-BUILD-OPTIONS
# WRAPPER: the execguard-git binary (target/debug/execguard-git).
# Prints one line per test script: name, passed, failed, skipped (test_expect_failure
# "known breakage" lines of git itself are counted apart).
set -u
src=$1; wrapper=$2; shift 2
tests=${*:-"t1800-hook.sh t2400-worktree-add.sh t3400-rebase.sh t3401-rebase-and-am-rename.sh t3402-rebase-merge.sh t3403-rebase-skip.sh t3404-rebase-interactive.sh t3405-rebase-malformed.sh t3406-rebase-message.sh t3407-rebase-abort.sh t3408-rebase-multi-line.sh t3409-rebase-environ.sh t3412-rebase-root.sh t3413-rebase-hook.sh t3415-rebase-autosquash.sh t3416-rebase-onto-threedots.sh t3417-rebase-whitespace-fix.sh t3418-rebase-continue.sh t3419-rebase-patch-id.sh t3420-rebase-autostash.sh t5516-fetch-push.sh t7400-submodule-basic.sh t7501-commit-basic-functionality.sh t7503-pre-commit-and-pre-merge-commit-hooks.sh"}
real_git=$(command -v /usr/bin/git)
bin=$(mktemp -d /tmp/eg-gitsuite-bin.XXXXXX)
cp "$wrapper" "$bin/git"
# The wrapper execs the real git named by the policy; /usr/lib/git-core is git's own exec-path
# (what test-lib exports as GIT_EXEC_PATH).
EXECGUARD_POLICY=$(printf 'version = 1\n[[runtime]]\nname = "git"\npath = "%s"\nwrapper = "%s"\n[[runtime]]\nname = "git"\npath = "/usr/lib/git-core/git"\nwrapper = "%s"\n' "$real_git" "$bin/git" "$bin/git")
export EXECGUARD_POLICY
# test-lib exports GIT_TEMPLATE_DIR (its built templates); the wrapper refuses that variable
# (template hooks run during clone/init: rule 1), so this copy of test-lib uses git's
# installed templates instead. Nothing else is changed.
lib="$src/t/test-lib.sh"
[ -f "$lib.orig" ] || cp "$lib" "$lib.orig"
sed -e 's|^GIT_TEMPLATE_DIR="\$GIT_BUILD_DIR"/templates/blt$|unset GIT_TEMPLATE_DIR|' \
    -e 's|^export PATH GIT_EXEC_PATH GIT_TEMPLATE_DIR |export PATH GIT_EXEC_PATH |' "$lib.orig" > "$lib"
root=$(mktemp -d /tmp/eg-gitsuite-trash.XXXXXX)
cd "$src/t" || exit 1
for t in $tests; do
    out=$(GIT_TEST_INSTALLED="$bin" sh "./$t" --root="$root" -v 2>&1)
    all_ok=$(printf '%s\n' "$out" | grep -c '^ok ')
    skip=$(printf '%s\n' "$out" | grep -c '^ok .*# skip')
    not_ok=$(printf '%s\n' "$out" | grep -c '^not ok ')
    known=$(printf '%s\n' "$out" | grep -c '^not ok .*# TODO known breakage')
    pass=$((all_ok - skip)); fail=$((not_ok - known))
    echo "$t pass=$pass fail=$fail skip=$skip known_breakage=$known"
    printf '%s\n' "$out" > "$root/$t.log"
done
echo "logs: $root"
