#!/usr/bin/env bash
# The manylinux wheel on a machine that has none of the build's libraries (a step of
# scripts/test_python.sh; docs/PYTHON.md, "Installing the wheel elsewhere"):
#   1. a fresh venv of Debian's python3 with the pinned numpy wheel, outside the checkout, and the
#      repaired wheel installed into it;
#   2. in a private mount namespace: every shared library of the Debian packages auditwheel
#      grafted into the wheel (its SBOM names them: libsndfile1, libsoxr0, libgomp1, ...) is hidden
#      (/dev/null mounted over it), and so are the checkout and its third_party/;
#   3. there, `import brisvox` checks that those libraries are indeed gone from the system, then
#      brisvox.vad() on a file, and a stream with Smart Turn and transcripts (Whisper tiny.en-int8
#      copied beside the venv: Whisper is not in the wheel).
#   scripts/wheel_install_test.sh WHEEL        exit 0 pass, 1 fail, 77 no mount namespace here
set -euo pipefail
if [[ ${1:-} == --hidden ]]; then
  # ---- inside the mount namespace ------------------------------------------------------------
  work=$2 checkout=$3
  shift 3
  for lib in "$@"; do mount --bind /dev/null "$lib"; done
  mount -t tmpfs -o size=1m,mode=0755 brisvox-hidden "$checkout"
  cd "$work"
  exec "$work/venv/bin/python" - "$work" "$@" <<'PY'
import ctypes, os, sys, wave
import numpy as np

work, hidden = sys.argv[1], sys.argv[2:]
for lib in hidden:  # the system's copies must be unusable here, or the test proves nothing
    try:
        ctypes.CDLL(lib)
    except OSError:
        continue
    sys.exit(f"FAIL: {lib} still loads: the system's libraries are not hidden")
import brisvox  # noqa: E402  (after the check: the module loads its own copies)

maps = open("/proc/self/maps").read()
for name in ("libsndfile", "libsoxr"):
    loaded = sorted({line.split()[-1] for line in maps.splitlines() if name in line})
    assert loaded and all("brisvox.libs" in p for p in loaded), f"{name} comes from {loaded}, not the wheel"
doc = brisvox.vad("sample.wav")
assert len(doc["segments"]) == 5, doc
with wave.open("sample.wav") as w:
    pcm = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
engine = brisvox.Engine(vad_model="v6", turn_model="v3.2", stt_model=os.path.join(work, "whisper-tiny.en-int8"))
turns, texts = 0, []
with engine.open_stream(sample_rate=16000, turn=True, transcripts=True, language="en") as stream:
    for event in stream.feed(pcm):
        if event.type == brisvox.EventType.TURN_END:
            turns += 1
        elif event.type == brisvox.EventType.TRANSCRIPT:
            texts.append(event.text)
text = " ".join(texts)
assert turns >= 1 and len(texts) == 5 and "Dashwood" in text, (turns, texts)
print(f"[python] manylinux wheel with the system's libraries hidden: brisvox {brisvox.__version__}, "
      f"{len(doc['segments'])} segments, {turns} turn ends, {len(texts)} transcripts "
      f"({text[:48]}...)", file=sys.stderr)
PY
fi

# ---- outside: the venv, the list of libraries to hide, the namespace ----------------------------
cd "$(dirname "${BASH_SOURCE[0]}")/.."
wheel=$(realpath "$1")
work=$(mktemp -d /tmp/brisvox-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --no-input --no-index --find-links .cache/python-wheels "$wheel"
cp third_party/audio/sample.wav "$work/"
cp -r third_party/models/whisper-tiny.en-int8 "$work/"
cp "${BASH_SOURCE[0]}" "$work/wheel_install_test.sh"

# The grafted libraries' Debian packages, from the wheel's SBOM, and every shared object they
# install (the real files, not the links: a bind mount over the file hides every name of it).
mapfile -t packages < <(/usr/bin/python3 - "$wheel" <<'PY'
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    sbom = next(n for n in z.namelist() if n.endswith("/sboms/auditwheel.cdx.json"))
    for c in json.loads(z.read(sbom))["components"]:
        if c.get("purl", "").startswith("pkg:deb/"):
            print(c["name"])
PY
)
((${#packages[@]})) || { echo "FAIL: the wheel's SBOM names no Debian package: was it repaired?" >&2; exit 1; }
mapfile -t libs < <(for p in "${packages[@]}"; do dpkg -L "$p"; done | grep -E '\.so(\.[0-9]+)*$' |
                    while read -r f; do [[ -f $f && ! -L $f ]] && echo "$f"; done | sort -u)
((${#libs[@]})) || { echo "FAIL: no shared object found in ${packages[*]}" >&2; exit 1; }

source scripts/mount_namespace.sh
if ((${#ns[@]} == 0)); then
  echo "SKIP: no mount namespace (unshare) here: the system's libraries cannot be hidden" >&2
  exit 77
fi
"${ns[@]}" bash "$work/wheel_install_test.sh" --hidden "$work" "$PWD" "${libs[@]}"
