// Silero VAD v5/v6 through ONNX Runtime, run over a batch of independent streams in one Run.
//
// The model contract (both versions, opset 16): inputs `input` float32 [B, context + chunk],
// `state` float32 [2, B, 128], `sr` int64 scalar; outputs `output` float32 [B, 1] (speech
// probability of the chunk) and `stateN` [2, B, 128]. Inputs and outputs are bound by name, so
// files that order them differently work; a file with another contract (the legacy model's h/c
// inputs, a state of another width) is refused with a message naming the mismatch.
//
// As in silero-vad's OnnxWrapper, every chunk is fed with the last `context_samples` samples of
// the previous chunk in front of it (zeros at stream start): 16 kHz uses 512-sample chunks with 64
// context samples, 8 kHz (native, not resampled) 256 with 32.
//
// A SileroVad holds the session and preallocated tensors for every batch size up to max_batch;
// it is shared by all streams of one worker and used by one thread at a time. Per-stream state
// lives in SileroStreamState, outside it. run() performs no heap allocation in brisvox code.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>

#include "brisvox/runtime/model_info.h"
#include "brisvox/runtime/session_config.h"

namespace brisvox {

inline constexpr int kSileroStateWidth = 128;
inline constexpr int kSileroStateSize = 2 * kSileroStateWidth;  // [2, 1, 128] per stream
inline constexpr int kSileroMaxContext = 64;

// The recurrent state and context of one stream: 1.3 KB, trivially copyable.
struct SileroStreamState {
  std::array<float, kSileroStateSize> state{};
  std::array<float, kSileroMaxContext> context{};
  void reset() {
    state.fill(0.0f);
    context.fill(0.0f);
  }
};

struct SileroConfig {
  std::string model_path;      // see resolve_vad_model() for aliases
  int sample_rate_hz = 16000;  // 16000 or 8000: the rate the model runs at
  int max_batch = 64;          // largest number of streams in one run()
  SessionConfig session;
};

class SileroVad {
 public:
  // Loads and checks the model. Throws Error (kIo, kBadModel, kModelMismatch, kInvalidArgument).
  explicit SileroVad(const SileroConfig& config);
  ~SileroVad();
  SileroVad(SileroVad&&) noexcept;
  SileroVad& operator=(SileroVad&&) noexcept;

  int sample_rate_hz() const;
  int chunk_samples() const;    // 512 at 16 kHz, 256 at 8 kHz
  int context_samples() const;  // 64 at 16 kHz, 32 at 8 kHz
  int max_batch() const;
  const ModelInfo& model_info() const;

  // One chunk for each of `states.size()` streams (1..max_batch) in one Run: chunks[i] points at
  // chunk_samples() samples of stream i; states[i] is read and updated in place; probs[i]
  // receives the speech probability. A stream gets the same probability (within 1e-5) whatever
  // the batch it is run in. Throws Error(kRuntime) if ONNX Runtime fails; states are then left
  // unchanged.
  void run(std::span<SileroStreamState* const> states, std::span<const float* const> chunks,
           std::span<float> probs);

  // Convenience for whole recordings (one stream, batch of one): the probability of every chunk,
  // the last partial chunk zero-padded, as silero-vad's get_speech_timestamps computes them.
  std::vector<float> probabilities(std::span<const float> audio);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
