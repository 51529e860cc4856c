#!/usr/bin/env bash
# Regenerates the golden data of the speech segmenter tests, tests/data/vad/*.json, from the
# independent JavaScript reference (tools/reference/silero_reference.mjs).
#
#   tools/reference/make_golden.sh            rewrite tests/data/vad/*.json
#   tools/reference/make_golden.sh OUT_DIR    write them somewhere else (to compare)
#
# Needs what scripts/setup.sh installs: node, sox, third_party/node_modules/onnxruntime-web,
# third_party/models/silero_vad_v{5,6}.onnx and the Debian packages pocketsphinx-testdata and
# asterisk-core-sounds-en-wav.
#
# Every file holds one sequence of per-window speech probabilities ("frame_probs", rounded to 6
# decimals), the audio length and rate, and "cases": segmenter parameters (silero-vad's argument
# names) with the segments the reference computes from exactly those rounded probabilities, as
# float32 (what a C++ caller holding the model's float output sees).
#
# Real audio (the probabilities are the reference's Silero run, ONNX Runtime Web 1.30 on
# WebAssembly, one thread; a later test compares brisvox's own Silero output with them within
# 1e-4). The audio is rebuilt here, byte for byte reproducibly: SoX dithers by default, with a
# random seed, whenever it writes 16-bit samples it generated or processed (the silences made from
# `-n`, any resampling), so every run would give different files. `sox -D` turns dither off. Each
# file records the sha256 of the audio it was computed from ("audio_sha256"); only probabilities
# derived from the recordings are committed, not the audio.
#   real_sample_16k_v5.json, real_sample_16k_v6.json: scripts/setup.sh's sample recipe (five
#     LibriVox readings, public domain, shipped by Debian's pocketsphinx-testdata under
#     BSD-2-Clause packaging, joined with 1.5 s and 0.35 s pauses) with digital-zero pauses;
#     16 kHz; Silero v5 and v6. It equals third_party/audio/sample.wav when setup.sh makes its
#     pauses with `sox -D` too.
#   real_sample_8k_v5.json: that recording resampled by SoX (`sox -D in.wav -r 8000 out.wav`, its
#     default high-quality resampler, no dither); Silero v5 at 8 kHz.
#   real_prompts_8k_v6.json: four native 8 kHz Asterisk prompts (Allison Smith, CC-BY-SA-3.0,
#     Debian's asterisk-core-sounds-en-wav: hello-world, tt-weasels, demo-thanks, vm-intro) joined
#     with 0.6 s, 1.5 s and 0.25 s of digital silence; Silero v6.
# Synthetic sequences (seeded, made below), each aimed at one part of the algorithm:
#   synth_min_speech.json     bursts of 1..10 windows: which survive min_speech
#   synth_short_gaps.json     pauses of 1..8 windows, a hesitation between the thresholds, and
#                             probabilities exactly on the thresholds (0.5, 0.35, 0.15)
#   synth_padding_merge.json  neighbours closer than 2 * speech_pad: shared gaps, start clamp
#   synth_max_speech.json     long speech with pauses of several lengths: max_speech cuts, both
#                             use_max_poss_sil_at_max_speech branches, min_silence_at_max_speech
#   synth_hard_cut.json       non-stop speech: cuts with no pause, a limit below one window
#   synth_cut_in_pause.json   the limit reached inside a pause (legacy: no continuation)
#   synth_speech_to_end*.json speech up to the end of the audio (partial last window), a
#                             pending silence at the end, a final segment too short to keep
#   synth_all_silence.json, synth_all_speech.json, synth_empty.json
#   synth_random_16k.json, synth_random_8k.json  long random two-state sequences, many params
#   synth_8k_patterns.json    gaps, bursts and cuts at 8 kHz (256-sample windows)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/tests/data/vad}"
ref="$root/tools/reference/silero_reference.mjs"
models="$root/third_party/models"
librivox=/usr/share/pocketsphinx/test/data/librivox
prompts=/usr/share/asterisk/sounds/en_US_f_Allison

for f in "$models/silero_vad_v5.onnx" "$models/silero_vad_v6.onnx" \
         "$root/third_party/node_modules/onnxruntime-web/package.json" \
         "$librivox/sense_and_sensibility_01_austen_64kb-0870.wav" "$prompts/hello-world.wav"; do
  [[ -f $f ]] || { echo "make_golden.sh: missing $f (run scripts/setup.sh)" >&2; exit 1; }
done
command -v node >/dev/null || { echo "make_golden.sh: node not found" >&2; exit 1; }
command -v sox >/dev/null || { echo "make_golden.sh: sox not found" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

# --- audio --------------------------------------------------------------------------------------
# The sample recording as scripts/setup.sh joins it, with undithered (all-zero) pauses.
lv="$librivox/sense_and_sensibility_01_austen_64kb"
sox -D -n -r 16000 -c 1 -b 16 "$tmp/gap_short.wav" trim 0 0.35
sox -D -n -r 16000 -c 1 -b 16 "$tmp/gap_long.wav" trim 0 1.5
sox -D "$lv-0870.wav" "$tmp/gap_long.wav" "$lv-0880.wav" "$tmp/gap_short.wav" \
    "$lv-0890.wav" "$tmp/gap_long.wav" "$lv-0920.wav" "$tmp/gap_short.wav" "$lv-0930.wav" \
    "$tmp/sample_16k.wav"
sox -D "$tmp/sample_16k.wav" -r 8000 "$tmp/sample_8k.wav"
sox -D -n -r 8000 -c 1 -b 16 "$tmp/gap_a.wav" trim 0 0.6
sox -D -n -r 8000 -c 1 -b 16 "$tmp/gap_b.wav" trim 0 1.5
sox -D -n -r 8000 -c 1 -b 16 "$tmp/gap_c.wav" trim 0 0.25
sox -D "$prompts/hello-world.wav" "$tmp/gap_a.wav" "$prompts/tt-weasels.wav" "$tmp/gap_b.wav" \
    "$prompts/demo-thanks.wav" "$tmp/gap_c.wav" "$prompts/vm-intro.wav" "$tmp/prompts_8k.wav"
if [[ -f $root/third_party/audio/sample.wav ]] &&
   ! cmp -s "$root/third_party/audio/sample.wav" "$tmp/sample_16k.wav"; then
  echo "make_golden.sh: note: third_party/audio/sample.wav differs from the undithered recipe" \
       "used here (scripts/setup.sh makes its pauses with dither): compare probabilities" \
       "against audio whose sha256 matches the golden files' audio_sha256" >&2
fi

run_model() {  # run_model MODEL WAV NAME
  node "$ref" --model "$models/$1" --wav "$2" --round 6 > "$tmp/$3.model.json"
  sha256sum "$2" | cut -d' ' -f1 > "$tmp/$3.sha256"
}
run_model silero_vad_v5.onnx "$tmp/sample_16k.wav" real_sample_16k_v5
run_model silero_vad_v6.onnx "$tmp/sample_16k.wav" real_sample_16k_v6
run_model silero_vad_v5.onnx "$tmp/sample_8k.wav" real_sample_8k_v5
run_model silero_vad_v6.onnx "$tmp/prompts_8k.wav" real_prompts_8k_v6

# --- golden files -------------------------------------------------------------------------------
TMP="$tmp" OUT="$out" REF="$ref" SOX_VERSION="$(sox --version | sed 's/.*SoX v//')" \
node --input-type=module - <<'EOF'
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const { TMP, OUT, REF, SOX_VERSION } = process.env;

// Parameters: silero-vad's names. `inf` is written as the string "inf" in the files.
const defaults = {
  threshold: 0.5,
  neg_threshold: null,
  min_speech_duration_ms: 250,
  max_speech_duration_s: 'inf',
  min_silence_duration_ms: 100,
  speech_pad_ms: 30,
  min_silence_at_max_speech: 98,
  use_max_poss_sil_at_max_speech: true,
};

function segment(probsFile, rate, numSamples, params) {
  const args = [REF, '--probs', probsFile, '--rate', String(rate), '--num-samples',
                String(numSamples)];
  for (const [k, v] of Object.entries(params)) {
    args.push(`--${k}`, v === null ? 'auto' : String(v));
  }
  return JSON.parse(execFileSync('node', args, { encoding: 'utf8' })).segments;
}

// Compact, diff-friendly JSON: one key per line, number arrays wrapped, one case per line.
function numbers(list) {
  const lines = [];
  let line = [];
  for (const x of list) {
    line.push(JSON.stringify(x));
    if (line.join(',').length > 90) {
      lines.push(line.join(','));
      line = [];
    }
  }
  if (line.length) lines.push(line.join(','));
  return lines.length ? `[\n    ${lines.join(',\n    ')}\n  ]` : '[]';
}

function write(name, doc) {
  const head = Object.entries(doc)
    .filter(([k]) => k !== 'frame_probs' && k !== 'cases')
    .map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  const cases = doc.cases.map((c) => `    ${JSON.stringify(c)}`);
  const text = `{\n${head.join(',\n')},\n  "frame_probs": ${numbers(doc.frame_probs)},\n` +
               `  "cases": [\n${cases.join(',\n')}\n  ]\n}\n`;
  writeFileSync(`${OUT}/${name}.json`, text);
}

// Builds a golden file: runs the reference for every parameter set on the (rounded) probs.
function golden(name, description, rate, numSamples, probs, paramSets, extra = {}) {
  const probsFile = `${TMP}/${name}.probs.json`;
  writeFileSync(probsFile, JSON.stringify(probs));
  const cases = paramSets.map(([caseName, overrides]) => {
    const params = { ...defaults, ...overrides };
    return { name: caseName, params, segments: segment(probsFile, rate, numSamples, params) };
  });
  write(name, { name, description, ...extra, sample_rate: rate, num_samples: numSamples,
                frame_probs: probs, cases });
  const n = cases.reduce((a, c) => a + c.segments.length, 0);
  process.stderr.write(`${name}: ${probs.length} windows, ${cases.length} cases, ${n} segments\n`);
}

// --- real audio ---
const realParams = [
  ['default', {}],
  ['max_speech_3s', { max_speech_duration_s: 3 }],
  ['max_speech_3s_last_pause', { max_speech_duration_s: 3, use_max_poss_sil_at_max_speech: false }],
  ['min_silence_300_pad_100', { min_silence_duration_ms: 300, speech_pad_ms: 100 }],
  ['min_silence_0_pad_60', { min_silence_duration_ms: 0, speech_pad_ms: 60 }],
  ['threshold_0_3', { threshold: 0.3 }],
  ['threshold_0_8_neg_0_5', { threshold: 0.8, neg_threshold: 0.5 }],
];
const sampleSource = 'scripts/setup.sh sample recipe with undithered pauses (sox -D): five ' +
  'LibriVox readings (public domain, Debian pocketsphinx-testdata, BSD-2-Clause packaging), ' +
  'sense_and_sensibility_01_austen_64kb-0870, 1.5 s silence, -0880, 0.35 s, -0890, 1.5 s, -0920, ' +
  `0.35 s, -0930; SoX ${SOX_VERSION}`;
const real = [
  ['real_sample_16k_v5', 'silero_vad_v5.onnx', sampleSource],
  ['real_sample_16k_v6', 'silero_vad_v6.onnx', sampleSource],
  ['real_sample_8k_v5', 'silero_vad_v5.onnx', `${sampleSource}; resampled to 8 kHz by ` +
   'sox -D in.wav -r 8000 out.wav'],
  ['real_prompts_8k_v6', 'silero_vad_v6.onnx', 'Asterisk prompts (Allison Smith, CC-BY-SA-3.0, ' +
   'Debian asterisk-core-sounds-en-wav, en_US_f_Allison): hello-world, 0.6 s silence, ' +
   'tt-weasels, 1.5 s silence, demo-thanks, 0.25 s silence, vm-intro; joined with SoX ' +
   `${SOX_VERSION}, silences undithered (sox -D)`],
];
for (const [name, model, source] of real) {
  const run = JSON.parse(readFileSync(`${TMP}/${name}.model.json`, 'utf8'));
  if (run.segments_unrounded) {
    process.stderr.write(`${name}: note: rounding to 6 decimals changed the default segments\n`);
  }
  golden(name, `Silero ${model} probabilities of real audio, computed by the reference ` +
         '(ONNX Runtime Web, WebAssembly, one thread), rounded to 6 decimals',
         run.sample_rate, run.num_samples, run.frame_probs, realParams,
         { model, source, audio_sha256: readFileSync(`${TMP}/${name}.sha256`, 'utf8').trim() });
}

// --- synthetic sequences ---
// mulberry32: a small seeded PRNG, so the sequences are the same on every run.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const round6 = (x) => Number(x.toFixed(6));

// pattern: [[kind, windows], ...]; kind: 's' speech, 'q' silence, 'h' hesitation (between the
// default thresholds), or a number (that exact probability).
function build(seed, pattern) {
  const r = prng(seed);
  const out = [];
  for (const [kind, n] of pattern) {
    for (let i = 0; i < n; i++) {
      if (typeof kind === 'number') out.push(kind);
      else if (kind === 's') out.push(round6(0.6 + 0.39 * r()));
      else if (kind === 'q') out.push(round6(0.01 + 0.29 * r()));
      else if (kind === 'h') out.push(round6(0.36 + 0.13 * r()));
      else throw new Error(`bad kind ${kind}`);
    }
  }
  return out;
}

function randomMarkov(seed, n) {
  const r = prng(seed);
  const out = [];
  let speech = false;
  for (let i = 0; i < n; i++) {
    if (r() < (speech ? 0.08 : 0.12)) speech = !speech;
    let p = speech ? 0.45 + 0.55 * r() : 0.55 * r();
    if (r() < 0.03) p = [0.5, 0.35, 0.15, 0.0, 1.0][Math.floor(r() * 5)];
    out.push(round6(p));
  }
  return out;
}

const W16 = 512;
const W8 = 256;

{
  const pattern = [['q', 20]];
  for (let len = 1; len <= 10; len++) pattern.push(['s', len], ['q', 12]);
  pattern.push(['s', 7], ['h', 3], ['q', 12], ['s', 8], ['q', 3], ['s', 1], ['q', 12]);
  const probs = build(1, pattern);
  golden('synth_min_speech', 'speech bursts of 1..10 windows between long silences, and ' +
         'bursts lengthened by a hesitation or a short pause: the min_speech filter',
         16000, probs.length * W16 - 200, probs, [
           ['default', {}],
           ['min_speech_0', { min_speech_duration_ms: 0 }],
           ['min_speech_100_pad_0', { min_speech_duration_ms: 100, speech_pad_ms: 0 }],
           ['min_speech_500', { min_speech_duration_ms: 500 }],
           ['min_speech_255', { min_speech_duration_ms: 255 }],
         ]);
}
{
  const pattern = [['q', 5], ['s', 20]];
  for (const gap of [1, 2, 3, 4, 5, 6, 8]) pattern.push(['q', gap], ['s', 15]);
  pattern.push(['h', 10], ['s', 10], [0.35, 5], ['s', 10], [0.5, 3], ['q', 6], [0.5, 10],
               [0.15, 6], ['s', 5], [0.3, 8], ['s', 10], ['q', 20]);
  const probs = build(2, pattern);
  golden('synth_short_gaps', 'speech with pauses of 1..8 windows, a hesitation between the ' +
         'thresholds, and probabilities exactly 0.5, 0.35, 0.3 and 0.15 (float32)',
         16000, probs.length * W16, probs, [
           ['default', {}],
           ['min_silence_0', { min_silence_duration_ms: 0 }],
           ['min_silence_30', { min_silence_duration_ms: 30 }],
           ['min_silence_250', { min_silence_duration_ms: 250 }],
           ['neg_threshold_0_2', { neg_threshold: 0.2 }],
           ['neg_threshold_0_35', { neg_threshold: 0.35 }],
           ['threshold_0_3', { threshold: 0.3 }],
           ['threshold_0_7', { threshold: 0.7 }],
           ['threshold_0_1_auto_neg_floor', { threshold: 0.1 }],
         ]);
}
{
  const pattern = [['q', 1], ['s', 12]];
  for (const gap of [1, 2, 3, 4, 5, 6, 7, 9, 12]) pattern.push(['q', gap], ['s', 12]);
  pattern.push(['q', 2]);
  const probs = build(3, pattern);
  golden('synth_padding_merge', 'segments separated by 1..12 windows of silence, speech from ' +
         'the second window: padding shared between close neighbours, start clamped at 0',
         16000, probs.length * W16 - 77, probs, [
           ['default', {}],
           ['min_silence_0', { min_silence_duration_ms: 0 }],
           ['min_silence_0_pad_100', { min_silence_duration_ms: 0, speech_pad_ms: 100 }],
           ['min_silence_30_pad_200', { min_silence_duration_ms: 30, speech_pad_ms: 200 }],
           ['pad_200', { speech_pad_ms: 200 }],
           ['pad_0', { speech_pad_ms: 0 }],
           ['min_silence_0_pad_0_min_speech_0',
            { min_silence_duration_ms: 0, speech_pad_ms: 0, min_speech_duration_ms: 0 }],
         ]);
}
{
  // ~30 s of speech; pauses of 2 (1024 samples: no cut point), 3 (1536: a cut point only below
  // 96 ms), 4 (2048), 6 (3072) and 8 windows; min_silence 300 ms (4800) keeps them inside.
  const pattern = [['q', 10]];
  const pauses = [2, 4, 2, 3, 6, 2, 4, 8, 3, 2, 4, 6, 2, 3, 4, 2, 8, 4, 3, 2, 6, 4, 2, 3];
  for (const p of pauses) pattern.push(['s', 25 + (p * 7) % 13], ['q', p]);
  pattern.push(['s', 40], ['q', 30], ['s', 30]);
  const probs = build(4, pattern);
  const sets = [];
  for (const max of [1, 2.5, 4, 7.3]) {
    for (const useMax of [true, false]) {
      sets.push([`max_${max}s_${useMax ? 'longest' : 'last'}_pause`,
                 { max_speech_duration_s: max, min_silence_duration_ms: 300,
                   use_max_poss_sil_at_max_speech: useMax }]);
    }
  }
  sets.push(['max_2.5s_min_sil_at_max_50', { max_speech_duration_s: 2.5,
             min_silence_duration_ms: 300, min_silence_at_max_speech: 50 }]);
  sets.push(['max_2.5s_min_sil_at_max_50_last', { max_speech_duration_s: 2.5,
             min_silence_duration_ms: 300, min_silence_at_max_speech: 50,
             use_max_poss_sil_at_max_speech: false }]);
  sets.push(['max_2.5s_min_sil_at_max_200', { max_speech_duration_s: 2.5,
             min_silence_duration_ms: 300, min_silence_at_max_speech: 200 }]);
  sets.push(['max_3s_default_silence', { max_speech_duration_s: 3 }]);
  sets.push(['max_3s_min_silence_0', { max_speech_duration_s: 3, min_silence_duration_ms: 0 }]);
  sets.push(['max_1.7s_pad_100', { max_speech_duration_s: 1.7, min_silence_duration_ms: 300,
             speech_pad_ms: 100 }]);
  sets.push(['max_1.7s_pad_100_last', { max_speech_duration_s: 1.7,
             min_silence_duration_ms: 300, speech_pad_ms: 100,
             use_max_poss_sil_at_max_speech: false }]);
  golden('synth_max_speech', 'about 30 s of speech with pauses of 2, 3, 4, 6 and 8 windows: ' +
         'max_speech cuts at the longest or last pause', 16000, probs.length * W16, probs, sets);
}
{
  const probs = build(5, [['s', 400], ['q', 30], ['s', 100]]);
  golden('synth_hard_cut', 'non-stop speech (400 windows), a pause, speech to the end: ' +
         'max_speech cuts with no pause to cut at', 16000, probs.length * W16 - 511, probs, [
           ['default', {}],
           ['max_1s', { max_speech_duration_s: 1 }],
           ['max_1s_last', { max_speech_duration_s: 1, use_max_poss_sil_at_max_speech: false }],
           ['max_2.5s', { max_speech_duration_s: 2.5 }],
           ['max_2.5s_pad_0', { max_speech_duration_s: 2.5, speech_pad_ms: 0 }],
           ['max_2.5s_pad_0_min_speech_0', { max_speech_duration_s: 2.5, speech_pad_ms: 0,
             min_speech_duration_ms: 0 }],
           ['max_0.05s_below_one_window', { max_speech_duration_s: 0.05 }],
           ['max_0.1s_pad_0', { max_speech_duration_s: 0.1, speech_pad_ms: 0 }],
         ]);
}
{
  const probs = build(6, [['q', 3], ['s', 60], ['q', 30], ['s', 60], ['q', 6], ['s', 40],
                          ['q', 20]]);
  golden('synth_cut_in_pause', 'the max_speech limit reached inside a long pause that ' +
         'min_silence keeps open', 16000, probs.length * W16, probs, [
           ['max_2.2s_longest', { max_speech_duration_s: 2.2, min_silence_duration_ms: 1000 }],
           ['max_2.2s_last', { max_speech_duration_s: 2.2, min_silence_duration_ms: 1000,
             use_max_poss_sil_at_max_speech: false }],
           ['max_2.2s_last_min_sil_at_max_0', { max_speech_duration_s: 2.2,
             min_silence_duration_ms: 1000, min_silence_at_max_speech: 0,
             use_max_poss_sil_at_max_speech: false }],
           ['max_4s_longest', { max_speech_duration_s: 4, min_silence_duration_ms: 1000 }],
           ['max_4s_last', { max_speech_duration_s: 4, min_silence_duration_ms: 1000,
             use_max_poss_sil_at_max_speech: false }],
         ]);
}
{
  const sets = [['default', {}], ['pad_100', { speech_pad_ms: 100 }],
                ['min_speech_0_pad_0', { min_speech_duration_ms: 0, speech_pad_ms: 0 }],
                ['max_0.5s', { max_speech_duration_s: 0.5 }]];
  let probs = build(7, [['q', 10], ['s', 30]]);
  golden('synth_speech_to_end', 'speech running to the end of the audio, whose last window ' +
         'is partial (300 samples short)', 16000, probs.length * W16 - 300, probs, sets);
  probs = build(8, [['s', 20], ['q', 2]]);
  golden('synth_speech_to_end_pending_silence', 'speech from the start, then a pause shorter ' +
         'than min_silence when the audio ends', 16000, probs.length * W16 - 1, probs, sets);
  probs = build(9, [['q', 30], ['s', 5]]);
  golden('synth_speech_to_end_too_short', 'a final segment of 5 windows: kept or dropped by ' +
         'min_speech depending on the parameters', 16000, probs.length * W16 - 100, probs,
         [...sets, ['min_speech_100', { min_speech_duration_ms: 100 }]]);
}
{
  let probs = build(10, [['q', 200]]);
  golden('synth_all_silence', 'no window reaches the threshold', 16000, probs.length * W16,
         probs, [['default', {}], ['threshold_0_31', { threshold: 0.31 }]]);
  probs = build(11, [['s', 300]]);
  golden('synth_all_speech', 'every window is speech', 16000, probs.length * W16 - 12, probs, [
    ['default', {}],
    ['max_2s', { max_speech_duration_s: 2 }],
    ['max_2s_last', { max_speech_duration_s: 2, use_max_poss_sil_at_max_speech: false }],
    ['pad_0', { speech_pad_ms: 0 }],
  ]);
  golden('synth_empty', 'no audio at all', 16000, 0, [], [['default', {}]]);
}
{
  const probs = randomMarkov(12, 1500);
  golden('synth_random_16k', 'a seeded random two-state sequence (1500 windows) with some ' +
         'probabilities exactly on thresholds', 16000, probs.length * W16 - 3, probs, [
           ['default', {}],
           ['max_2s', { max_speech_duration_s: 2 }],
           ['max_2s_last', { max_speech_duration_s: 2, use_max_poss_sil_at_max_speech: false }],
           ['min_silence_0_pad_100', { min_silence_duration_ms: 0, speech_pad_ms: 100 }],
           ['min_silence_300_max_1.3s', { min_silence_duration_ms: 300,
             max_speech_duration_s: 1.3 }],
           ['min_silence_300_max_1.3s_last', { min_silence_duration_ms: 300,
             max_speech_duration_s: 1.3, use_max_poss_sil_at_max_speech: false }],
           ['threshold_0_3_min_speech_0', { threshold: 0.3, min_speech_duration_ms: 0 }],
           ['threshold_0_6_neg_0_4', { threshold: 0.6, neg_threshold: 0.4 }],
         ]);
}
{
  const probs = randomMarkov(13, 1500);
  golden('synth_random_8k', 'a seeded random two-state sequence (1500 windows) at 8 kHz',
         8000, probs.length * W8 - 255, probs, [
           ['default', {}],
           ['max_1s', { max_speech_duration_s: 1 }],
           ['max_1s_last', { max_speech_duration_s: 1, use_max_poss_sil_at_max_speech: false }],
           ['min_silence_0_pad_60', { min_silence_duration_ms: 0, speech_pad_ms: 60 }],
           ['min_silence_200_max_0.9s_last', { min_silence_duration_ms: 200,
             max_speech_duration_s: 0.9, use_max_poss_sil_at_max_speech: false }],
         ]);
}
{
  const pattern = [['q', 8]];
  for (let len = 1; len <= 18; len += 3) pattern.push(['s', len], ['q', 14]);
  for (const gap of [1, 2, 3, 4, 6, 7, 9, 13]) pattern.push(['s', 40], ['q', gap]);
  pattern.push(['s', 300], ['q', 10]);
  const probs = build(14, pattern);
  golden('synth_8k_patterns', 'bursts, pauses and non-stop speech at 8 kHz (256-sample windows)',
         8000, probs.length * W8 - 17, probs, [
           ['default', {}],
           ['min_silence_0_pad_30', { min_silence_duration_ms: 0 }],
           ['min_silence_300_max_1.5s', { min_silence_duration_ms: 300,
             max_speech_duration_s: 1.5 }],
           ['min_silence_300_max_1.5s_last', { min_silence_duration_ms: 300,
             max_speech_duration_s: 1.5, use_max_poss_sil_at_max_speech: false }],
           ['max_0.7s_pad_0', { max_speech_duration_s: 0.7, speech_pad_ms: 0 }],
         ]);
}
EOF
echo "golden data written to $out" >&2
