#!/bin/sh
# Runs once inside `docker build` (image/Dockerfile), as root, before the guard is active.
set -eu

X=/usr/local/libexec/execguard
REAL=$X/real
BIN=$X/bin
mkdir -p "$REAL"

die() { echo "install.sh: $*" >&2; exit 1; }

# --- sudo and the setuid/setgid bits ---------------------------------------------------------
if dpkg -s sudo >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y sudo >/dev/null
fi
rm -f /usr/bin/sudo /usr/bin/sudoedit
find / -xdev \( -path /proc -o -path /sys \) -prune -o -type f -perm /6000 -exec chmod ug-s {} +

# --- the image user (the default user; a session may run under another uid) --------------------
# (minbase has no useradd: write the entries, with a locked password.)
if ! getent group 1000 >/dev/null; then echo "agent:x:1000:" >> /etc/group; fi
if ! getent passwd 1000 >/dev/null; then
    echo "agent:x:1000:1000:execguard image user:/state/agent-home:/bin/bash" >> /etc/passwd
    if [ -f /etc/shadow ]; then echo "agent:!:::::::" >> /etc/shadow; fi
fi
# Lock every password field that is empty.
if [ -f /etc/shadow ]; then
    awk -F: 'BEGIN { OFS = ":" } $2 == "" { $2 = "!" } { print }' /etc/shadow > /etc/shadow.new
    cat /etc/shadow.new > /etc/shadow && rm -f /etc/shadow.new
fi
# No account may have an empty password.
if awk -F: '$2 == "" { found = 1 } END { exit !found }' /etc/shadow; then
    die "an account in /etc/shadow has an empty password"
fi

# --- the real git and node -------------------------------------------------------------------
# git: /usr/lib/git-core/git is the real one (git's exec-path); /usr/bin/git is a separate copy
# of the same file on Debian. Keep one, protected; every name becomes the wrapper.
real_git=$(readlink -f /usr/lib/git-core/git)
[ -f "$real_git" ] || die "no /usr/lib/git-core/git"
mv "$real_git" "$REAL/git"
# The dashed builtins (git-add -> git, ...) must keep reaching the real git, not the wrapper.
for link in /usr/lib/git-core/git-*; do
    [ -L "$link" ] || continue
    case $(readlink "$link") in
        git|./git|/usr/lib/git-core/git|../../bin/git|/usr/bin/git) ln -sfn "$REAL/git" "$link" ;;
    esac
done
real_node=$(readlink -f /usr/bin/node)
[ -f "$real_node" ] || die "no /usr/bin/node"
mv "$real_node" "$REAL/node"

# Every other copy of either binary (same content, another inode) is removed.
for name in git node; do
    size=$(stat -c %s "$REAL/$name")
    find / -xdev \( -path /proc -o -path /sys -o -path "$REAL" \) -prune -o \
        -type f -size "${size}c" -print | while read -r f; do
        if cmp -s "$f" "$REAL/$name"; then
            echo "install.sh: removing another copy of $name: $f" >&2
            rm -f "$f"
        fi
    done
done

# The wrappers under the usual names: hard links, so the guard recognises them by inode.
chmod 0755 "$BIN/execguard-git" "$BIN/execguard-node"
for f in /usr/bin/git /usr/local/bin/git /usr/lib/git-core/git; do
    rm -f "$f"; ln "$BIN/execguard-git" "$f"
done
for f in /usr/bin/node /usr/local/bin/node; do
    rm -f "$f"; ln "$BIN/execguard-node" "$f"
done
# The providers are reachable by name only through the entrypoint; none is on PATH.
# (Their modes were set in the build context: a chmod or chown here would copy every provider
# file into a new layer, doubling the image. They are checked below.)
chmod 0755 "$REAL/git" "$REAL/node"
chown root:root "$REAL/git" "$REAL/node"

# --- ownership and modes of the control plane -------------------------------------------------
# real/ and providers/ hold the large provider files (see above): checked, not changed.
find "$X" \( -path "$X/real/*" -o -path "$X/providers" \) -prune -o -exec chown root:root {} + -exec chmod go-w {} +
chown -R root:root /etc/execguard /usr/local/share/execguard /usr/local/lib/libexecguard.so
chmod -R go-w /etc/execguard /usr/local/share/execguard
bad=$(find "$REAL" "$X/providers" \( ! -user root -o ! -group root -o \( ! -type l -perm /022 \) \) -print 2>/dev/null | head -n1)
[ -z "$bad" ] || die "not root-owned or writable by others: $bad"
chmod 0644 /usr/local/lib/libexecguard.so /etc/execguard/policy.toml

# --- mount points ------------------------------------------------------------------------------
mkdir -p /workspace /state /var/log/execguard
chmod 0755 /workspace
chmod 1777 /state
# The kept audit's mount point (docs/audit.md): root's, entered by no session.
chmod 0700 /var/log/execguard

# --- /etc/ld.so.preload and the manifest, last --------------------------------------------------
echo /usr/local/lib/libexecguard.so > /etc/ld.so.preload
chmod 0644 /etc/ld.so.preload
"$X/execguard-entrypoint" --generate-manifest \
    /etc/ld.so.preload \
    /usr/local/lib/libexecguard.so \
    "$X/execguard-entrypoint" \
    "$X/execguard-provider" \
    /etc/execguard/policy.toml \
    "$BIN/execguard-git" \
    "$BIN/execguard-node" \
    "$REAL/git" \
    "$REAL/node" \
    /usr/local/share/execguard/home/claude/.claude/settings.json \
    /usr/local/share/execguard/home/claude/.claude/CLAUDE.md \
    /usr/local/share/execguard/home/codex/.codex/config.toml \
    > "$X/control-plane.sha256"
chmod 0444 "$X/control-plane.sha256"

# Nothing setuid/setgid may remain.
if [ -n "$(find / -xdev \( -path /proc -o -path /sys \) -prune -o -type f -perm /6000 -print | head -n1)" ]; then
    die "a setuid/setgid file remains"
fi
