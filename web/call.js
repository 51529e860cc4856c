// brisvox demo page, conversation box: a duplex call over WebSocket /v1/call. The microphone goes to
// the server as on /v1/stream (capture.js); the words the server hears are listed as they come, and
// when the caller's turn ends the page asks the server to speak a reply (what it heard, "You said:
// ...", and/or a typed text), which plays as it arrives (player.js). Talking over the reply
// interrupts it: the server stops it and says `interrupted`, and the page silences it at once.
//
// The end of a turn: `turn_end` when the server has a turn model (--turn-model), else the
// transcript of each speech segment (--stt-model), else the end of each segment. Needs a server
// with --tts-voice; without --stt-model there are no words to echo.
//
// Page URL options: ?token=T (passed to the server), ?context_rate=native (as for the stream box).
// Results for tests: window.brisvoxCall = { state, states, transcripts, replies, interruptions,
// samples, errors, ... } (below).
'use strict';

(() => {
  const RATE = BrisvoxCapture.RATE;  // the caller's audio, and the reply's: 16 kHz pcm_s16le
  const CHUNK_MS = 20;
  const SILENT = 1e-4;               // output peak under which the page is silent
  const WATCH_MS = 500;              // how long the output is watched after a stop

  const params = new URLSearchParams(location.search);
  const token = params.get('token');
  const nativeRate = params.get('context_rate') === 'native';

  const $ = (id) => document.getElementById(id);
  const ui = {
    toggle: $('call-toggle'), state: $('call-state'), detail: $('call-detail'), error: $('call-error'),
    echo: $('call-echo'), text: $('call-text'), log: $('call-log'), none: $('call-none'),
  };

  const call = {
    state: 'idle',      // 'idle' | 'connecting' | 'listening' | 'speaking' | 'interrupted' | 'closing' | 'closed'
    states: [],         // [{state, t}]: every change, t in ms since Talk
    trigger: null,      // what ends the caller's turn: 'turn_end' | 'transcript' | 'speech_end'
    config: null,       // the server's "ready" config
    transcripts: [],    // [{start, end, text}]: what the caller said, seconds of the call's audio
    replies: [],        // [{id, text, started, outcome: null|'done'|'interrupted'|'error', reason,
                        //   sent_ms, duration_ms, heard_ms, samples, peak}]
    interruptions: [],  // one per `interrupted`: [{id, reason, sent_ms, heard_ms, speech_start, at,
                        //   t, sentS: the caller's audio sent by then (s), stopped: pieces stopped,
                        //   stopDelayMs: to a silent output, peakAfterStop: the output's after that}]
    samples: 0,         // reply samples received
    droppedSamples: 0,  // received for no reply being spoken (a stopped one): not played
    lateSamples: 0,     // in flight when the page hung up: not played, not a stopped reply's
    samplesSent: 0,     // the caller's samples sent
    errors: [],
    closeCode: null,
  };
  window.brisvoxCall = call;

  let session = null;

  function setState(state, detail) {
    if (call.state !== state) {
      call.state = state;
      call.states.push({ state, t: session ? Math.round(performance.now() - session.t0) : 0 });
    }
    const names = {
      idle: 'Idle', connecting: 'Connecting', listening: 'Listening', speaking: 'Speaking',
      interrupted: 'Interrupted', closing: 'Hanging up', closed: 'Ended',
    };
    ui.state.textContent = names[state];
    ui.state.className = `state ${state}`;
    if (detail !== undefined) ui.detail.textContent = detail;
  }

  function showError(text) {
    call.errors.push(text);
    ui.error.textContent = text;
    ui.error.hidden = false;
  }

  function callUrl(models) {
    const events = [];
    if (models.turn) events.push('turn');
    if (models.stt) events.push('transcript');
    const q = new URLSearchParams({ sample_rate: String(RATE), encoding: 'pcm_s16le' });
    if (events.length) q.set('events', events.join(','));
    if (token) q.set('token', token);
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${scheme}//${location.host}/v1/call?${q}`;
  }

  // What the server can do: /healthz lists its models.
  async function serverModels() {
    const h = await (await fetch('/healthz')).json();
    const has = (family) => (h.models || []).some((m) => m.family === family);
    return { tts: has('piper_tts'), stt: has('whisper'), turn: has('smart_turn') };
  }

  // --- the call ----------------------------------------------------------------------------------
  async function start() {
    Object.assign(call, {
      states: [], trigger: null, config: null, transcripts: [], replies: [], interruptions: [],
      samples: 0, droppedSamples: 0, lateSamples: 0, samplesSent: 0, errors: [], closeCode: null,
    });
    ui.error.hidden = true;
    const s = {
      t0: performance.now(), ws: null, capture: null, player: null,
      analyser: null, level: null, meter: 0,  // the output's analyser, its buffer, the timer reading it
      models: null, log: [],   // the conversation, in order: {you: transcript} or {reply}
      awaiting: [],            // starts of the caller's segments whose transcript has not come
      heard: [],               // words heard since the last reply
      turnEnd: null,           // the end of the caller's turn (seconds) once it ended, until replied
      current: null,           // the reply whose audio comes now (between speak_started and its end)
      watch: null,             // the interruption whose silence is being measured
      nextId: 1, closing: false, closed: false, refused: false, timer: 0,
    };
    session = s;
    ui.toggle.textContent = 'Hang up';
    ui.toggle.className = 'stop';
    setState('connecting', 'opening the call…');
    render();

    try {
      s.models = await serverModels();
      if (s.closing) return;
      if (!s.models.tts) throw new Error('the server has no voice: start it with --tts-voice');
      call.trigger = s.models.turn ? 'turn_end' : s.models.stt ? 'transcript' : 'speech_end';
      ui.echo.disabled = !s.models.stt;  // no words to echo without a Whisper model
      const ready = openSocket(s, callUrl(s.models));
      ready.catch(() => {});  // awaited below; a refusal also ends the call in onClosed
      // The reply plays through the speakers while the microphone listens: echo cancellation keeps
      // it out of what the server hears, else the page would barge in on its own voice.
      s.capture = new BrisvoxCapture.Capture({
        native: nativeRate, chunkMs: CHUNK_MS, echoCancellation: true, onChunk: (buf) => send(s, buf),
      });
      await s.capture.prepare();
      await ready;
      if (s.closing) return;
      if (!(await s.capture.start())) return;
      // The replies play in the capture's context, through an analyser that tells when the output
      // is silent (how soon an interruption silences it).
      const ctx = s.capture.ctx;
      s.analyser = ctx.createAnalyser();
      s.analyser.fftSize = 256;
      s.level = new Float32Array(s.analyser.fftSize);
      s.analyser.connect(ctx.destination);
      s.player = new BrisvoxPlayer(ctx, s.analyser);
      s.player.onidle = () => settle(s);
      s.meter = setInterval(() => measure(s), 10);
      const until = { turn_end: 'the end of your turn', transcript: 'each thing you say', speech_end: 'each pause' };
      setState('listening', `say something: the reply comes after ${until[call.trigger]}.`);
    } catch (e) {
      if (s.closing || s.refused) return;
      fail(s, e && e.name === 'NotAllowedError' ? 'Microphone access was denied.'
                                                  : `Could not start: ${e && e.message ? e.message : e}`);
    }
  }

  function openSocket(s, url) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      s.ws = ws;
      ws.binaryType = 'arraybuffer';
      ws.onmessage = (e) => {
        if (typeof e.data !== 'string') { onAudio(s, e.data); return; }
        let m;
        try { m = JSON.parse(e.data); } catch (err) { return; }
        if (m.type === 'ready') {
          call.config = m.config;
          resolve();
        } else {
          onMessage(s, m);
        }
      };
      ws.onclose = (e) => {
        if (!call.config && !s.closing) {
          // Browsers hide the HTTP answer of a refused WebSocket upgrade.
          s.refused = true;
          showError('The server refused the call: a missing or wrong ?token= in this page\'s address, ' +
                    'or too many streams (the server log says which).');
        }
        reject(new Error('the call closed'));
        onClosed(s, e);
      };
    });
  }

  function send(s, buf) {
    if (s.closing || !s.ws || s.ws.readyState !== WebSocket.OPEN) return;
    s.ws.send(buf);
    call.samplesSent += buf.byteLength / 2;
  }

  function onMessage(s, m) {
    const reply = m.id !== undefined ? call.replies.find((r) => r.id === m.id) : undefined;
    switch (m.type) {
      case 'speech_start':
        if (s.models.stt) s.awaiting.push(m.start);
        if (call.state === 'listening') setState('listening', 'hearing you…');
        break;
      case 'speech_end':
        if (call.state === 'interrupted') setState('listening', 'go on: the reply stopped for you.');
        if (call.trigger === 'speech_end') endTurn(s, m.end);
        break;
      case 'transcript': {
        s.awaiting = s.awaiting.filter((start) => Math.abs(start - m.start) > 1e-6);
        const text = m.no_speech ? '' : m.text.trim();
        const t = { start: m.start, end: m.end, text };
        call.transcripts.push(t);
        s.log.push({ you: t });
        if (text) s.heard.push(text);
        render();
        if (call.trigger === 'transcript') endTurn(s, m.end);
        else tryReply(s);
        break;
      }
      case 'turn_end':
        endTurn(s, m.end);
        break;
      case 'speak_started':
        if (!reply) break;
        reply.started = true;
        s.current = reply;
        s.watch = null;  // new sound on the output from here: not a stopped reply's
        if (!s.closing) setState('speaking', 'talk over the reply to interrupt it.');
        render();
        break;
      case 'speak_done':
        if (!reply) break;
        reply.outcome = 'done';
        reply.duration_ms = m.duration_ms;
        if (s.current === reply) s.current = null;
        render();
        settle(s);
        break;
      case 'interrupted':
        interrupted(s, m, reply);
        break;
      case 'error':
        if (reply) { reply.outcome = 'error'; if (s.current === reply) s.current = null; render(); settle(s); }
        showError(`Server: ${m.code}: ${m.message}`);
        break;
      case 'overload':
        if (m.backlog_ms > 0) ui.detail.textContent = `the server is falling behind (${m.backlog_ms} ms backlog).`;
        break;
      default:
        break;  // mark, turn_incomplete
    }
  }

  // The caller's turn ended (its speech up to `end`, seconds): reply once its words are in.
  function endTurn(s, end) {
    s.turnEnd = end;
    tryReply(s);
  }

  function tryReply(s) {
    if (s.turnEnd === null || s.closing) return;
    // The echo needs the words of every segment that started before the turn ended.
    if (ui.echo.checked && s.awaiting.some((start) => start < s.turnEnd)) return;
    s.turnEnd = null;
    const said = s.heard.join(' ');
    s.heard = [];
    // With transcripts, a turn without words (a cough, a door) gets no reply.
    if (s.models.stt && !said) return;
    const parts = [];
    if (ui.echo.checked && said) parts.push(`You said: ${/[.!?]$/.test(said) ? said : `${said}.`}`);
    const typed = ui.text.value.trim();
    if (typed) parts.push(typed);
    if (!parts.length) return;
    const reply = {
      id: `r${s.nextId++}`, text: parts.join(' '), started: false, outcome: null, reason: null,
      sent_ms: null, duration_ms: null, heard_ms: null, samples: 0, peak: 0,
      pieces: [],  // [start, end] context times of each scheduled piece
    };
    call.replies.push(reply);
    s.log.push({ reply });
    s.ws.send(JSON.stringify({ type: 'speak', text: reply.text, id: reply.id }));
    render();
  }

  function onAudio(s, buffer) {
    const pcm = new Int16Array(buffer);
    const reply = s.current;
    // Between a reply's end and the next speak_started the server sends nothing; what would come
    // for a stopped reply must not play.
    // Hanging up cancels the reply, but what the server sent before it read the cancel still comes.
    if (s.closing) { call.lateSamples += pcm.length; return; }
    if (!reply || !s.player) { call.droppedSamples += pcm.length; return; }
    call.samples += pcm.length;
    reply.samples += pcm.length;
    const at = s.player.play(pcm, call.config.speech ? call.config.speech.sample_rate : RATE);
    if (at) reply.pieces.push([at.start, at.end]);
  }

  // How much of a reply the page has played by now, ms: the played part of each scheduled piece.
  // Not first start to now: when audio comes late, the gap between two pieces was silence.
  function heardMs(s, reply) {
    if (!s.capture || !s.capture.ctx) return 0;
    const now = s.capture.ctx.currentTime;
    let played = 0;
    for (const [start, end] of reply.pieces) played += Math.max(0, Math.min(now, end) - start);
    return played * 1000;
  }

  function interrupted(s, m, reply) {
    // A barge-in stops everything the call has said so far, a cancel too: silence it all now.
    const heard = reply ? heardMs(s, reply) : 0;
    const stopped = s.player ? s.player.stop() : 0;
    const rec = {
      id: m.id, reason: m.reason, sent_ms: m.sent_ms, heard_ms: heard, speech_start: m.speech_start,
      at: m.at, t: Math.round(performance.now() - s.t0), sentS: call.samplesSent / RATE, stopped,
      stopDelayMs: null, peakAfterStop: 0, since: performance.now(),
    };
    call.interruptions.push(rec);
    if (stopped > 0 || !s.watch) s.watch = rec;
    if (reply) {
      Object.assign(reply, { outcome: 'interrupted', reason: m.reason, sent_ms: m.sent_ms, heard_ms: heard });
      if (s.current === reply) s.current = null;
    }
    if (!s.closing && m.reason === 'barge_in') {
      setState('interrupted', `you talked over the reply: it stopped after ${fmt(heard / 1000)} s ` +
                              `(${fmt((m.sent_ms || 0) / 1000)} s sent).`);
    }
    render();
  }

  // Back to listening once the reply has been sent and has played out.
  function settle(s) {
    if (s.closing || s.current || (s.player && s.player.busy)) return;
    if (call.state === 'speaking') setState('listening', 'your turn.');
  }

  // Every 10 ms: the output's peak, for the reply playing (evidence that it was heard) and after a
  // stop (when the output went silent, and that nothing played after).
  function measure(s) {
    if (!s.analyser || s.closed) return;
    const buf = s.level;
    s.analyser.getFloatTimeDomainData(buf);
    let peak = 0;
    for (let i = 0; i < buf.length; i++) peak = Math.max(peak, Math.abs(buf[i]));
    if (s.current) s.current.peak = Math.max(s.current.peak, peak);
    const w = s.watch;
    if (!w) return;
    const since = performance.now() - w.since;
    if (w.stopDelayMs === null) {
      if (peak < SILENT) w.stopDelayMs = Math.round(since);
    } else {
      w.peakAfterStop = Math.max(w.peakAfterStop, peak);
    }
    if (since > WATCH_MS) s.watch = null;
  }

  function stop() {
    const s = session;
    if (!s || s.closing) return;
    s.closing = true;
    if (s.player) s.player.stop();
    if (s.capture) s.capture.close();
    if (s.ws && s.ws.readyState === WebSocket.OPEN) {
      // Hanging up: what the call was saying is not wanted any more (cancel), and close makes the
      // server send the caller's last events and end the call (close 1000).
      s.ws.send(JSON.stringify({ type: 'cancel' }));
      s.ws.send(JSON.stringify({ type: 'close' }));
      setState('closing', 'waiting for the last words…');
      ui.toggle.disabled = true;
      s.timer = setTimeout(() => s.ws.close(), 10000);  // the server closes first, normally
    } else if (s.ws) {
      s.ws.close();
    } else {
      onClosed(s, null);
    }
  }

  function fail(s, message) {
    showError(message);
    s.closing = true;
    if (s.ws && s.ws.readyState <= WebSocket.OPEN) s.ws.close();
    else onClosed(s, null);
  }

  function onClosed(s, e) {
    if (s.closed) return;
    s.closed = true;
    s.closing = true;
    clearTimeout(s.timer);
    clearInterval(s.meter);
    if (s.player) s.player.stop();
    if (s.capture) s.capture.close();
    call.closeCode = e ? e.code : null;
    if (e && e.code !== 1000 && call.config && !call.errors.length) {
      showError(`The call closed with code ${e.code}${e.reason ? ` (${e.reason})` : ''}.`);
    }
    const n = call.replies.length;
    setState('closed', `${call.transcripts.length} said, ${n} repl${n === 1 ? 'y' : 'ies'}, ` +
                       `${call.interruptions.filter((i) => i.reason === 'barge_in').length} interrupted.`);
    ui.toggle.textContent = 'Talk';
    ui.toggle.className = '';
    ui.toggle.disabled = false;
    render();
  }

  // --- rendering ---------------------------------------------------------------------------------
  const fmt = (x) => x.toFixed(1);

  function outcome(r) {
    switch (r.outcome) {
      case 'done': return `spoken (${fmt(r.duration_ms / 1000)} s)`;
      case 'interrupted':
        return r.reason === 'barge_in'
          ? `interrupted: ${fmt(r.heard_ms / 1000)} s heard, ${fmt(r.sent_ms / 1000)} s sent`
          : 'stopped: you hung up';
      case 'error': return 'failed';
      default: return r.started ? 'speaking…' : 'waiting…';
    }
  }

  function render() {
    const s = session;
    const items = (s ? s.log : []).map((entry) => {
      const li = document.createElement('li');
      const who = document.createElement('span');
      who.className = 'who';
      const text = document.createElement('q');
      if (entry.you) {
        li.className = 'you';
        who.textContent = 'You';
        text.textContent = entry.you.text || '(no words)';
        const when = document.createElement('span');
        when.className = 'when';
        when.textContent = `${entry.you.start.toFixed(2)}–${entry.you.end.toFixed(2)} s`;
        li.append(who, ' ', text, ' ', when);
      } else {
        const r = entry.reply;
        li.className = `reply ${r.outcome || 'pending'}`;
        who.textContent = 'brisvox';
        text.textContent = r.text;
        const out = document.createElement('span');
        out.className = 'outcome';
        out.textContent = outcome(r);
        li.append(who, ' ', text, ' ', out);
      }
      return li;
    });
    ui.log.replaceChildren(...items);
    ui.none.hidden = items.length > 0;
  }

  ui.toggle.addEventListener('click', () => {
    if (session && !session.closed) stop(); else start();
  });
})();
