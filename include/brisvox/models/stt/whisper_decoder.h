// Whisper's decoder, one token per sequence per step, for many sequences at once.
//
// A WhisperDecoder belongs to one worker thread. It owns `max_lanes` lanes; a lane holds one
// sequence's state: its self-attention keys/values (one row per position fed so far, up to
// max_tokens) and its cross-attention keys/values (the encoder's output for its segment, up to
// max_audio_positions rows). Sequences join and leave between steps:
//
//   int s = decoder.acquire();                      // the lowest free lane (-1: all busy)
//   encoder.run(frames, {mel}, {decoder.begin(s, WhisperEncoder::positions(frames))});
//   while (...) { tokens[s] = ...; decoder.step(tokens); use decoder.logits(s); }
//   decoder.release(s);
//
// Lane assignment: acquire() returns the lowest free lane, so busy lanes stay packed at the low
// end; a step runs the lanes [0, active_end()), where active_end() is one past the highest busy
// lane. Free lanes below it ride along as padding (fed a dummy token; their results are ignored):
// compute, not data movement, is what a hole costs, and the next acquire() fills it.
//
// What a step costs, by layout (see WhisperModel):
//   kBrisvox     one ONNX Runtime Run for all active_end() lanes. Packing: 3 int64 per lane
//                (token, position, audio length) written into preallocated tensors; the caches
//                are bound in place (no copy). After the Run, each busy lane's new key/value row
//                is copied into its cache: 2 x n_text_layer x n_text_state floats. The Run reads
//                every lane's whole cache and audio capacity (rows past a sequence's length are
//                masked), so a step costs the same at every position: O(max_tokens +
//                max_audio_positions) per lane, never more with a longer prefix.
//   kSherpaOnnx  one Run per busy lane (the graph takes one offset for its batch). The caches are
//                bound in place; the graph rewrites its whole self-attention cache output
//                (n_text_ctx rows) into a shared scratch, of which brisvox copies back the one new
//                row per layer.
//   kOptimum     one Run per busy lane. The graph takes the past keys/values as exactly
//                `position` rows, so each step packs the lane's cached rows into a shared
//                scratch: O(position) floats copied, growing with the prefix.
// Memory per lane: bytes_per_lane() (kBrisvox: 8 x n_text_layer x n_text_state x (max_tokens +
// max_audio_positions + 1) + 4 x n_vocab + 4 x alignment heads x max_audio_positions + 24 bytes).
// Whisper tiny at the defaults (229 tokens, 1500 positions): 21.5 MB, of which 18.4 MB are the cross-attention keys/values of a full window
// and 2.8 MB the self-attention cache; with max_audio_positions 500 (fit windows up to 10 s):
// 9.2 MB. Whisper small (12 layers, width 768): 128 MB at the defaults.
//
// No heap allocation in brisvox code in step() (tested with a counting malloc), acquire() or
// release(). begin() allocates only for kSherpaOnnx (two tensor views of the sequence's audio
// length).
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "brisvox/models/stt/whisper_encoder.h"
#include "brisvox/models/stt/whisper_model.h"
#include "brisvox/runtime/model_info.h"
#include "brisvox/runtime/session_config.h"

namespace brisvox {

struct WhisperDecoderConfig {
  int max_lanes = 8;            // sequences decoded together, 1..256
  // Positions a lane's self-attention cache holds (prompt + generated tokens); 0 = the default,
  // min(n_text_ctx, 5 + n_text_ctx / 2) = 229 for Whisper: the longest prompt (sot, language,
  // task, notimestamps) plus faster-whisper's cap of n_text_ctx / 2 sampled tokens, plus the
  // <|endoftext|> that a word-timestamp pass (whisper_words.h) feeds after them.
  // kSherpaOnnx always uses n_text_ctx (its graph's fixed cache length).
  int max_tokens = 0;
  // Encoder positions a lane holds; 0 = n_audio_ctx (a full window). A decoder made only for fit
  // windows of up to 10 s can use 500 and a third of the memory.
  int max_audio_positions = 0;
  SessionConfig session;
};

class WhisperDecoder {
 public:
  // Throws as WhisperEncoder's constructor.
  WhisperDecoder(const WhisperModel& model, const WhisperDecoderConfig& config);
  ~WhisperDecoder();
  WhisperDecoder(WhisperDecoder&&) noexcept;
  WhisperDecoder& operator=(WhisperDecoder&&) noexcept;

  int max_lanes() const;
  int max_tokens() const;
  int max_audio_positions() const;
  std::size_t bytes_per_lane() const;
  const ModelInfo& model_info() const;
  WhisperLayout layout() const;

  // The lowest free lane, now busy (position 0, no audio yet), or -1 if all are busy.
  int acquire();
  // Starts a sequence in busy lane `lane` on a segment of `audio_positions` encoder positions
  // (1..max_audio_positions; kOptimum: exactly n_audio_ctx) and returns where the encoder must
  // write that segment's output before the lane's first step. Resets the lane's position to 0.
  WhisperEncoderOutput begin(int lane, int audio_positions);
  // Frees a busy lane; its sequence's state is forgotten.
  void release(int lane);

  // Lane `to` becomes a copy of lane `from` (both busy): the tokens fed so far, the position, and
  // with `audio` the segment's encoder output (a beam's hypothesis continuing another's). Costs
  // the rows copied: 8 x n_text_layer x n_text_state bytes per position (and per audio position).
  // Error(kInvalidArgument) for a lane that is not busy or has no audio, or a layout that cannot
  // copy (only kBrisvox can).
  void copy(int from, int to, bool audio);

  // Back to position 0 (the tokens fed so far forgotten, the audio kept): a language detected on
  // <|startoftranscript|> alone before a prompt (WhisperSequence::rewind).
  void rewind(int lane);

  bool busy(int lane) const;
  int busy_count() const;
  int active_end() const;       // one past the highest busy lane (0 when none)
  int position(int lane) const; // tokens fed so far

  // One step: every busy lane s below active_end() feeds tokens[s] at position(s) (< max_tokens)
  // and gets the logits for its next token; positions advance by one. tokens.size() must be at
  // least active_end(); entries of free lanes are ignored.
  // Throws Error(kInvalidArgument) for a lane whose cache is full or that has no audio (no
  // begin()), a token outside [0, n_vocab); Error(kRuntime) if ONNX Runtime fails (or the Run was
  // cancelled): the positions are then unchanged.
  void step(std::span<const int> tokens);

  // Lane s's logits from the last step, [n_vocab]; writable so that a search can suppress tokens
  // in place. Valid until the next step().
  std::span<float> logits(int lane);

  // The cross-attention heads whose scores word timestamps use (whisper.json's alignment_heads):
  // 0 for a model converted without them (only the brisvox layout has them).
  int alignment_heads() const;
  // Lane s's scores from the last step, [alignment_heads()][max_audio_positions()]: head a's
  // row starts at a * max_audio_positions(), its first audio positions valid (scaled q.k before
  // the softmax). Valid until the next step().
  std::span<const float> alignment(int lane) const;

  // Any thread: makes the Run in progress (and later ones) fail until clear_cancel().
  void cancel_run() noexcept;
  void clear_cancel() noexcept;

  struct Backend;  // one per layout (src/models/stt/whisper/)

 private:
  std::unique_ptr<Backend> backend_;
};

}  // namespace brisvox
