// brisvox demo page: plays the server's speech through Web Audio as it arrives, shared by the
// text-to-speech box (tts.js) and the conversation (call.js).
//
// Speech comes in pieces (a sentence, or ~100 ms of a call's reply) of 16-bit PCM. Each piece is
// scheduled to start where the one before ends, so that they play back to back without gaps
// however the network delivers them; stop() silences everything at once (a barge-in, Stop).
'use strict';

window.BrisvoxPlayer = class PcmPlayer {
  // destination: the node the pieces play into (the context's destination, or a node in front of it).
  constructor(ctx, destination = ctx.destination) {
    this.ctx = ctx;
    this.destination = destination;
    this.playAt = 0;            // context time where the next piece starts
    this.sources = new Set();   // scheduled or playing, not yet ended
    this.onidle = null;         // called when the last piece has played out (not after stop())
  }

  // Schedules one piece (an Int16Array at `rate` Hz) after what is scheduled; returns its
  // {start, end} on the context's clock, or null for an empty piece.
  play(pcm, rate) {
    if (pcm.length === 0) return null;
    const audio = this.ctx.createBuffer(1, pcm.length, rate);
    const ch = audio.getChannelData(0);
    for (let i = 0; i < pcm.length; i++) ch[i] = pcm[i] / 32768;
    const src = this.ctx.createBufferSource();
    src.buffer = audio;
    src.connect(this.destination);
    // When playback has caught up, a little after now: a piece started "now" loses its first
    // milliseconds to the render quantum in flight.
    const start = Math.max(this.ctx.currentTime + 0.02, this.playAt);
    src.start(start);
    this.playAt = start + audio.duration;
    this.sources.add(src);
    src.onended = () => {
      this.sources.delete(src);
      if (this.sources.size === 0 && this.onidle) this.onidle();
    };
    return { start, end: this.playAt };
  }

  // Whether anything is scheduled or playing.
  get busy() { return this.sources.size > 0; }

  // Stops what plays and drops what is scheduled; the next piece starts afresh. Returns how many
  // pieces that was.
  stop() {
    const n = this.sources.size;
    for (const src of this.sources) {
      src.onended = null;
      try { src.stop(); } catch (e) { /* not started */ }
      src.disconnect();  // silent from this render quantum on, whatever stop() still has to do
    }
    this.sources.clear();
    this.playAt = 0;
    return n;
  }
};
