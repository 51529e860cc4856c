// Whisper's encoder, batched: several segments' log-mel windows in one ONNX Runtime Run, each
// segment's output written where the caller says (usually a WhisperDecoder lane, see
// WhisperDecoder::begin).
//
// One session and preallocated tensors (one set of Ort::Value views per batch size and window
// length, made by the constructor); run() performs no heap allocation in brisvox code. Used by one
// thread at a time (an engine worker); cancel_run() may be called from any thread.
//
// Cost: the encoder's FLOPs grow with the window (linear parts) and its square (attention):
// docs/PERFORMANCE.md has the measured ms per segment at full and fit windows.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "brisvox/models/stt/whisper_model.h"
#include "brisvox/runtime/model_info.h"
#include "brisvox/runtime/session_config.h"

namespace brisvox {

// Where one segment's encoder output goes, in the form the same model's decoder reads: blocks,
// block i starting at data + i * block_stride floats. What a block holds depends on the layout:
//   kBrisvox     2 x n_text_layer blocks (layer-major: the layer's cross-attention keys, then its
//                values), each [n_text_head][capacity][head_dim]; rows [0, positions) written
//   kSherpaOnnx  2 x n_text_layer blocks (all layers' keys, then all values), each
//                [positions][n_text_state], packed (capacity == positions, block_stride =
//                positions x n_text_state): the decoder reads [layers, 1, positions, state]
//   kOptimum     1 block, the encoder's hidden states [capacity][n_audio_state]
// Treat it as opaque: make it with WhisperEncoder::output_in() or WhisperDecoder::begin().
struct WhisperEncoderOutput {
  float* data = nullptr;
  std::size_t block_stride = 0;
  int capacity = 0;  // audio positions a block has room for
};

struct WhisperEncoderConfig {
  int max_batch = 4;  // segments per Run, 1..64
  // Window lengths other than the full one must be multiples of this (WhisperFeatures' fit
  // rounding): the constructor makes one tensor view per batch size and length.
  int fit_granularity_frames = 100;
  SessionConfig session;
};

class WhisperEncoder {
 public:
  // Throws Error(kIo/kBadModel) from loading, Error(kModelMismatch) naming the tensor whose type or
  // shape differs from what the model's configuration implies, Error(kInvalidArgument) for a bad
  // config value.
  WhisperEncoder(const WhisperModel& model, const WhisperEncoderConfig& config);
  ~WhisperEncoder();
  WhisperEncoder(WhisperEncoder&&) noexcept;
  WhisperEncoder& operator=(WhisperEncoder&&) noexcept;

  int max_batch() const;
  int full_frames() const;   // 2 x n_audio_ctx
  bool supports_fit() const; // windows shorter than full_frames()
  // True for an encoder that quantizes its activations per tensor (tiny.en-int8), since in one
  // batch each row's output would depend on the others', and for every encoder on the CPU alone
  // (a batch costs more per window there): run() then runs its windows one at a time. The result
  // of a window is then the same alone or with others.
  bool runs_rows_alone() const;
  const ModelInfo& model_info() const;

  // Encoder positions of a window: frames / 2.
  static int positions(int frames) { return frames / 2; }
  // Floats of a standalone output buffer for `positions` positions, and its description.
  std::size_t output_floats(int positions) const;
  WhisperEncoderOutput output_in(std::span<float> storage, int positions) const;

  // Encodes mels.size() (1..max_batch) segments whose windows all have `frames` frames (even;
  // full_frames(), or with supports_fit() a multiple of fit_granularity_frames below it):
  // mels[i] points at [n_mels, frames] floats, row-major. Segment i's positions(frames) rows go
  // to outputs[i] (capacity >= positions(frames)).
  // Throws Error(kInvalidArgument) for bad sizes, Error(kRuntime) if ONNX Runtime fails (or the
  // Run was cancelled).
  void run(int frames, std::span<const float* const> mels,
           std::span<const WhisperEncoderOutput> outputs);

  // Any thread: makes the Run in progress (and later ones) fail until clear_cancel().
  void cancel_run() noexcept;
  void clear_cancel() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
