// A Piper voice model (VITS, exported by piper-train): phoneme ids in, raw audio out.
//
// Model contract (checked at load, tensors named on a mismatch):
//   input  `input`          int64   [B, T]    phoneme ids, rows padded with 0 past their length
//   input  `input_lengths`  int64   [B]       ids per row
//   input  `scales`         float32 [3]       noise_scale, length_scale, noise_w
//   input  `sid`            int64   [B]       speaker id (multi-speaker voices only)
//   output `output`         float32 [B, 1, 1, S]  audio at the voice's rate, rows padded to the longest
//   output `durations`      float32 [B, 1, T] optional: frames per id (tools/piper/add_duration_output.py
//                                             adds it); a row's audio is sum(durations) * hop_length
//                                             samples. Without it only single-sentence runs are possible.
//
// Batching: a row's audio in a batch equals its single-sentence audio within 2e-4 (tested), but on
// CPU a batch costs as much per sentence as single runs (measured, docs/PERFORMANCE.md), so
// PiperTts runs sentences one at a time unless told otherwise.
//
// Allocation: the id, length and scale tensors are preallocated for max_batch x max_phoneme_ids;
// the audio is allocated by ONNX Runtime per run because its length is only known after the run
// (the durations are predicted inside the model).
//
// Thread-safety: one thread at a time (an engine worker); cancel_run() from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "brisvox/models/tts/piper_voice.h"
#include "brisvox/runtime/model_info.h"
#include "brisvox/runtime/session_config.h"

namespace brisvox {

struct PiperVitsConfig {
  std::string model_path;
  int max_batch = 1;             // sentences per run; > 1 needs the `durations` output
  int max_phoneme_ids = 2048;    // ids per sentence
  int hop_length = 256;          // samples per duration frame (the voice config's hop_length)
  int num_speakers = 1;          // the voice config's num_speakers: > 1 needs the `sid` input
  SessionConfig session;
};

class PiperVits {
 public:
  // Throws Error(kIo) for a missing file, Error(kBadModel) if ONNX Runtime rejects it,
  // Error(kModelMismatch) naming the tensor if the contract above does not hold,
  // Error(kInvalidArgument) for a bad config value.
  explicit PiperVits(const PiperVitsConfig& config);
  ~PiperVits();
  PiperVits(PiperVits&&) noexcept;
  PiperVits& operator=(PiperVits&&) noexcept;

  const ModelInfo& model_info() const;
  int max_batch() const;
  int max_phoneme_ids() const;
  bool has_durations() const;
  bool has_speaker_input() const;

  // Synthesises ids.size() sentences (1..max_batch, each 1..max_phoneme_ids ids) in one run;
  // audio[i] receives sentence i's raw model output (not normalised). speaker_id is used only by
  // multi-speaker voices. Throws Error(kInvalidArgument) for bad sizes or a speaker id outside
  // [0, num_speakers), Error(kRuntime) if the run fails or was cancelled.
  void run(std::span<const std::vector<std::int64_t>> ids, const PiperScales& scales, std::int64_t speaker_id,
           std::span<std::vector<float>> audio);

  // As SmartTurn's: any thread may cancel the run in progress; the running thread clears it.
  void cancel_run() noexcept;
  void clear_cancel() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
