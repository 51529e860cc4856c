#!/usr/bin/env node
// Independent reference for brisvox's Silero VAD path: runs the Silero ONNX model with ONNX
// Runtime Web (WebAssembly, a build independent of the native ONNX Runtime brisvox links) the way
// silero-vad's Python OnnxWrapper does, and segments the probabilities the way silero-vad 6.2.1's
// get_speech_timestamps does. Written from the Python source, not from brisvox's C++, so that the
// two can check each other.
//
// Usage:
//   node tools/reference/silero_reference.mjs --model M.onnx --wav F.wav [--rate 16000|8000]
//        [--round DIGITS] [segmenter options]
//   node tools/reference/silero_reference.mjs --probs P.json --rate R [--num-samples N]
//        [segmenter options]
//
// Segmenter options (names and defaults as in silero-vad; '-' and '_' are interchangeable):
//   --threshold 0.5  --neg-threshold auto  --min-speech-duration-ms 250
//   --max-speech-duration-s inf  --min-silence-duration-ms 100  --speech-pad-ms 30
//   --min-silence-at-max-speech 98  --use-max-poss-sil-at-max-speech true|false
//
// Output (stdout, JSON): {"sample_rate", "num_samples", "params", "frame_probs": [...],
// "segments": [{"start": sample, "end": sample}, ...]}.
//
// Probabilities are float32 numbers, as the model outputs them: --probs values are rounded to
// float32 (Math.fround) before segmenting, which is what a C++ caller holding a float array sees.
// --round D rounds the model's probabilities to D decimals first and segments those (the printed
// values are then exactly what was segmented); "segments_unrounded" is added when the rounding
// changed the result.
//
// Needs node >= 18 and onnxruntime-web in third_party/node_modules (scripts/setup.sh).

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');

function fail(message) {
  process.stderr.write(`silero_reference: ${message}\n`);
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// WAV reading: RIFF/WAVE, PCM 16-bit, mono. Samples scaled by 1/32768 as torchaudio.load does.

function readWav(path) {
  const buf = readFileSync(path);
  if (buf.length < 12 || buf.toString('ascii', 0, 4) !== 'RIFF' ||
      buf.toString('ascii', 8, 12) !== 'WAVE') {
    fail(`${path}: not a RIFF/WAVE file`);
  }
  let fmt = null;
  let data = null;
  let pos = 12;
  while (pos + 8 <= buf.length) {
    const id = buf.toString('ascii', pos, pos + 4);
    const size = buf.readUInt32LE(pos + 4);
    const body = pos + 8;
    const end = Math.min(body + size, buf.length);  // tolerate a truncated last chunk
    if (id === 'fmt ') {
      if (size < 16) fail(`${path}: fmt chunk too short (${size} bytes)`);
      fmt = {
        format: buf.readUInt16LE(body),
        channels: buf.readUInt16LE(body + 2),
        rate: buf.readUInt32LE(body + 4),
        bits: buf.readUInt16LE(body + 14),
      };
      if (fmt.format === 0xfffe && size >= 26) fmt.format = buf.readUInt16LE(body + 24);
    } else if (id === 'data') {
      data = buf.subarray(body, end);
    }
    pos = body + size + (size & 1);  // chunks are padded to an even size
  }
  if (!fmt) fail(`${path}: no fmt chunk`);
  if (!data) fail(`${path}: no data chunk`);
  if (fmt.format !== 1 || fmt.bits !== 16) {
    fail(`${path}: format ${fmt.format}/${fmt.bits}-bit, need PCM 16-bit (convert with sox)`);
  }
  if (fmt.channels !== 1) fail(`${path}: ${fmt.channels} channels, need mono`);
  const n = Math.floor(data.length / 2);
  const samples = new Float32Array(n);
  for (let i = 0; i < n; i++) samples[i] = data.readInt16LE(2 * i) / 32768;
  return { rate: fmt.rate, samples };
}

// ---------------------------------------------------------------------------------------------
// The model, driven like silero-vad's OnnxWrapper: each call feeds [context | chunk] with the
// context being the last `contextSize` samples of the previous call's input (zeros at first),
// state [2, 1, 128] zeros at first, sr an int64 scalar.

async function frameProbabilities(modelPath, samples, rate) {
  const require = createRequire(import.meta.url);
  const ortPath = resolve(repoRoot, 'third_party', 'node_modules', 'onnxruntime-web');
  let ort;
  try {
    ort = require(ortPath);
  } catch (e) {
    fail(`cannot load onnxruntime-web from ${ortPath} (run scripts/setup.sh): ${e.message}`);
  }
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = 'error';
  const session = await ort.InferenceSession.create(modelPath);

  const window = rate === 16000 ? 512 : 256;
  const contextSize = rate === 16000 ? 64 : 32;
  const input = new Float32Array(contextSize + window);
  let state = new Float32Array(2 * 128);
  const sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(rate)]), []);
  const probs = [];
  for (let start = 0; start < samples.length; start += window) {
    // Shift the last contextSize samples of the previous input to the front; the chunk follows,
    // zero-padded past the end of the audio.
    input.copyWithin(0, window, window + contextSize);
    const chunk = samples.subarray(start, Math.min(start + window, samples.length));
    input.fill(0, contextSize);
    input.set(chunk, contextSize);
    const feeds = {
      input: new ort.Tensor('float32', input.slice(), [1, contextSize + window]),
      state: new ort.Tensor('float32', state, [2, 1, 128]),
      sr,
    };
    const out = await session.run(feeds);
    probs.push(out.output.data[0]);
    state = Float32Array.from(out.stateN.data);
  }
  return probs;
}

// ---------------------------------------------------------------------------------------------
// get_speech_timestamps' segmentation, silero-vad 6.2.1 (src/silero_vad/utils_vad.py).

const defaultParams = {
  threshold: 0.5,
  neg_threshold: null,
  min_speech_duration_ms: 250,
  max_speech_duration_s: Infinity,
  min_silence_duration_ms: 100,
  speech_pad_ms: 30,
  min_silence_at_max_speech: 98,
  use_max_poss_sil_at_max_speech: true,
};

function speechTimestamps(probs, numSamples, rate, params) {
  const p = { ...defaultParams, ...params };
  const window = rate === 16000 ? 512 : 256;
  // Python computes these as floats; so does JS.
  const minSpeech = rate * p.min_speech_duration_ms / 1000;
  const pad = rate * p.speech_pad_ms / 1000;
  const maxSpeech = rate * p.max_speech_duration_s - window - 2 * pad;
  const minSilence = rate * p.min_silence_duration_ms / 1000;
  const minSilenceAtMax = rate * p.min_silence_at_max_speech / 1000;
  const neg = p.neg_threshold === null ? Math.max(p.threshold - 0.15, 0.01) : p.neg_threshold;

  let triggered = false;
  const speeches = [];
  let cur = null;  // the open speech {start}, or null
  let tempEnd = 0;  // start of the silence being tolerated (0: none)
  let prevEnd = 0;
  let nextStart = 0;
  let possibleEnds = [];  // [silenceStart, silenceLength] pairs seen inside the open speech

  for (let i = 0; i < probs.length; i++) {
    const prob = probs[i];
    const at = window * i;

    if (prob >= p.threshold && tempEnd) {
      const silence = at - tempEnd;
      if (silence > minSilenceAtMax) possibleEnds.push([tempEnd, silence]);
      tempEnd = 0;
      if (nextStart < prevEnd) nextStart = at;
    }

    if (prob >= p.threshold && !triggered) {
      triggered = true;
      cur = { start: at };
      continue;
    }

    if (triggered && at - cur.start > maxSpeech) {
      if (p.use_max_poss_sil_at_max_speech && possibleEnds.length) {
        let best = possibleEnds[0];  // the longest silence; the earliest among equals
        for (const e of possibleEnds) if (e[1] > best[1]) best = e;
        prevEnd = best[0];
        const length = best[1];
        cur.end = prevEnd;
        speeches.push(cur);
        cur = null;
        nextStart = prevEnd + length;
        if (nextStart < prevEnd + at) {
          cur = { start: nextStart };
        } else {
          triggered = false;
        }
        prevEnd = nextStart = tempEnd = 0;
        possibleEnds = [];
      } else if (prevEnd) {
        cur.end = prevEnd;
        speeches.push(cur);
        cur = null;
        if (nextStart < prevEnd) {
          triggered = false;
        } else {
          cur = { start: nextStart };
        }
        prevEnd = nextStart = tempEnd = 0;
        possibleEnds = [];
      } else {
        cur.end = at;
        speeches.push(cur);
        cur = null;
        prevEnd = nextStart = tempEnd = 0;
        triggered = false;
        possibleEnds = [];
        continue;
      }
    }

    if (prob < neg && triggered) {
      if (!tempEnd) tempEnd = at;
      const silenceNow = at - tempEnd;
      if (!p.use_max_poss_sil_at_max_speech && silenceNow > minSilenceAtMax) prevEnd = tempEnd;
      if (silenceNow < minSilence) continue;
      cur.end = tempEnd;
      if (cur.end - cur.start > minSpeech) speeches.push(cur);
      cur = null;
      prevEnd = nextStart = tempEnd = 0;
      triggered = false;
      possibleEnds = [];
      continue;
    }
  }

  if (cur && numSamples - cur.start > minSpeech) {
    cur.end = numSamples;
    speeches.push(cur);
  }

  // Padding: each side by `pad`, or half the gap where two neighbours are closer than 2 * pad.
  for (let i = 0; i < speeches.length; i++) {
    const s = speeches[i];
    if (i === 0) s.start = Math.trunc(Math.max(0, s.start - pad));
    if (i !== speeches.length - 1) {
      const next = speeches[i + 1];
      const gap = next.start - s.end;
      if (gap < 2 * pad) {
        s.end += Math.trunc(Math.floor(gap / 2));
        next.start = Math.trunc(Math.max(0, next.start - Math.floor(gap / 2)));
      } else {
        s.end = Math.trunc(Math.min(numSamples, s.end + pad));
        next.start = Math.trunc(Math.max(0, next.start - pad));
      }
    } else {
      s.end = Math.trunc(Math.min(numSamples, s.end + pad));
    }
  }
  return speeches.map((s) => ({ start: s.start, end: s.end }));
}

// ---------------------------------------------------------------------------------------------
// Command line.

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) fail(`unexpected argument '${a}'`);
    let key = a.slice(2).replaceAll('-', '_');
    let value;
    const eq = key.indexOf('=');
    if (eq >= 0) {
      value = key.slice(eq + 1);
      key = key.slice(0, eq);
    } else {
      if (i + 1 >= argv.length) fail(`option --${key} needs a value`);
      value = argv[++i];
    }
    args[key] = value;
  }
  return args;
}

function number(args, key, what) {
  const text = args[key];
  const v = text === 'inf' || text === 'Infinity' ? Infinity : Number(text);
  if (text === undefined || text === '' || Number.isNaN(v)) {
    fail(`--${key.replaceAll('_', '-')} must be ${what}, got '${text}'`);
  }
  return v;
}

function segmenterParams(args) {
  const params = { ...defaultParams };
  for (const key of ['threshold', 'min_speech_duration_ms', 'max_speech_duration_s',
                     'min_silence_duration_ms', 'speech_pad_ms', 'min_silence_at_max_speech']) {
    if (key in args) params[key] = number(args, key, 'a number');
  }
  if ('neg_threshold' in args && args.neg_threshold !== 'auto') {
    params.neg_threshold = number(args, 'neg_threshold', 'a number or auto');
  }
  if ('use_max_poss_sil_at_max_speech' in args) {
    const v = args.use_max_poss_sil_at_max_speech;
    if (v !== 'true' && v !== 'false') fail('--use-max-poss-sil-at-max-speech must be true or false');
    params.use_max_poss_sil_at_max_speech = v === 'true';
  }
  return params;
}

const known = new Set(['model', 'wav', 'rate', 'round', 'probs', 'num_samples',
                       ...Object.keys(defaultParams)]);

async function main() {
  const args = parseArgs(process.argv.slice(2));
  for (const key of Object.keys(args)) {
    if (!known.has(key)) fail(`unknown option --${key.replaceAll('_', '-')}`);
  }
  const params = segmenterParams(args);
  let rate = 'rate' in args ? number(args, 'rate', '16000 or 8000') : null;
  if (rate !== null && rate !== 16000 && rate !== 8000) fail(`--rate must be 16000 or 8000`);

  let probs;
  let numSamples;
  let printedProbs;
  let unrounded = null;
  if ('probs' in args) {
    if ('model' in args || 'wav' in args) fail('--probs excludes --model and --wav');
    if (rate === null) fail('--probs needs --rate');
    const parsed = JSON.parse(readFileSync(args.probs, 'utf8'));
    const list = Array.isArray(parsed) ? parsed : parsed.frame_probs;
    if (!Array.isArray(list)) fail(`${args.probs}: expected an array or {"frame_probs": [...]}`);
    printedProbs = list;
    probs = list.map((x) => Math.fround(x));
    const window = rate === 16000 ? 512 : 256;
    numSamples = 'num_samples' in args ? number(args, 'num_samples', 'an integer')
                                       : probs.length * window;
    if (Math.ceil(numSamples / window) !== probs.length) {
      fail(`--num-samples ${numSamples} needs ${Math.ceil(numSamples / window)} probabilities ` +
           `at ${rate} Hz, the file has ${probs.length}`);
    }
  } else {
    if (!('model' in args) || !('wav' in args)) fail('need --model and --wav, or --probs');
    const wav = readWav(args.wav);
    if (rate === null) rate = wav.rate;
    if (wav.rate !== rate) {
      fail(`${args.wav} is ${wav.rate} Hz, --rate is ${rate}: resample it first ` +
           `(sox in.wav -r ${rate} out.wav)`);
    }
    if (rate !== 16000 && rate !== 8000) fail(`${args.wav} is ${rate} Hz: need 16000 or 8000`);
    const raw = await frameProbabilities(args.model, wav.samples, rate);
    numSamples = wav.samples.length;
    if ('round' in args) {
      const digits = number(args, 'round', 'a number of decimals');
      printedProbs = raw.map((x) => Number(x.toFixed(digits)));
      probs = printedProbs.map((x) => Math.fround(x));
      unrounded = speechTimestamps(raw, numSamples, rate, params);
    } else {
      printedProbs = raw;
      probs = raw;
    }
  }

  const segments = speechTimestamps(probs, numSamples, rate, params);
  const result = {
    sample_rate: rate,
    num_samples: numSamples,
    params: { ...params, max_speech_duration_s: String(params.max_speech_duration_s) },
    frame_probs: printedProbs,
    segments,
  };
  if (unrounded && JSON.stringify(unrounded) !== JSON.stringify(segments)) {
    result.segments_unrounded = unrounded;
  }
  process.stdout.write(JSON.stringify(result) + '\n');
}

main().catch((e) => fail(e.stack || String(e)));
