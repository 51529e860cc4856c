#!/usr/bin/env bash
# Installs what the browser test (tests/browser/demo_test.mjs) needs; called by scripts/setup.sh.
#
#   tests/browser/setup_browser.sh            Debian's chromium (apt, when root) + playwright-core
#   tests/browser/setup_browser.sh --no-apt   skip the apt step
#
# playwright-core only drives the browser: it downloads no browser of its own (the test points it
# at /usr/bin/chromium). Its npm tarball is verified against the sha256 below before it is
# unpacked into the git-ignored third_party/node_modules/playwright-core. Idempotent: with
# everything in place it touches no network.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
pw_version=1.65.1
pw_sha256=6f5a60be62a4fddfbe7d10c448d8fbd54547da3358f2f8a04211440471ee863e  # playwright-core-1.65.1.tgz
pw_dir="$root/third_party/node_modules/playwright-core"
cache="$root/.cache/npm"
source "$root/scripts/prune.sh"
do_apt=1
for arg in "$@"; do
  case "$arg" in
    --no-apt) do_apt=0 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "setup_browser.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

log() { printf '[setup-browser] %s\n' "$*" >&2; }

# --- chromium (Debian) -------------------------------------------------------------------------
if [[ -x /usr/bin/chromium ]]; then
  log "chromium present ($(/usr/bin/chromium --version 2>/dev/null || echo 'version unknown'))"
elif [[ $do_apt == 1 && $(id -u) == 0 ]]; then
  log "installing chromium (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
else
  log "WARNING: /usr/bin/chromium is missing and cannot be installed here (not root, or --no-apt):" \
      "run 'apt-get install --no-install-recommends chromium' as root"
fi

# --- playwright-core (npm) ---------------------------------------------------------------------
installed_version() {
  [[ -f $pw_dir/package.json ]] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$pw_dir/package.json" 2>/dev/null || true
}
if [[ "$(installed_version)" == "$pw_version" ]]; then
  log "playwright-core $pw_version present"
else
  tgz="$cache/playwright-core-$pw_version.tgz"
  mkdir -p "$cache"
  if [[ ! -f $tgz ]] || [[ "$(sha256sum "$tgz" | cut -d' ' -f1)" != "$pw_sha256" ]]; then
    log "fetching playwright-core@$pw_version"
    rm -f "$tgz"
    (cd "$cache" && npm pack --silent "playwright-core@$pw_version" >/dev/null)
  fi
  got="$(sha256sum "$tgz" | cut -d' ' -f1)"
  if [[ $got != "$pw_sha256" ]]; then
    rm -f "$tgz"
    echo "setup_browser.sh: checksum mismatch for playwright-core-$pw_version.tgz: got $got, expected $pw_sha256" >&2
    exit 1
  fi
  rm -rf "$pw_dir.tmp" && mkdir -p "$pw_dir.tmp"
  tar xzf "$tgz" -C "$pw_dir.tmp" --strip-components=1
  rm -rf "$pw_dir" && mv "$pw_dir.tmp" "$pw_dir"
  prune "$tgz"
  log "playwright-core $pw_version in $pw_dir"
fi
