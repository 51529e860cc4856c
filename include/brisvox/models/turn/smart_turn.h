// Smart Turn v3 (Pipecat, BSD-2): does the speaker sound finished? A Whisper-tiny encoder with an
// attention-pooling classifier, run on the last 8 s of a turn.
//
// Model contract: input `input_features` float32 [B, 80, 800] (log-mel, see TurnFeatures),
// output `logits` float32 [B, 1] that already holds the probability (the sigmoid is inside the
// model). v3.1 and v3.2 files may name the two tensors differently: a file with one input and one
// output of these shapes is then bound by position, and the log says so.
//
// A SmartTurn holds one session and preallocated tensors for batches up to max_batch; used by one
// thread at a time (an engine turn worker). run() performs no heap allocation in brisvox code.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "brisvox/runtime/model_info.h"
#include "brisvox/runtime/session_config.h"

namespace brisvox {

inline constexpr int kTurnMels = 80;
inline constexpr int kTurnFrames = 800;
inline constexpr int kTurnFeatureValues = kTurnMels * kTurnFrames;  // one [80, 800] input
inline constexpr int kTurnSampleRateHz = 16000;
inline constexpr int kTurnWindowSamples = 8 * kTurnSampleRateHz;    // the last 8 s of a turn

struct SmartTurnConfig {
  std::string model_path;
  int max_batch = 4;
  SessionConfig session;
};

class SmartTurn {
 public:
  // Throws Error (kIo, kBadModel, kModelMismatch naming the tensor and shapes, kInvalidArgument).
  explicit SmartTurn(const SmartTurnConfig& config);
  ~SmartTurn();
  SmartTurn(SmartTurn&&) noexcept;
  SmartTurn& operator=(SmartTurn&&) noexcept;

  int max_batch() const;
  const ModelInfo& model_info() const;

  // features[i] points at kTurnFeatureValues floats ([80, 800], row-major); probs[i] receives the
  // end-of-turn probability. 1..max_batch inputs. Throws Error(kRuntime) if ONNX Runtime fails.
  void run(std::span<const float* const> features, std::span<float> probs);

  // As SileroVad's: any thread may cancel the Run in progress (ONNX Runtime's terminate flag);
  // the running thread clears the flag before its next Run.
  void cancel_run() noexcept;
  void clear_cancel() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
