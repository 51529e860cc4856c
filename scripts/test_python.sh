#!/usr/bin/env bash
# The Python package (docs/PYTHON.md), as a user gets it, then its tests: a step of
# `scripts/test.sh release`, after the release build (whose `brisvox` and
# `brisvox_turn_probability` some tests compare with).
#   1. the wheel, from the repository (pyproject.toml): pip without build isolation, so that the
#      venv's pinned nanobind and scikit-build-core build it, offline; incremental in build/python/;
#   2. the manylinux wheel: scripts/repair_wheel.py (auditwheel repair: the extension's system
#      libraries copied into the wheel, with their licences; the policy it meets printed);
#   3. scripts/wheel_install_test.sh: the repaired wheel in a fresh venv of Debian's python3 with
#      the pinned numpy wheel (scripts/setup.sh keeps it in .cache/python-wheels), run with those
#      system libraries and the checkout hidden: a file, and a stream with turns and transcripts;
#   4. tests/python (pytest) in the project's venv, with the repaired wheel installed on PYTHONPATH
#      and ONNX Runtime 1.29's Python wheel first (the Smart Turn parity reference, as tests/turn).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$SECONDS
out=build/python
rm -rf "$out/dist" "$out/manylinux" "$out/site"
# BRISVOX_UNITY=ON (scripts/test.sh ci): a unity build, as CI's other builds.
.venv/bin/python -m pip wheel . --quiet --no-input --no-build-isolation --no-deps --no-index -w "$out/dist" \
  --config-settings=cmake.define.CMAKE_UNITY_BUILD="${BRISVOX_UNITY:-OFF}"
built=$(ls "$out"/dist/brisvox-*.whl)
echo "[python] $(basename "$built") ($(du -h "$built" | cut -f1)) built at $((SECONDS - start)) s" >&2

wheel=$(.venv/bin/python scripts/repair_wheel.py "$built" "$out/manylinux")
echo "[python] repaired at $((SECONDS - start)) s" >&2
wheel_status=0
bash scripts/wheel_install_test.sh "$wheel" || wheel_status=$?
((wheel_status == 0 || wheel_status == 77)) || { echo "[python] FAIL: the manylinux wheel's install test" >&2; exit 1; }

.venv/bin/python -m pip install --quiet --no-input --no-deps --no-index --target "$out/site" "$wheel"
# Bounded: a hang (a stream that never ends) fails the step in 10 minutes instead of holding CI.
PYTHONPATH="$PWD/$out/site:$PWD/third_party/onnxruntime-python" \
  timeout 600 .venv/bin/python -m pytest -v -p no:cacheprovider -W ignore::DeprecationWarning tests/python
echo "[python] done in $((SECONDS - start)) s" >&2
