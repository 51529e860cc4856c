#!/usr/bin/env bash
# The test command of README.md: set up (idempotent), build the release preset, run the suite.
#   scripts/test.sh            setup + build + ctest (release)
#   scripts/test.sh asan|tsan  the same under a sanitizer preset
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset="${1:-release}"
apt_flag=()
[[ $(id -u) == 0 ]] || apt_flag=(--no-apt)
bash scripts/setup.sh "${apt_flag[@]}"
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset" -j "$(nproc)"
