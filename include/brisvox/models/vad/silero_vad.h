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
// One session serves both rates (the model takes `sr` as an input), but a batch holds one rate.
// A SileroVad holds the session and preallocated tensors for every batch size up to max_batch and
// both rates; it is shared by all streams of one worker and used by one thread at a time. Per-stream state
// lives in SileroStreamState, outside it. run() performs no heap allocation in brisvox code.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "brisvox/models/vad/silero_rates.h"
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
  std::string model_path;  // see resolve_vad_model() for aliases
  int max_batch = 64;      // largest number of streams in one run()
  SessionConfig session;
};

class SileroVad {
 public:
  // Loads and checks the model. Throws Error (kIo, kBadModel, kModelMismatch, kInvalidArgument).
  explicit SileroVad(const SileroConfig& config);
  ~SileroVad();
  SileroVad(SileroVad&&) noexcept;
  SileroVad& operator=(SileroVad&&) noexcept;

  int max_batch() const;
  const ModelInfo& model_info() const;

  // One chunk for each of `states.size()` streams (1..max_batch) in one Run, all at
  // `sample_rate_hz` (16000 or 8000): chunks[i] points at silero_chunk_samples(rate) samples of
  // stream i; states[i] is read and updated in place; probs[i]
  // receives the speech probability. A stream gets the same probability (within 1e-5) whatever
  // the batch it is run in. Throws Error(kRuntime) if ONNX Runtime fails; states are then left
  // unchanged.
  void run(int sample_rate_hz, std::span<SileroStreamState* const> states,
           std::span<const float* const> chunks, std::span<float> probs);

  // Any thread: sets ONNX Runtime's terminate flag, so that the Run in progress fails at its next
  // node (Error(kRuntime)) and every later Run fails at once until clear_cancel(). For deadlines
  // (the engine's watchdog): ONNX Runtime documents RunOptionsSetTerminate as callable from
  // another thread while a Run executes; it only sets a flag (no lock, no allocation).
  void cancel_run() noexcept;
  // The thread that calls run(): lets later Runs run again.
  void clear_cancel() noexcept;

  // Convenience for whole recordings (one stream, batch of one): the probability of every chunk,
  // the last partial chunk zero-padded, as silero-vad's get_speech_timestamps computes them.
  std::vector<float> probabilities(std::span<const float> audio, int sample_rate_hz);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
