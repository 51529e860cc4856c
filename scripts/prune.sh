# Sourced by the setup scripts. With BRISVOX_CI_PRUNE=1 (.ci/run sets it), a fetched archive is
# deleted once what it held is unpacked and verified, and npm's and pip's download caches live in
# .cache/tool-caches/ until prune_tool_caches deletes them: a fresh CI machine's disk then holds
# each artefact once, not three times (archive, tool cache, unpacked). Without it nothing changes.
if [[ ${BRISVOX_CI_PRUNE:-0} == 1 ]]; then
  _prune_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  export npm_config_cache="$_prune_root/.cache/tool-caches/npm"
  export PIP_CACHE_DIR="$_prune_root/.cache/tool-caches/pip"
fi

prune() { # prune FILE...: delete fetched archives whose contents are in place (BRISVOX_CI_PRUNE=1)
  [[ ${BRISVOX_CI_PRUNE:-0} == 1 ]] || return 0
  rm -f "$@"
}

prune_tool_caches() {
  [[ ${BRISVOX_CI_PRUNE:-0} == 1 ]] || return 0
  rm -rf "$_prune_root/.cache/tool-caches"
}
