// brisvox demo page: the microphone as 16 kHz mono pcm_s16le chunks, shared by the live stream
// (app.js) and the conversation (call.js).
//
// The AudioContext runs at 16 kHz when the browser can resample the microphone to it; else (or
// with `native`) at the device's rate, and the capture worklet (worklet.js) resamples. Two steps,
// so that a page can open its WebSocket while the worklet loads and ask for the microphone only
// once the server has accepted the session: prepare() (context and worklet), then start().
'use strict';

window.BrisvoxCapture = (() => {
  const RATE = 16000;

  async function makeContext(native) {
    if (!native) {
      try { return new AudioContext({ sampleRate: RATE, latencyHint: 'interactive' }); } catch (e) { /* below */ }
    }
    return new AudioContext({ latencyHint: 'interactive' });
  }

  class Capture {
    // onChunk(ArrayBuffer): chunkMs of audio; onInfo({inputRate, resampling}): the worklet's set-up.
    // echoCancellation: for a page that plays sound while it listens (the conversation), so that
    // the microphone does not hear the page's own speaker; off for plain listening, where the
    // browser's processing would only alter what the model sees.
    constructor({ native = false, chunkMs = 20, echoCancellation = false, onChunk, onInfo = () => {} }) {
      Object.assign(this, { native, chunkMs, echoCancellation, onChunk, onInfo });
      this.ctx = this.stream = this.source = this.node = null;
      this.closed = false;
    }

    get sampleRate() { return this.ctx ? this.ctx.sampleRate : null; }

    async prepare() {
      this.ctx = await makeContext(this.native);
      if (this.closed) this.ctx.close();  // closed while the context was being made
      else await this.ctx.audioWorklet.addModule('worklet.js');
    }

    // Asks for the microphone and starts sending chunks. False when close() came first.
    async start() {
      const ec = this.echoCancellation;
      const stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: ec, noiseSuppression: false, autoGainControl: false },
      });
      if (this.closed) {
        stream.getTracks().forEach((t) => t.stop());
        return false;
      }
      this.stream = stream;
      try {
        this.source = this.ctx.createMediaStreamSource(stream);
      } catch (e) {
        // Some browsers cannot feed a 16 kHz context from a 48 kHz microphone: resample ourselves.
        await this.ctx.close();
        this.ctx = await makeContext(true);
        await this.ctx.audioWorklet.addModule('worklet.js');
        this.source = this.ctx.createMediaStreamSource(stream);
      }
      this.node = new AudioWorkletNode(this.ctx, 'brisvox-capture', {
        numberOfInputs: 1, numberOfOutputs: 0, channelCountMode: 'explicit', channelCount: 1,
        processorOptions: { chunkMs: this.chunkMs },
      });
      this.node.port.onmessage = (e) => {
        if (e.data instanceof ArrayBuffer) this.onChunk(e.data);
        else if (e.data && e.data.type === 'info') this.onInfo(e.data);
      };
      this.source.connect(this.node);
      if (this.ctx.state !== 'running') await this.ctx.resume();
      return true;
    }

    // Stops the microphone and closes the context (and whatever plays through it). Idempotent.
    close() {
      this.closed = true;
      if (this.node) { this.node.port.onmessage = null; this.node.disconnect(); }
      if (this.source) this.source.disconnect();
      if (this.stream) this.stream.getTracks().forEach((t) => t.stop());
      if (this.ctx && this.ctx.state !== 'closed') this.ctx.close();
      this.node = this.source = this.stream = null;
    }
  }

  return { RATE, Capture };
})();
