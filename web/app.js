// brisvox demo page: microphone -> WebSocket /v1/stream -> live speech probability and segments.
//
// Page URL options: ?token=T (passed to the server), ?autostop_s=N (stop after N s of audio sent:
// for tests, whose fake microphone loops its file), ?context_rate=native (run the AudioContext at
// the device's rate and resample in the worklet instead of asking the browser for 16 kHz).
// Results for tests: window.brisvoxDemo = { state, segments, latencies, error, ... }.
'use strict';

(() => {
  const RATE = BrisvoxCapture.RATE;  // what the page sends: 16 kHz mono pcm_s16le
  const FRAME = 512;         // the model's frame at 16 kHz (32 ms)
  const CHUNK_MS = 20;       // audio per WebSocket message
  const VIEW_S = 10;         // seconds of timeline shown while streaming
  const STATS_WINDOW = 500;  // latency percentiles over the last N frames

  const params = new URLSearchParams(location.search);
  const token = params.get('token');
  const autostopS = Number(params.get('autostop_s')) || 0;
  const nativeRate = params.get('context_rate') === 'native';

  const $ = (id) => document.getElementById(id);
  const ui = {
    toggle: $('toggle'), status: $('status'), error: $('error'), p50: $('p50'), p95: $('p95'),
    sent: $('sent'), canvas: $('timeline'), list: $('segments'), none: $('no-segments'), count: $('count'),
  };

  const demo = {
    state: 'idle',     // 'idle' | 'streaming' | 'closed'
    segments: [],      // finished segments [{start, end}], seconds of stream audio
    latencies: [],     // ms, one per vad event whose audio this page sent
    error: null,       // a message when the session failed
    openSegment: null, // {start} while speech is going on
    config: null,      // the server's "ready" config
    contextRate: null, // the AudioContext's rate
    resampling: null,  // true when the worklet resamples (context not at 16 kHz)
    samplesSent: 0,
    closeCode: null,
  };
  window.brisvoxDemo = demo;

  let session = null;

  // Whether the server transcribes (it has a Whisper model: /healthz lists its models).
  let transcribes = false;
  fetch('/healthz').then((r) => r.json()).then((h) => {
    transcribes = (h.models || []).some((m) => m.family === 'whisper');
  }).catch(() => {});

  function streamUrl() {
    const events = transcribes ? 'vad,transcript' : 'vad';
    const q = new URLSearchParams({ sample_rate: String(RATE), encoding: 'pcm_s16le', events });
    if (token) q.set('token', token);
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${scheme}//${location.host}/v1/stream?${q}`;
  }

  function setStatus(text) { ui.status.textContent = text; }
  function showError(text) {
    demo.error = text;
    ui.error.textContent = text;
    ui.error.hidden = false;
  }

  // --- session -----------------------------------------------------------------------------------
  async function start() {
    Object.assign(demo, {
      state: 'streaming', segments: [], latencies: [], error: null, openSegment: null, config: null,
      contextRate: null, resampling: null, samplesSent: 0, closeCode: null,
    });
    ui.error.hidden = true;
    const s = {
      ws: null, capture: null,
      sent: [], sentIdx: 0,  // [{end: cumulative samples, t: performance.now()}] of each message
      probs: [],             // [t, p]
      stopping: false, userStopped: false, refused: false, closed: false, timer: 0,
    };
    session = s;
    ui.toggle.textContent = 'Stop';
    ui.toggle.className = 'stop';
    setStatus('Connecting…');
    renderSegments();
    renderStats();
    requestAnimationFrame(drawLoop);

    try {
      const ready = openSocket(s);
      ready.catch(() => {});  // awaited below; a refusal also ends the session in onClosed
      s.capture = new BrisvoxCapture.Capture({
        native: nativeRate, chunkMs: CHUNK_MS, onChunk: (buf) => onAudio(s, buf),
        onInfo: (info) => { demo.resampling = info.resampling; },
      });
      await s.capture.prepare();
      await ready;
      if (s.stopping) return;
      if (!(await s.capture.start())) return;
      demo.contextRate = s.capture.sampleRate;
      const from = demo.contextRate === RATE ? 'resampled to 16 kHz by the browser'
                                             : `resampled from ${demo.contextRate / 1000} kHz by the page`;
      setStatus(`Listening: ${from}. Speak!`);
    } catch (e) {
      if (s.userStopped || s.refused) return finishAudio(s);
      fail(s, e && e.name === 'NotAllowedError' ? 'Microphone access was denied.'
                                                  : `Could not start: ${e && e.message ? e.message : e}`);
    }
  }

  function openSocket(s) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(streamUrl());
      s.ws = ws;
      ws.binaryType = 'arraybuffer';
      ws.onmessage = (e) => {
        if (typeof e.data !== 'string') return;
        let m;
        try { m = JSON.parse(e.data); } catch (err) { return; }
        if (m.type === 'ready') {
          demo.config = m.config;
          resolve();
        } else {
          onEvent(s, m, performance.now());
        }
      };
      ws.onclose = (e) => {
        if (!demo.config && !s.userStopped) {
          // Browsers hide the HTTP answer of a refused WebSocket upgrade.
          s.refused = true;
          showError('The server refused the stream: a missing or wrong ?token= in this page\'s address, ' +
                    'or too many streams (the server log says which).');
        }
        reject(new Error('the stream closed'));
        onClosed(s, e);
      };
    });
  }

  function onAudio(s, data) {
    if (s.stopping || !s.ws || s.ws.readyState !== WebSocket.OPEN) return;
    let buf = data;
    if (autostopS > 0) {
      const left = Math.round(autostopS * RATE) - demo.samplesSent;
      if (left <= 0) return stop();
      if (buf.byteLength / 2 > left) buf = buf.slice(0, left * 2);
    }
    s.ws.send(buf);
    demo.samplesSent += buf.byteLength / 2;
    s.sent.push({ end: demo.samplesSent, t: performance.now() });
    if (autostopS > 0 && demo.samplesSent >= Math.round(autostopS * RATE)) stop();
  }

  function onEvent(s, m, now) {
    switch (m.type) {
      case 'vad': {
        s.probs.push([m.t, m.p]);
        // The message that completed this frame: the first whose cumulative end reaches it.
        const need = Math.round(m.t * RATE) + FRAME;
        while (s.sentIdx < s.sent.length && s.sent[s.sentIdx].end < need) s.sentIdx++;
        if (s.sentIdx < s.sent.length) demo.latencies.push(now - s.sent[s.sentIdx].t);
        if (s.sentIdx > 4096) { s.sent.splice(0, s.sentIdx); s.sentIdx = 0; }
        break;
      }
      case 'speech_start':
        demo.openSegment = { start: m.start };
        renderSegments();
        ui.canvas.setAttribute('aria-label', `Speech probability over time: speaking since ${fmt(m.start)} s`);
        break;
      case 'speech_end':
        demo.segments.push({ start: m.start, end: m.end });
        demo.openSegment = null;
        renderSegments();
        ui.canvas.setAttribute('aria-label',
          `Speech probability over time: ${demo.segments.length} speech segments, last ended at ${fmt(m.end)} s`);
        break;
      case 'transcript': {
        // The words of a segment that ended: shown under it.
        const seg = demo.segments.find((g) => Math.abs(g.start - m.start) < 1e-6 && Math.abs(g.end - m.end) < 1e-6);
        if (seg) seg.text = m.no_speech ? '' : m.text.trim();
        renderSegments();
        break;
      }
      case 'overload':
        if (m.backlog_ms > 0) setStatus(`The server is falling behind (${m.backlog_ms} ms backlog).`);
        break;
      case 'error':
        showError(`Server: ${m.code}: ${m.message}`);
        break;
      default:
        break;  // flushed, reset
    }
  }

  function stop() {
    const s = session;
    if (!s || s.stopping) return;
    s.stopping = true;
    s.userStopped = true;
    finishAudio(s);
    if (s.ws && s.ws.readyState === WebSocket.OPEN) {
      s.ws.send(JSON.stringify({ type: 'close' }));
      setStatus('Finishing: waiting for the last events…');
      ui.toggle.disabled = true;
      s.timer = setTimeout(() => s.ws.close(), 10000);  // the server closes first, normally
    } else if (s.ws) {
      s.ws.close();
    }
  }

  function fail(s, message) {
    showError(message);
    s.stopping = true;
    finishAudio(s);
    if (s.ws && s.ws.readyState <= WebSocket.OPEN) s.ws.close();
    else onClosed(s, null);
  }

  function finishAudio(s) {
    if (s.capture) s.capture.close();
  }

  function onClosed(s, e) {
    if (s.closed) return;
    s.closed = true;
    clearTimeout(s.timer);
    s.stopping = true;
    finishAudio(s);
    demo.closeCode = e ? e.code : null;
    if (e && e.code !== 1000 && !demo.error && !(s.userStopped && !demo.config)) {
      showError(`The connection closed with code ${e.code}${e.reason ? ` (${e.reason})` : ''}.`);
    }
    demo.openSegment = null;
    demo.state = 'closed';
    ui.toggle.textContent = 'Start';
    ui.toggle.className = 'start';
    ui.toggle.disabled = false;
    const n = demo.segments.length;
    setStatus(`Closed: ${n} segment${n === 1 ? '' : 's'} in ${fmt(demo.samplesSent / RATE)} s of audio.`);
    renderSegments();
    renderStats();
    draw();
  }

  // --- rendering ---------------------------------------------------------------------------------
  const fmt = (x) => x.toFixed(2);

  function renderSegments() {
    const items = demo.segments.map((seg) => {
      const li = document.createElement('li');
      li.textContent = `${fmt(seg.start)} s – ${fmt(seg.end)} s`;
      const dur = document.createElement('span');
      dur.className = 'dur';
      dur.textContent = `(${fmt(seg.end - seg.start)} s)`;
      li.append(dur);
      if (seg.text) {
        const text = document.createElement('q');
        text.className = 'transcript';
        text.textContent = seg.text;
        li.append(' ', text);
      }
      return li;
    });
    if (demo.openSegment) {
      const li = document.createElement('li');
      li.className = 'open';
      li.textContent = `${fmt(demo.openSegment.start)} s – speaking…`;
      items.push(li);
    }
    ui.list.replaceChildren(...items);
    ui.none.hidden = items.length > 0;
    ui.count.textContent = demo.segments.length ? `(${demo.segments.length})` : '';
  }

  function percentile(sorted, q) {
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
  }

  function renderStats() {
    const recent = demo.latencies.slice(-STATS_WINDOW).sort((a, b) => a - b);
    ui.p50.textContent = recent.length ? `${Math.round(percentile(recent, 0.5))} ms` : '–';
    ui.p95.textContent = recent.length ? `${Math.round(percentile(recent, 0.95))} ms` : '–';
    ui.sent.textContent = demo.samplesSent ? `${(demo.samplesSent / RATE).toFixed(1)} s` : '–';
  }

  let lastStats = 0;
  function drawLoop(now) {
    if (demo.state !== 'streaming') return;
    draw();
    if (now - lastStats > 250) { renderStats(); lastStats = now; }
    requestAnimationFrame(drawLoop);
  }

  function draw() {
    const s = session;
    const c = ui.canvas;
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(c.clientWidth * dpr));
    const h = Math.max(1, Math.round(c.clientHeight * dpr));
    if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
    const g = c.getContext('2d');
    const css = getComputedStyle(document.documentElement);
    const color = (name) => css.getPropertyValue(name).trim();
    g.clearRect(0, 0, w, h);
    if (!s) return;

    const probs = s.probs;
    const latest = probs.length ? probs[probs.length - 1][0] + FRAME / RATE : 0;
    // Streaming: the last VIEW_S seconds, scrolling. Closed: the whole session.
    const t1 = demo.state === 'closed' ? Math.max(latest, demo.samplesSent / RATE, 1) : Math.max(latest, VIEW_S);
    const t0 = demo.state === 'closed' ? 0 : t1 - VIEW_S;
    const pad = { l: 34 * dpr, r: 8 * dpr, t: 8 * dpr, b: 20 * dpr };
    const pw = w - pad.l - pad.r, ph = h - pad.t - pad.b;
    const x = (t) => pad.l + ((t - t0) / (t1 - t0)) * pw;
    const y = (p) => pad.t + (1 - p) * ph;

    // Grid and time labels.
    g.font = `${11 * dpr}px system-ui, sans-serif`;
    g.fillStyle = color('--muted');
    g.strokeStyle = color('--border');
    g.lineWidth = 1;
    const span = t1 - t0;
    const step = span <= 12 ? 1 : span <= 30 ? 2 : span <= 60 ? 5 : span <= 300 ? 30 : 60;
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (let t = Math.ceil(t0 / step) * step; t <= t1 + 1e-9; t += step) {
      g.beginPath(); g.moveTo(x(t), pad.t); g.lineTo(x(t), pad.t + ph); g.stroke();
      const label = `${t}s`;
      const half = g.measureText(label).width / 2;
      g.fillText(label, Math.min(x(t), w - half - 2 * dpr), pad.t + ph + 4 * dpr);
    }
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (const p of [0, 0.5, 1]) g.fillText(String(p), pad.l - 6 * dpr, y(p));

    // Detected speech, shaded (the open segment up to now).
    const spans = demo.segments.map((seg) => [seg.start, seg.end]);
    if (demo.openSegment) spans.push([demo.openSegment.start, latest]);
    g.fillStyle = color('--span');
    g.strokeStyle = color('--span-edge');
    for (const [a, b] of spans) {
      if (b < t0 || a > t1) continue;
      const xa = x(Math.max(a, t0)), xb = x(Math.min(b, t1));
      g.fillRect(xa, pad.t, xb - xa, ph);
      g.beginPath(); g.moveTo(xa, pad.t); g.lineTo(xa, pad.t + ph); g.moveTo(xb, pad.t); g.lineTo(xb, pad.t + ph); g.stroke();
    }

    // Threshold.
    const threshold = demo.config ? demo.config.threshold : 0.5;
    g.strokeStyle = color('--threshold');
    g.setLineDash([6 * dpr, 4 * dpr]);
    g.beginPath(); g.moveTo(pad.l, y(threshold)); g.lineTo(pad.l + pw, y(threshold)); g.stroke();
    g.setLineDash([]);

    // Probability, one point per frame (at its centre).
    g.strokeStyle = color('--line');
    g.lineWidth = 2 * dpr;
    g.lineJoin = 'round';
    g.beginPath();
    let first = true;
    const half = FRAME / RATE / 2;
    for (let i = 0; i < probs.length; i++) {
      const t = probs[i][0] + half;
      if (t < t0 - 0.1) continue;
      if (first) { g.moveTo(x(t), y(probs[i][1])); first = false; } else g.lineTo(x(t), y(probs[i][1]));
    }
    g.stroke();
  }

  ui.toggle.addEventListener('click', () => {
    if (demo.state === 'streaming') stop(); else start();
  });
  window.addEventListener('resize', () => { if (demo.state !== 'streaming') draw(); });
  renderSegments();
  draw();
})();
