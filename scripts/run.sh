#!/usr/bin/env bash
# The run command of README.md: set up what running needs (idempotent; setup.sh --run), build
# the command-line tool, and detect speech in the bundled sample recording with the bundled Silero
# VAD model. Extra arguments go to `brisvox vad`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
apt_flag=()
[[ $(id -u) == 0 ]] || apt_flag=(--no-apt)
# What the build needs first (the CLI's apt packages, ONNX Runtime), then the build in the
# background while the models are fetched and converted (mostly network and one Python process).
bash scripts/setup.sh --run --build-only "${apt_flag[@]}" >&2
# Only the command-line tool, one compiler run per layer (a unity build: ~2x less CPU than one
# per file). The tests and benchmarks stay unconfigured, so the test packages are not needed;
# `cmake --preset release` (scripts/test.sh) turns them back on.
cmake --preset release -DBRISVOX_BUILD_TESTS=OFF -DBRISVOX_BUILD_BENCHMARKS=OFF -DCMAKE_UNITY_BUILD=ON >&2
# Its own process group, so that a failed set-up stops the compilers too.
setsid cmake --build --preset release -j "$(nproc)" --target brisvox_cli >&2 &
build=$!
trap 'kill -- -"$build" 2>/dev/null || true' EXIT
bash scripts/setup.sh --run --no-apt >&2
wait "$build"
trap - EXIT
exec build/release/brisvox vad "${@:-third_party/audio/sample.wav}"
