// The layout-specific half of WhisperDecoder: how lanes are stored and how a step runs. The
// common half (lane bookkeeping, argument checks) is in whisper_decoder.cpp.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "brisvox/models/stt/whisper_decoder.h"
#include "runtime/model_session.h"

namespace brisvox {

struct WhisperDecoder::Backend {
  Backend(WhisperLayout l, runtime::ModelSession s, const WhisperConfig& c, int lanes, int tokens, int audio)
      : layout(l),
        session(std::move(s)),
        config(c),
        max_lanes(lanes),
        max_tokens(tokens),
        max_audio(audio),
        busy(static_cast<std::size_t>(lanes), 0),
        positions(static_cast<std::size_t>(lanes), 0),
        audio_positions(static_cast<std::size_t>(lanes), 0),
        logits(static_cast<std::size_t>(lanes) * static_cast<std::size_t>(c.dims.n_vocab), 0.0f) {}
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // Where lane `lane`'s encoder output goes for a segment of `audio` positions (already checked
  // against max_audio and the layout's rule).
  virtual WhisperEncoderOutput encoder_target(int lane, int audio) = 0;
  // Runs one step for lanes [0, end): busy ones feed tokens[s] at positions[s]; stores each busy
  // lane's new key/value row and leaves its logits in `logits`. Positions are advanced by the
  // caller after a successful return.
  virtual void run(int end, std::span<const int> tokens) = 0;
  virtual std::size_t bytes_per_lane() const = 0;
  // Lane `to`'s self-attention rows [0, positions[from]) become lane `from`'s, and with `audio`
  // its cross-attention rows [0, audio_positions[from]) too (both busy, distinct; the caller then
  // copies the positions). Layouts that cannot copy throw Error(kInvalidArgument).
  virtual void copy_lane(int from, int to, bool audio);
  // kOptimum: a lane's audio must be exactly n_audio_ctx positions.
  virtual bool needs_full_audio() const { return false; }

  std::span<float> lane_logits(int s) {
    const auto v = static_cast<std::size_t>(config.dims.n_vocab);
    return {logits.data() + static_cast<std::size_t>(s) * v, v};
  }
  [[noreturn]] void run_failed(const Ort::Exception& e, int batch) const;

  WhisperLayout layout;
  runtime::ModelSession session;
  WhisperConfig config;
  int max_lanes;
  int max_tokens;
  int max_audio;
  std::vector<std::uint8_t> busy;
  std::vector<int> positions;
  std::vector<int> audio_positions;  // 0 until begin()
  std::vector<float> logits;         // [max_lanes, n_vocab]
  // The model's alignment heads (0: it has no `alignment` output) and their scores from the last
  // step, [max_lanes, alignment_heads, max_audio].
  int alignment_heads = 0;
  std::vector<float> alignment;
};

namespace whisper_detail {

std::unique_ptr<WhisperDecoder::Backend> make_brisvox_decoder(runtime::ModelSession session, const WhisperConfig& config,
                                                              int lanes, int tokens, int audio);
std::unique_ptr<WhisperDecoder::Backend> make_sherpa_decoder(runtime::ModelSession session, const WhisperConfig& config,
                                                             int lanes, int audio);
std::unique_ptr<WhisperDecoder::Backend> make_optimum_decoder(runtime::ModelSession session, const WhisperConfig& config,
                                                              int lanes, int tokens);

// Ort::Value over caller-owned memory.
template <typename T, std::size_t R>
Ort::Value view(T* data, std::size_t count, const std::array<int64_t, R>& shape) {
  static const Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  return Ort::Value::CreateTensor<T>(mem, data, count, shape.data(), R);
}

// Names as ONNX Runtime takes them (the strings must outlive the pointers).
struct Names {
  std::vector<std::string> names;
  std::vector<const char*> ptrs;
  void add(std::string n) { names.push_back(std::move(n)); }
  void finish() {
    ptrs.clear();
    for (const auto& n : names) ptrs.push_back(n.c_str());
  }
};

}  // namespace whisper_detail
}  // namespace brisvox
