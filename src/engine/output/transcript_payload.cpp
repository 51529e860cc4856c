#include "engine/output/transcript_payload.h"

#include <algorithm>
#include <cstring>

namespace brisvox::engine {
namespace {

constexpr std::uint32_t kNoSpeech = 1;
constexpr std::uint32_t kHitTokenLimit = 2;

}  // namespace

TranscriptHeader transcript_header(const Transcript& t) noexcept {
  TranscriptHeader h{t.avg_logprob, t.no_speech_prob,
                     (t.no_speech ? kNoSpeech : 0u) | (t.hit_token_limit ? kHitTokenLimit : 0u), t.window_frames,
                     t.language_probability, t.temperature, t.compression_ratio, {}};
  std::memcpy(h.language, t.language.data(), std::min(t.language.size(), sizeof(h.language) - 1));
  return h;
}

Transcript decode_transcript(std::span<const std::byte> payload) {
  Transcript t;
  TranscriptHeader h{};
  if (payload.size() < sizeof(h)) return t;
  std::memcpy(&h, payload.data(), sizeof(h));
  t.avg_logprob = h.avg_logprob;
  t.no_speech_prob = h.no_speech_prob;
  t.no_speech = (h.flags & kNoSpeech) != 0;
  t.hit_token_limit = (h.flags & kHitTokenLimit) != 0;
  t.window_frames = h.window_frames;
  t.language_probability = h.language_probability;
  t.temperature = h.temperature;
  t.compression_ratio = h.compression_ratio;
  t.language.assign(h.language, strnlen(h.language, sizeof(h.language)));
  t.text.assign(reinterpret_cast<const char*>(payload.data()) + sizeof(h), payload.size() - sizeof(h));
  return t;
}

}  // namespace brisvox::engine
