// brisvox demo page, text-to-speech box: text -> WebSocket /v1/tts -> Web Audio, sentence by
// sentence (the first sentence plays while the rest is synthesised). Needs a server started with
// --tts-voice; without one the box says so.
//
// Page URL options: ?token=T (passed to the server), ?deterministic=1 (noise scales 0, for tests:
// the audio then equals `brisvox say --noise-scale 0 --noise-w-scale 0`).
// Results for tests: window.brisvoxTts = { state, samples, sentences, firstAudioMs, error, ... }.
'use strict';

(() => {
  const params = new URLSearchParams(location.search);
  const token = params.get('token');
  const deterministic = params.get('deterministic') === '1';
  const $ = (id) => document.getElementById(id);
  const ui = { text: $('tts-text'), speak: $('tts-speak'), stop: $('tts-stop'), status: $('tts-status') };

  const tts = {
    state: 'idle',       // 'idle' | 'speaking' | 'done' | 'cancelled' | 'error'
    samples: 0,          // received for the current utterance
    sentences: 0,        // the current utterance's sentence count
    firstAudioMs: null,  // speak sent -> first audio received
    audioS: 0,           // seconds of audio received
    error: null,
    sampleRate: null,
    utterance: 0,        // the server's id of the current utterance
  };
  window.brisvoxTts = tts;

  let ws = null;
  let ctx = null;
  let player = null;     // plays the pieces back to back (player.js)
  let sentAt = 0;
  let expecting = null;  // the "audio" message whose binary comes next
  let cancelledUpto = 0;

  function status(text) { ui.status.textContent = text; }
  function busy(on) {
    ui.speak.disabled = on;
    ui.stop.disabled = !on;
  }

  function socketUrl() {
    const q = new URLSearchParams();
    if (token) q.set('token', token);
    if (deterministic) { q.set('noise_scale', '0'); q.set('noise_w_scale', '0'); }
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${scheme}//${location.host}/v1/tts?${q}`;
  }

  function open() {
    return new Promise((resolve, reject) => {
      const s = new WebSocket(socketUrl());
      s.binaryType = 'arraybuffer';
      let ready = false;
      s.onmessage = (e) => {
        if (typeof e.data !== 'string') { onAudio(e.data); return; }
        let m;
        try { m = JSON.parse(e.data); } catch (err) { return; }
        if (m.type === 'ready') {
          ready = true;
          tts.sampleRate = m.config.sample_rate;
          resolve(s);
          return;
        }
        onMessage(m);
      };
      s.onclose = (e) => {
        if (ws === s) ws = null;
        if (!ready) {
          // A refused upgrade: 404 without --tts-voice, 401 without the token.
          reject(new Error('the server refused text-to-speech (is it started with --tts-voice? is the token right?)'));
          return;
        }
        if (tts.state === 'speaking') fail(`the connection closed (code ${e.code}${e.reason ? ': ' + e.reason : ''})`);
      };
      s.onerror = () => {};
    });
  }

  function fail(message) {
    tts.state = 'error';
    tts.error = message;
    status(`Error: ${message}`);
    busy(false);
  }

  function onMessage(m) {
    switch (m.type) {
      case 'queued':
        tts.utterance = m.utterance;
        break;
      case 'audio':
        expecting = m;
        tts.sentences = m.sentences;
        break;
      case 'done':
        if (m.utterance !== tts.utterance) break;
        tts.state = 'done';
        status(`Done: ${m.sentences} sentence${m.sentences === 1 ? '' : 's'}, ${m.duration.toFixed(2)} s of audio; ` +
               `first audio after ${Math.round(tts.firstAudioMs)} ms.`);
        busy(false);
        break;
      case 'cancelled':
        if (m.utterance !== tts.utterance) break;
        tts.state = 'cancelled';
        status(`Stopped after ${m.duration.toFixed(2)} s of audio.`);
        busy(false);
        break;
      case 'error':
        fail(m.message || m.code);
        break;
      default:
        break;
    }
  }

  function onAudio(buffer) {
    const header = expecting;
    expecting = null;
    if (!header || header.utterance <= cancelledUpto || header.utterance !== tts.utterance) return;
    const pcm = new Int16Array(buffer);
    if (tts.firstAudioMs === null) {
      tts.firstAudioMs = performance.now() - sentAt;
      status(`Speaking… first audio after ${Math.round(tts.firstAudioMs)} ms.`);
    }
    tts.samples += pcm.length;
    tts.audioS += pcm.length / tts.sampleRate;
    if (player) player.play(pcm, tts.sampleRate);
  }

  async function speak() {
    const text = ui.text.value.trim();
    if (!text) { status('Type something to say first.'); return; }
    busy(true);
    Object.assign(tts, { state: 'speaking', samples: 0, sentences: 0, firstAudioMs: null, audioS: 0, error: null });
    try {
      if (!ctx) {
        ctx = new AudioContext({ latencyHint: 'interactive' });
        player = new BrisvoxPlayer(ctx);
      }
      if (ctx.state !== 'running') await ctx.resume().catch(() => {});
      if (!ws || ws.readyState !== WebSocket.OPEN) ws = await open();
    } catch (e) {
      fail(e && e.message ? e.message : String(e));
      return;
    }
    status('Synthesising…');
    sentAt = performance.now();
    ws.send(JSON.stringify({ type: 'speak', text }));
  }

  function stop() {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'cancel' }));
    cancelledUpto = tts.utterance;
    if (player) player.stop();
  }

  ui.speak.addEventListener('click', speak);
  ui.stop.addEventListener('click', stop);
  ui.text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) speak();
  });
})();
