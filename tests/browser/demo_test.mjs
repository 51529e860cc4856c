// End-to-end test of the demo page (web/) in a real browser: Debian's chromium, driven by
// playwright-core (both installed by tests/browser/setup_browser.sh), against `brisvox serve`.
//
//   node tests/browser/demo_test.mjs --brisvox build/release/brisvox --root .
//
// 1. Trims third_party/audio/sample.wav to 12 s (sox -D) in a temp dir, and asks
//    `brisvox vad --format json` for its segments: the expected answer.
// 2. Starts `brisvox serve --port 0 --token T` on loopback, reads the port from its "listening on"
//    line. A first page load without ?token= must show the refusal and end in state 'closed'; the
//    runs below pass ?token=T, which the page forwards to /v1/stream.
// 3. Launches headless chromium with a fake microphone that plays that WAV
//    (--use-file-for-fake-audio-capture; Chromium loops it, so the page is opened with
//    ?autostop_s=12: it stops after sending 12 s of audio, and sends {"type":"close"}).
// 4. Clicks Start, waits for window.brisvoxDemo.state === 'closed', and checks that the page shows
//    the CLI's segments (same count, each start/end within 0.1 s) and measured latencies. Not
//    bit-exact: Chromium's fake device converts the file to its capture format and the audio graph
//    resamples it to the page's AudioContext, and the page starts sending a few ms after the
//    device starts playing the file, so the model sees slightly shifted, resampled samples. Seen
//    here: edges equal to the CLI's or one 32 ms frame off.
// 5. Runs the page a second time with ?context_rate=native: the AudioContext at the device rate
//    and the page's own resampler (web/worklet.js), with the same checks.
// 6. The text-to-speech box (web/tts.js; the server runs with --tts-voice): types a two-sentence
//    reply, clicks Speak, waits for window.brisvoxTts.state === 'done', and checks that the page
//    received exactly the samples `brisvox say` makes for that text (?deterministic=1: noise scales
//    0), both sentences, a time to first audio, and the status line; then speaks a long text and
//    clicks Stop after the first audio: the page must end in 'cancelled'.
// 7. Transcripts (the server runs with --stt-model, the bundled Whisper tiny.en int8, so the page
//    asks for events=transcript): in runs 4 and 5 every segment must show its text under it, and
//    the words of the page's segments must be those `brisvox transcribe` finds in the clip (word
//    error rate <= 25 %: the page's segments are the CLI's within a frame, on resampled audio, and
//    the live stream uses the `fit` encoder window where the CLI uses `full`).
// 8. The conversation box (web/call.js, WebSocket /v1/call): the fake microphone plays a call made of
//    the sample's segment 8.83-11.49 s, CALL_GAP_S of silence, then its segment 0.32-6.91 s (sox).
//    The page is given a long typed reply after the echo and clicks Talk: the first segment's
//    transcript must appear (its words those `brisvox transcribe` finds, WER <= 40 %), the echo
//    reply "You said: <transcript>. <typed>" must be spoken (speak_started, audio received and
//    heard on the page's output), and the second segment, which starts while the reply plays, must
//    interrupt it: an `interrupted` with reason barge_in, the page's output silent within
//    MAX_STOP_DELAY_MS after it and nothing heard after that, no audio received for a stopped
//    reply. The call goes on listening (the second segment's transcript), and Hang up ends it
//    (close 1000, state 'closed'). The server has no turn model, so a reply follows each transcript.
// Screenshots go to $TMPDIR: brisvox_demo_page_refused.png (no token), brisvox_demo_page.png (after
// the first run), _live.png (during it), _native.png (after the second), _tts.png, _call.png (after
// the interruption) and _call_end.png (after Hang up).
//
// Missing chromium, playwright-core, sox or the sample is a FAILURE with a message saying how to
// install them: CI installs them, so their absence is a set-up bug, not a reason to skip.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const TOLERANCE_S = 0.1;
const CLIP_S = 12;
const TOKEN = 'demo-test-token';

function parseArgs(argv) {
  const args = { brisvox: null, root: null, chromium: process.env.BRISVOX_CHROMIUM || '/usr/bin/chromium' };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in args) || i + 1 >= argv.length) die(`usage: demo_test.mjs --brisvox BIN --root SRC [--chromium BIN] (bad '${argv[i]}')`);
    args[key] = argv[++i];
  }
  if (!args.brisvox || !args.root) die('usage: demo_test.mjs --brisvox BIN --root SRC [--chromium BIN]');
  args.root = path.resolve(args.root);
  return args;
}

function die(message) {
  console.error(`browser.demo_page: FAIL: ${message}`);
  process.exit(1);
}

function log(message) { console.log(`[demo_test] ${message}`); }

const args = parseArgs(process.argv.slice(2));
const setupHint = `run tests/browser/setup_browser.sh (or scripts/setup.sh) as root`;

// --- prerequisites (missing = failure) -----------------------------------------------------------
if (!fs.existsSync(args.chromium)) die(`chromium not found at ${args.chromium}: ${setupHint}`);
const pwEntry = path.join(args.root, 'third_party/node_modules/playwright-core/index.mjs');
if (!fs.existsSync(pwEntry)) die(`playwright-core not found at ${path.dirname(pwEntry)}: ${setupHint}`);
const sample = path.join(args.root, 'third_party/audio/sample.wav');
if (!fs.existsSync(sample)) die(`${sample} is missing: run scripts/setup.sh`);
if (spawnSync('sox', ['--version']).status !== 0) die('sox is missing: run scripts/setup.sh (apt package sox)');
if (!fs.existsSync(args.brisvox)) die(`brisvox binary not found: ${args.brisvox}`);
const webDir = path.join(args.root, 'web');
const voice = path.join(args.root, 'third_party/models/piper/en_US-joe-medium.onnx');
const STT_MODEL = 'tiny.en-int8';
const MAX_WER = 0.25;
if (!fs.existsSync(voice)) die(`${voice} is missing: run scripts/setup.sh`);
if (!fs.existsSync(path.join(webDir, 'index.html'))) die(`${webDir}/index.html is missing`);
const { chromium } = await import(pathToFileURL(pwEntry).href);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'brisvox-browser-'));
const shotDir = process.env.TMPDIR || os.tmpdir();
let server = null;
let context = null;

async function cleanup() {
  if (context) await context.close().catch(() => {});
  // The server must not outlive the test: SIGTERM (it drains within its 5 s default), and wait.
  if (server && server.child.exitCode === null) {
    const exited = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.kill('SIGTERM');
    const timer = setTimeout(() => server.child.kill('SIGKILL'), 8000);
    await exited;
    clearTimeout(timer);
  }
  fs.rmSync(tmp, { recursive: true, force: true });
}

function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(args.brisvox, ['serve', '--host', '127.0.0.1', '--port', '0', '--web-dir', webDir,
                                       '--token', TOKEN, '--tts-voice', voice, '--tts-workers', '1',
                                       '--stt-model', STT_MODEL],
                        { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`no "listening on" line in 30 s; stderr:\n${stderr}`)), 30000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr);
      if (m) { clearTimeout(timer); resolve({ child, port: Number(m[1]), log: () => stderr }); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`brisvox serve exited (${code}):\n${stderr}`)); });
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
  });
}

// A fresh headless chromium (its own profile) in `context`, and its page with the console recorded.
// With `wav`: a fake microphone playing that file in a loop, allowed without asking.
async function openBrowser(wav, height) {
  const profile = fs.mkdtempSync(path.join(tmp, 'profile-'));
  const mic = wav ? ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
                     `--use-file-for-fake-audio-capture=${wav}`] : [];
  context = await chromium.launchPersistentContext(profile, {
    executablePath: args.chromium,
    headless: true,
    permissions: wav ? ['microphone'] : [],
    viewport: { width: 1000, height },
    args: [
      ...mic,
      '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--autoplay-policy=no-user-gesture-required',
    ],
  });
  const page = context.pages()[0] || await context.newPage();
  const consoleLines = [];
  page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => consoleLines.push(`pageerror: ${e.message}`));
  return { page, consoleLines };
}

async function runPage(port, wav, query, shotName, liveShot) {
  const { page, consoleLines } = await openBrowser(wav, 720);
  try {
    await page.goto(`http://127.0.0.1:${port}/?${query}`);
    await page.getByRole('button', { name: 'Start' }).click();
    if (liveShot) {  // the scrolling view, mid-stream, for the record
      await page.waitForFunction(() => window.brisvoxDemo.samplesSent >= 7 * 16000 || window.brisvoxDemo.state === 'closed',
                                 null, { timeout: 30000 }).catch(() => {});
      await page.screenshot({ path: path.join(shotDir, liveShot), fullPage: true });
    }
    try {
      await page.waitForFunction(() => window.brisvoxDemo.state === 'closed', null, { timeout: 45000 });
    } catch (e) {
      const state = await page.evaluate(() => JSON.stringify(window.brisvoxDemo)).catch(() => '?');
      throw new Error(`the page did not reach state 'closed': ${state}\nconsole:\n${consoleLines.join('\n')}`);
    }
    const result = await page.evaluate(() => {
      const d = window.brisvoxDemo;
      return {
        state: d.state, segments: d.segments, latencies: d.latencies, error: d.error, closeCode: d.closeCode,
        contextRate: d.contextRate, resampling: d.resampling, samplesSent: d.samplesSent,
        listed: [...document.querySelectorAll('#segments li')].map((li) => li.textContent),
        p50: document.getElementById('p50').textContent, p95: document.getElementById('p95').textContent,
        status: document.getElementById('status').textContent,
      };
    });
    if (shotName) {
      result.screenshot = path.join(shotDir, shotName);
      await page.screenshot({ path: result.screenshot, fullPage: true });
    }
    result.console = consoleLines;
    return result;
  } finally {
    await context.close().catch(() => {});
    context = null;
  }
}

const TTS_TEXT = 'Hello from the demo page. This reply has two sentences.';
const TTS_LONG = 'This one goes on for a while. It has a second sentence. And a third one. And a fourth one, too.';

async function runTtsPage(port) {
  const { page, consoleLines } = await openBrowser(null, 900);
  try {
    await page.goto(`http://127.0.0.1:${port}/?token=${TOKEN}&deterministic=1`);
    const state = () => page.evaluate(() => JSON.stringify(window.brisvoxTts)).catch(() => '?');
    await page.getByLabel('Text to speak').fill(TTS_TEXT);
    await page.getByRole('button', { name: 'Speak' }).click();
    try {
      await page.waitForFunction(() => ['done', 'error', 'cancelled'].includes(window.brisvoxTts.state), null,
                                 { timeout: 30000 });
    } catch (e) {
      throw new Error(`the TTS box did not finish: ${await state()}\nconsole:\n${consoleLines.join('\n')}`);
    }
    const first = await page.evaluate(() => ({ ...window.brisvoxTts, status: document.getElementById('tts-status').textContent }));
    const shot = path.join(shotDir, 'brisvox_demo_page_tts.png');
    await page.screenshot({ path: shot, fullPage: true });
    // Barge-in: a long text, Stop after its first audio.
    await page.getByLabel('Text to speak').fill(TTS_LONG);
    await page.getByRole('button', { name: 'Speak' }).click();
    await page.waitForFunction(() => window.brisvoxTts.samples > 0 || window.brisvoxTts.state !== 'speaking', null,
                               { timeout: 30000 });
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.waitForFunction(() => window.brisvoxTts.state !== 'speaking', null, { timeout: 30000 })
      .catch(() => {});
    const stopped = await page.evaluate(() => ({ ...window.brisvoxTts, status: document.getElementById('tts-status').textContent }));
    return { first, stopped, shot, console: consoleLines };
  } finally {
    await context.close().catch(() => {});
    context = null;
  }
}

function checkTts(result, expectedSamples) {
  const problems = [];
  const f = result.first;
  if (f.state !== 'done') problems.push(`state ${f.state} (error ${f.error}), expected done`);
  if (f.samples !== expectedSamples) problems.push(`${f.samples} samples received, brisvox say makes ${expectedSamples}`);
  if (f.sentences !== 2) problems.push(`${f.sentences} sentences, expected 2`);
  if (!(f.firstAudioMs > 0 && f.firstAudioMs < 20000)) problems.push(`time to first audio ${f.firstAudioMs}`);
  if (!/^Done: 2 sentences/.test(f.status)) problems.push(`status '${f.status}'`);
  const s = result.stopped;
  if (s.state !== 'cancelled') problems.push(`after Stop: state ${s.state} (error ${s.error}), expected cancelled`);
  if (!/^Stopped after/.test(s.status)) problems.push(`after Stop: status '${s.status}'`);
  log(`tts: ${f.samples} samples at ${f.sampleRate} Hz, first audio after ${Math.round(f.firstAudioMs)} ms; ` +
      `stopped after ${s.audioS.toFixed(2)} s; screenshot ${result.shot}`);
  if (problems.length && result.console.length) log(`tts: browser console:\n  ${result.console.join('\n  ')}`);
  for (const p of problems) console.error(`browser.demo_page: tts: ${p}`);
  return problems.length === 0;
}

// Lower-case words without punctuation, as Whisper's English normaliser would compare them.
function words(text) {
  return text.toLowerCase().replace(/[^a-z0-9' ]+/g, ' ').split(/\s+/).filter(Boolean);
}

// Word error rate of `hyp` against `ref` (word lists): Levenshtein distance / reference length.
function wordErrorRate(ref, hyp) {
  let prev = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const row = [i];
    for (let j = 1; j <= hyp.length; j++) {
      row.push(Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ref[i - 1] === hyp[j - 1] ? 0 : 1)));
    }
    prev = row;
  }
  return ref.length ? prev[hyp.length] / ref.length : (hyp.length ? 1 : 0);
}

// The conversation: what the caller says, and the reply, long enough to still be playing when the
// caller's next segment starts CALL_GAP_S after the first one ended.
const CALL_GAP_S = 4.5;
const CALL_REPLY = 'And here is one more sentence, long enough that you will surely still be hearing it ' +
                   'when you start to speak again, so that you can interrupt me in the middle of it.';
const MAX_STOP_DELAY_MS = 100;  // the interrupted message to a silent output (analyser window 16 ms)
// The caller's first segment has 8 words, and Whisper hears its "ill-disposed" as "old-sposed" or
// not, run to run (2 of 8 words): a looser bound than the clip's, still far from another segment.
const CALL_MAX_WER = 0.4;

// sox: the sample's 8.83-11.49 s segment after 0.5 s of silence, CALL_GAP_S of silence, its
// 0.32-6.91 s segment, 2 s of silence (Chromium loops the file).
function makeCallWav() {
  const a = path.join(tmp, 'call_a.wav');
  const b = path.join(tmp, 'call_b.wav');
  const wav = path.join(tmp, 'call.wav');
  const fmt = ['-r', '16000', '-c', '1', '-b', '16'];
  for (const cmd of [['-D', sample, ...fmt, a, 'trim', '8.6', '=11.7', 'pad', '0.5', String(CALL_GAP_S)],
                     ['-D', sample, ...fmt, b, 'trim', '0.1', '=7.1', 'pad', '0', '2'],
                     [a, b, wav]]) {
    const r = spawnSync('sox', cmd, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`sox ${cmd.join(' ')} failed: ${r.stderr}`);
  }
  return wav;
}

async function runCallPage(port, wav) {
  const { page, consoleLines } = await openBrowser(wav, 900);
  try {
    const state = () => page.evaluate(() => JSON.stringify(window.brisvoxCall)).catch(() => '?');
    const waitFor = async (what, fn, timeout) => {
      try {
        await page.waitForFunction(fn, null, { timeout });
      } catch (e) {
        throw new Error(`call: ${what}: ${await state()}\nconsole:\n${consoleLines.join('\n')}`);
      }
    };
    await page.goto(`http://127.0.0.1:${port}/?token=${TOKEN}`);
    await page.getByLabel('Then say').fill(CALL_REPLY);
    await page.getByRole('button', { name: 'Talk' }).click();
    // The first segment's words, the echo, and the second segment talking over it: ~10 s of audio.
    await waitFor('no barge-in', () => window.brisvoxCall.interruptions.some((i) => i.reason === 'barge_in') ||
                                       window.brisvoxCall.state === 'closed', 40000);
    // The output watched for WATCH_MS after the stop; then the screenshot of the interrupted reply.
    await page.waitForTimeout(600);
    const shot = path.join(shotDir, 'brisvox_demo_page_call.png');
    await page.screenshot({ path: shot, fullPage: true });
    // Still listening after the barge-in: the words of the segment that interrupted.
    await waitFor('no second transcript', () => window.brisvoxCall.transcripts.length >= 2 ||
                                                window.brisvoxCall.state === 'closed', 30000);
    await page.getByRole('button', { name: 'Hang up' }).click();
    await waitFor('not closed after Hang up', () => window.brisvoxCall.state === 'closed', 15000);
    const result = await page.evaluate(() => ({
      ...window.brisvoxCall,
      listed: [...document.querySelectorAll('#call-log li')].map((li) => li.textContent),
      status: document.getElementById('call-status').textContent,
    }));
    result.shot = shot;
    result.endShot = path.join(shotDir, 'brisvox_demo_page_call_end.png');
    await page.screenshot({ path: result.endShot, fullPage: true });
    result.console = consoleLines;
    return result;
  } finally {
    await context.close().catch(() => {});
    context = null;
  }
}

// `expected`: the CLI's segments of the call's audio, with their text.
function checkCall(r, expected) {
  const problems = [];
  if (r.errors.length) problems.push(`errors: ${JSON.stringify(r.errors)}`);
  if (r.state !== 'closed' || r.closeCode !== 1000) problems.push(`ended in state ${r.state}, close code ${r.closeCode}`);
  if (r.trigger !== 'transcript') problems.push(`the turn ends at '${r.trigger}', expected transcript (no turn model)`);
  const order = ['listening', 'speaking', 'interrupted', 'closed'];
  const seen = r.states.map((x) => x.state);
  let k = 0;
  for (const st of seen) if (st === order[k]) k++;
  if (k < order.length) problems.push(`states ${seen.join(' > ')} do not go ${order.join(' > ')}`);
  const hangUp = seen.indexOf('closing');
  if (hangUp >= 0 && seen.slice(hangUp + 1).some((st) => st !== 'closed')) problems.push(`states after hanging up: ${seen.join(' > ')}`);

  const [said, over] = r.transcripts;
  const wer = said ? wordErrorRate(words(expected[0].text), words(said.text)) : 1;
  if (!said) problems.push('no transcript');
  else if (!(wer <= CALL_MAX_WER)) problems.push(`transcript '${said.text}' vs the CLI's '${expected[0].text}': WER ${(wer * 100).toFixed(1)} %`);
  if (!over) problems.push('no transcript of the segment that interrupted');

  const reply = r.replies[0];
  if (!reply) {
    problems.push('no reply');
  } else {
    if (said && reply.text !== `You said: ${said.text} ${CALL_REPLY}` && reply.text !== `You said: ${said.text}. ${CALL_REPLY}`) {
      problems.push(`reply '${reply.text}' is not the echo of '${said.text}' and the typed text`);
    }
    if (!reply.started || !(reply.samples > 0)) problems.push(`reply: started ${reply.started}, ${reply.samples} samples`);
    if (!(reply.peak > 0.01)) problems.push(`reply: the page's output peaked at ${reply.peak} while it played`);
    if (reply.outcome !== 'interrupted' || reply.reason !== 'barge_in') problems.push(`reply: outcome ${reply.outcome} (${reply.reason})`);
    if (!(reply.heard_ms > 0 && reply.sent_ms >= reply.heard_ms - 100)) problems.push(`reply: heard ${reply.heard_ms} ms, sent ${reply.sent_ms} ms`);
  }
  const barge = r.interruptions.find((i) => i.reason === 'barge_in' && reply && i.id === reply.id);
  if (!barge) {
    problems.push(`no barge_in interruption of the reply: ${JSON.stringify(r.interruptions)}`);
  } else {
    // The caller's second segment: the call's audio times are those of the file (give or take the
    // few ms before the page started sending).
    if (!(Math.abs(barge.speech_start - expected[1].start) < 0.3) || !(barge.at > barge.speech_start)) {
      problems.push(`the barge-in's speech started at ${barge.speech_start} s, the second segment at ${expected[1].start} s`);
    }
    if (!(barge.stopped > 0)) problems.push('the interruption stopped no scheduled audio: the reply was not playing');
    if (barge.stopDelayMs === null || barge.stopDelayMs > MAX_STOP_DELAY_MS) problems.push(`the output went silent ${barge.stopDelayMs} ms after the interruption`);
    if (!(barge.peakAfterStop < 1e-4)) problems.push(`the output peaked at ${barge.peakAfterStop} after the stop`);
  }
  if (r.droppedSamples !== 0) problems.push(`${r.droppedSamples} samples came for a stopped reply`);
  if (r.lateSamples > 0) log(`call: ${r.lateSamples} samples were in flight when the page hung up (not played)`);
  if (!r.listed.some((t) => said && t.includes(said.text))) problems.push(`the conversation list does not show the transcript: ${JSON.stringify(r.listed)}`);
  if (!r.listed.some((t) => /interrupted: [\d.]+ s heard, [\d.]+ s sent/.test(t))) problems.push(`the conversation list does not show the interruption: ${JSON.stringify(r.listed)}`);

  log(`call: transcripts ${JSON.stringify(r.transcripts.map((t) => t.text))}, WER of the first ${(wer * 100).toFixed(1)} %`);
  if (reply) {
    log(`call: reply ${reply.id}: ${reply.samples} samples received, output peak ${reply.peak.toFixed(3)}, ` +
        `${reply.outcome} (${reply.reason}): ${Math.round(reply.heard_ms)} ms heard, ${Math.round(reply.sent_ms)} ms sent`);
  }
  if (barge) {
    const from = `${barge.speech_start} s, confirmed at ${barge.at} s`;
    log(`call: barge-in: the caller's speech from ${from} (the CLI's segment: ${expected[1].start} s); the page told ` +
        `when ${barge.sentS.toFixed(2)} s of the caller's audio were sent; ${barge.stopped} scheduled pieces stopped, ` +
        `the output silent ${barge.stopDelayMs} ms after, its peak after that ${barge.peakAfterStop}`);
  }
  log(`call: states ${r.states.map((x) => `${x.state}@${x.t}`).join(' ')}; ${r.replies.length} replies, ` +
      `${r.samplesSent / 16000} s sent; screenshots ${r.shot}, ${r.endShot}`);
  if (problems.length && r.console.length) log(`call: browser console:\n  ${r.console.join('\n  ')}`);
  for (const p of problems) console.error(`browser.demo_page: call: ${p}`);
  return problems.length === 0;
}

function check(name, result, expected, expectedText) {
  const problems = [];
  if (result.error) problems.push(`the page reports an error: ${result.error}`);
  if (result.closeCode !== 1000) problems.push(`close code ${result.closeCode}, expected 1000`);
  if (result.samplesSent !== CLIP_S * 16000) problems.push(`sent ${result.samplesSent} samples, expected ${CLIP_S * 16000}`);
  const got = result.segments;
  if (got.length !== expected.length) {
    problems.push(`${got.length} segments, the CLI finds ${expected.length}`);
  } else {
    expected.forEach((e, i) => {
      const g = got[i];
      if (Math.abs(g.start - e.start) > TOLERANCE_S || Math.abs(g.end - e.end) > TOLERANCE_S) {
        problems.push(`segment ${i}: page ${g.start}-${g.end} vs CLI ${e.start}-${e.end} (tolerance ${TOLERANCE_S} s)`);
      }
    });
  }
  if (result.listed.length !== got.length) problems.push(`the list shows ${result.listed.length} items for ${got.length} segments`);
  got.forEach((g, i) => {
    if (!result.listed[i] || !result.listed[i].includes(g.start.toFixed(2)) || !result.listed[i].includes(g.end.toFixed(2))) {
      problems.push(`list item ${i} '${result.listed[i]}' does not show ${g.start}-${g.end}`);
    }
  });
  got.forEach((g, i) => {
    if (!g.text) problems.push(`segment ${i} (${g.start}-${g.end}) has no transcript`);
    else if (!result.listed[i].includes(g.text)) problems.push(`list item ${i} '${result.listed[i]}' does not show its text '${g.text}'`);
  });
  const pageText = got.map((g) => g.text || '').join(' ');
  const wer = wordErrorRate(words(expectedText), words(pageText));
  if (!(wer <= MAX_WER)) problems.push(`transcript '${pageText}' vs the CLI's '${expectedText}': WER ${(wer * 100).toFixed(1)} % > ${MAX_WER * 100} %`);
  const lat = result.latencies;
  // ~375 frames in 12 s; all but those completed by the final zero-padding have a latency.
  if (lat.length < 300) problems.push(`only ${lat.length} latencies measured`);
  if (!lat.every((x) => Number.isFinite(x) && x >= 0 && x < 5000)) problems.push('latencies out of range');
  if (!/^\d+ ms$/.test(result.p50) || !/^\d+ ms$/.test(result.p95)) problems.push(`latency not shown: p50 '${result.p50}', p95 '${result.p95}'`);

  const diffs = got.length === expected.length
    ? expected.map((e, i) => Math.max(Math.abs(got[i].start - e.start), Math.abs(got[i].end - e.end))) : [];
  log(`${name}: context ${result.contextRate} Hz (worklet resampling: ${result.resampling}), ` +
      `${result.samplesSent / 16000} s sent, ${lat.length} latencies, shown p50 ${result.p50}, p95 ${result.p95}`);
  log(`${name}: page segments ${JSON.stringify(got)}`);
  log(`${name}: transcript '${pageText}', WER against the CLI's ${(wer * 100).toFixed(1)} %`);
  if (diffs.length) log(`${name}: largest start/end difference to the CLI: ${(Math.max(...diffs) * 1000).toFixed(0)} ms`);
  log(`${name}: screenshot ${result.screenshot}`);
  if (problems.length) {
    if (result.console.length) log(`${name}: browser console:\n  ${result.console.join('\n  ')}`);
    for (const p of problems) console.error(`browser.demo_page: ${name}: ${p}`);
  }
  return problems.length === 0;
}

let ok = false;
try {
  const wav = path.join(tmp, 'speech.wav');
  const sox = spawnSync('sox', ['-D', sample, '-r', '16000', '-c', '1', '-b', '16', wav, 'trim', '0', String(CLIP_S)], { encoding: 'utf8' });
  if (sox.status !== 0) throw new Error(`sox failed: ${sox.stderr}`);
  const vad = spawnSync(args.brisvox, ['vad', '--format', 'json', wav], { encoding: 'utf8' });
  if (vad.status !== 0) throw new Error(`brisvox vad failed (${vad.status}): ${vad.stderr}`);
  const expected = JSON.parse(vad.stdout).segments;
  log(`CLI segments of the ${CLIP_S} s clip: ${JSON.stringify(expected)}`);
  if (expected.length < 2) throw new Error('the clip should hold at least two segments');
  const stt = spawnSync(args.brisvox, ['transcribe', '--model', STT_MODEL, '--format', 'json', wav], { encoding: 'utf8' });
  if (stt.status !== 0) throw new Error(`brisvox transcribe failed (${stt.status}): ${stt.stderr}`);
  const expectedText = JSON.parse(stt.stdout).text;
  log(`CLI transcript of the clip: '${expectedText}'`);
  if (words(expectedText).length < 10) throw new Error('the clip should hold at least ten words');

  server = await startServer();
  log(`server on port ${server.port}`);
  const runs = [
    ['browser resampling', `autostop_s=${CLIP_S}&token=${TOKEN}`, 'brisvox_demo_page.png', 'brisvox_demo_page_live.png'],
    ['page resampling', `autostop_s=${CLIP_S}&context_rate=native&token=${TOKEN}`, 'brisvox_demo_page_native.png', null],
  ];
  let passed = 0;
  {
    // Without ?token= the server refuses the stream: the page must say so and end the session.
    const result = await runPage(server.port, wav, '', 'brisvox_demo_page_refused.png', null);
    const refused = result.state === 'closed' && /refused/.test(result.error || '') && result.samplesSent === 0;
    log(`no token: state ${result.state}, error shown: ${JSON.stringify(result.error)}`);
    if (refused) passed++;
    else console.error(`browser.demo_page: no token: expected a refused stream, got ${JSON.stringify(result)}`);
  }
  for (const [name, query, shot, liveShot] of runs) {
    const result = await runPage(server.port, wav, query, shot, liveShot);
    if (check(name, result, expected, expectedText)) passed++;
  }
  {
    const raw = path.join(tmp, 'say.raw');
    const say = spawnSync(args.brisvox, ['say', '-q', '--voice', voice, '--noise-scale', '0', '--noise-w-scale', '0',
                                         '--format', 'raw', '-o', raw, TTS_TEXT], { encoding: 'utf8' });
    if (say.status !== 0) throw new Error(`brisvox say failed (${say.status}): ${say.stderr}`);
    if (checkTts(await runTtsPage(server.port), fs.statSync(raw).size / 2)) passed++;
  }
  {
    const callWav = makeCallWav();
    const r = spawnSync(args.brisvox, ['transcribe', '--model', STT_MODEL, '--format', 'json', callWav], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`brisvox transcribe failed (${r.status}): ${r.stderr}`);
    const callSegments = JSON.parse(r.stdout).segments;
    log(`CLI segments of the call: ${JSON.stringify(callSegments)}`);
    if (callSegments.length !== 2) throw new Error('the call should hold two segments');
    if (checkCall(await runCallPage(server.port, callWav), callSegments)) passed++;
  }
  const total = runs.length + 3;
  console.log(`browser.demo_page: ${passed} passed, ${total - passed} failed`);
  ok = passed === total;
  if (!ok) console.error(`server log:\n${server.log()}`);
} catch (e) {
  console.error(`browser.demo_page: FAIL: ${e && e.stack ? e.stack : e}`);
} finally {
  await cleanup();
}
process.exit(ok ? 0 : 1);
