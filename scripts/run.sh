#!/usr/bin/env bash
# The run command of README.md: set up (idempotent), build, and detect speech in the bundled
# sample recording with the bundled Silero VAD model. Extra arguments go to `brisvox vad`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
apt_flag=()
[[ $(id -u) == 0 ]] || apt_flag=(--no-apt)
bash scripts/setup.sh "${apt_flag[@]}" >&2
cmake --preset release >&2
cmake --build --preset release -j "$(nproc)" --target brisvox_cli >&2
exec build/release/brisvox vad "${@:-third_party/audio/sample.wav}"
