# Sourced by the setup scripts: pip_download DEST SPEC... downloads wheels (no dependencies, binary
# only) into DEST. It uses the test venv's pip when there is one; the set-up for running only
# (setup.sh --run) has no venv, and gets a venv with nothing but pip in .cache/pip-tool/ (made
# from Debian's python3-venv, offline: ensurepip's bundled wheel), a few seconds.
pip_download() {
  local dest="$1"; shift
  local root pip
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  pip="$root/.venv/bin/pip"
  if [[ ! -x $pip ]]; then
    pip="$root/.cache/pip-tool/bin/pip"
    [[ -x $pip ]] || /usr/bin/python3 -m venv "$root/.cache/pip-tool"
  fi
  mkdir -p "$dest"
  "$pip" download --quiet --no-input --disable-pip-version-check --no-deps --only-binary :all: -d "$dest" "$@"
}
