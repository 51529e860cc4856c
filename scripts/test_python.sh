#!/usr/bin/env bash
# The Python package (docs/PYTHON.md), as a user gets it, then its tests: a step of
# `scripts/test.sh release`, after the release build (whose `brisvox` and
# `brisvox_turn_probability` some tests compare with).
#   1. the wheel, from the repository (pyproject.toml): pip without build isolation, so that the
#      venv's pinned nanobind and scikit-build-core build it, offline; incremental in build/python/;
#   2. a fresh venv of Debian's python3 with the pinned numpy wheel (scripts/setup.sh keeps it in
#      .cache/python-wheels): the wheel installs there and `python -c "import brisvox"` runs
#      (and a whole file through the engine, so that the bundled ORT and models are found);
#   3. tests/python (pytest) in the project's venv, with the installed package on PYTHONPATH and
#      ONNX Runtime 1.29's Python wheel first (the Smart Turn parity reference, as tests/turn).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$SECONDS
out=build/python
rm -rf "$out/dist" "$out/fresh" "$out/site"
# BRISVOX_UNITY=ON (scripts/test.sh ci): a unity build, as CI's other builds.
.venv/bin/python -m pip wheel . --quiet --no-input --no-build-isolation --no-deps --no-index -w "$out/dist" \
  --config-settings=cmake.define.CMAKE_UNITY_BUILD="${BRISVOX_UNITY:-OFF}"
wheel=$(ls "$out"/dist/brisvox-*.whl)
echo "[python] $(basename "$wheel") ($(du -h "$wheel" | cut -f1)) built at $((SECONDS - start)) s" >&2

/usr/bin/python3 -m venv "$out/fresh"
"$out/fresh/bin/pip" install --quiet --no-input --no-index --find-links .cache/python-wheels "$wheel"
(cd /tmp && "$OLDPWD/$out/fresh/bin/python" -c "import brisvox")
(cd /tmp && "$OLDPWD/$out/fresh/bin/python" - "$OLDPWD/third_party/audio/sample.wav" <<'PY'
import sys, brisvox
doc = brisvox.vad(sys.argv[1])
assert len(doc["segments"]) >= 3, doc
print(f"[python] fresh venv: brisvox {brisvox.__version__}, {len(doc['segments'])} segments", file=sys.stderr)
PY
)

.venv/bin/python -m pip install --quiet --no-input --no-deps --no-index --target "$out/site" "$wheel"
# Bounded: a hang (a stream that never ends) fails the step in 10 minutes instead of holding CI.
PYTHONPATH="$PWD/$out/site:$PWD/third_party/onnxruntime-python" \
  timeout 600 .venv/bin/python -m pytest -v -p no:cacheprovider -W ignore::DeprecationWarning tests/python
echo "[python] done in $((SECONDS - start)) s" >&2
