// AudioWorklet: microphone -> 16 kHz mono s16le chunks, posted to the page.
//
// The page asks for a 16 kHz AudioContext, where the browser resamples the microphone itself and
// this processor only mixes to mono and converts. When the context runs at another rate, this
// processor resamples with a windowed-sinc low-pass filter (cut-off a little under 8 kHz) evaluated
// at each output instant: a correct band-limited decimation for any ratio (48 000, 44 100, ...).
'use strict';

const OUT_RATE = 16000;

class SincResampler {
  constructor(inRate, outRate) {
    this.step = inRate / outRate;                        // input samples per output sample
    const fc = 0.5 * Math.min(1, outRate / inRate) * 0.9; // cut-off, cycles per input sample
    const zeroCrossings = 16;
    this.half = Math.ceil(zeroCrossings / (2 * fc));     // half width, input samples
    this.res = 128;                                      // table points per input sample
    const n = this.half * this.res + 2;
    this.table = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const x = i / this.res;
      const r = x / this.half;
      if (r >= 1) continue;
      const a = 2 * Math.PI * fc * x;
      const sinc = x === 0 ? 1 : Math.sin(a) / a;
      const blackman = 0.42 + 0.5 * Math.cos(Math.PI * r) + 0.08 * Math.cos(2 * Math.PI * r);
      this.table[i] = 2 * fc * sinc * blackman;
    }
    this.buf = new Float32Array(8192);
    this.len = 0;   // samples held in buf
    this.base = 0;  // absolute input index of buf[0]
    this.k = 0;     // index of the next output sample
  }

  h(x) {
    const p = Math.abs(x) * this.res;
    const i = Math.floor(p);
    const f = p - i;
    return this.table[i] * (1 - f) + this.table[i + 1] * f;
  }

  // Appends input samples; calls emit(v) for every output sample that can be computed.
  push(input, emit) {
    if (this.len + input.length > this.buf.length) {
      const grown = new Float32Array(Math.max(this.buf.length * 2, this.len + input.length));
      grown.set(this.buf.subarray(0, this.len));
      this.buf = grown;
    }
    this.buf.set(input, this.len);
    this.len += input.length;
    const end = this.base + this.len;  // absolute index one past the last input sample
    for (;;) {
      const pos = this.k * this.step;
      const center = Math.floor(pos);
      if (center + this.half >= end) break;
      let acc = 0;
      for (let j = center - this.half + 1; j <= center + this.half; j++) {
        const idx = j - this.base;
        if (idx >= 0) acc += this.buf[idx] * this.h(j - pos);  // before the stream: silence
      }
      emit(acc);
      this.k++;
    }
    // Drop the input no later output sample can reach.
    const keepFrom = Math.floor(this.k * this.step) - this.half;
    const drop = Math.min(this.len, Math.max(0, keepFrom - this.base));
    if (drop > 0) {
      this.buf.copyWithin(0, drop, this.len);
      this.len -= drop;
      this.base += drop;
    }
  }
}

class CaptureProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const chunkMs = (options.processorOptions && options.processorOptions.chunkMs) || 20;
    this.chunk = Math.round((OUT_RATE * chunkMs) / 1000);
    this.out = new Int16Array(this.chunk);
    this.fill = 0;
    this.resampler = sampleRate === OUT_RATE ? null : new SincResampler(sampleRate, OUT_RATE);
    this.mono = new Float32Array(128);
    this.emit = (v) => {
      const s = v < -1 ? -1 : v > 1 ? 1 : v;
      this.out[this.fill++] = Math.round(s * 32767);
      if (this.fill === this.chunk) {
        this.port.postMessage(this.out.buffer, [this.out.buffer]);
        this.out = new Int16Array(this.chunk);
        this.fill = 0;
      }
    };
    this.port.postMessage({ type: 'info', inputRate: sampleRate, resampling: this.resampler !== null });
  }

  process(inputs) {
    const channels = inputs[0];
    if (!channels || channels.length === 0) return true;
    const n = channels[0].length;
    if (this.mono.length !== n) this.mono = new Float32Array(n);
    const mono = this.mono;
    if (channels.length === 1) {
      mono.set(channels[0]);
    } else {
      mono.fill(0);
      for (const ch of channels) for (let i = 0; i < n; i++) mono[i] += ch[i];
      for (let i = 0; i < n; i++) mono[i] /= channels.length;
    }
    if (this.resampler) {
      this.resampler.push(mono, this.emit);
    } else {
      for (let i = 0; i < n; i++) this.emit(mono[i]);
    }
    return true;
  }
}

registerProcessor('brisvox-capture', CaptureProcessor);
