#!/usr/bin/env bash
# The run command of README.md: set up what running needs (idempotent; setup.sh --run), build
# the command-line tool, and detect speech in the bundled sample recording with the bundled Silero
# VAD model. Extra arguments go to `brisvox vad`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
apt_flag=()
[[ $(id -u) == 0 ]] || apt_flag=(--no-apt)
bash scripts/setup.sh --run "${apt_flag[@]}" >&2
# Only the command-line tool, one compiler run per layer (a unity build: ~2x less CPU than one
# per file). The tests and benchmarks stay unconfigured, so the test packages are not needed;
# `cmake --preset release` (scripts/test.sh) turns them back on.
cmake --preset release -DBRISVOX_BUILD_TESTS=OFF -DBRISVOX_BUILD_BENCHMARKS=OFF -DCMAKE_UNITY_BUILD=ON >&2
cmake --build --preset release -j "$(nproc)" --target brisvox_cli >&2
exec build/release/brisvox vad "${@:-third_party/audio/sample.wav}"
