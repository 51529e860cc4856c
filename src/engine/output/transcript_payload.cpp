#include "engine/output/transcript_payload.h"

#include <algorithm>
#include <cstring>

namespace brisvox::engine {
namespace {

constexpr std::uint32_t kNoSpeech = 1;
constexpr std::uint32_t kHitTokenLimit = 2;

template <typename T>
void append(std::vector<std::byte>& out, const T& value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

void append_text(std::vector<std::byte>& out, const std::string& text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  out.insert(out.end(), p, p + text.size());
}

}  // namespace

void encode_transcript(const Transcript& t, std::vector<std::byte>& out) {
  out.clear();
  TranscriptHeader h{t.avg_logprob,
                     t.no_speech_prob,
                     (t.no_speech ? kNoSpeech : 0u) | (t.hit_token_limit ? kHitTokenLimit : 0u),
                     t.window_frames,
                     t.language_probability,
                     t.temperature,
                     t.compression_ratio,
                     {},
                     static_cast<std::uint32_t>(t.text.size()),
                     static_cast<std::uint32_t>(t.words.size()),
                     static_cast<std::uint32_t>(t.unstable.size()),
                     0};
  std::memcpy(h.language, t.language.data(), std::min(t.language.size(), sizeof(h.language) - 1));
  append(out, h);
  append_text(out, t.text);
  append_text(out, t.unstable);
  for (const WhisperWord& w : t.words) {
    append(out, TranscriptWordHeader{w.start_s, w.end_s, w.probability, static_cast<std::uint32_t>(w.text.size())});
    append_text(out, w.text);
  }
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
  std::span<const std::byte> rest = payload.subspan(sizeof(h));
  const std::size_t text = std::min<std::size_t>(h.text_bytes, rest.size());
  t.text.assign(reinterpret_cast<const char*>(rest.data()), text);
  rest = rest.subspan(text);
  const std::size_t unstable = std::min<std::size_t>(h.unstable_bytes, rest.size());
  t.unstable.assign(reinterpret_cast<const char*>(rest.data()), unstable);
  rest = rest.subspan(unstable);
  for (std::uint32_t k = 0; k < h.words && rest.size() >= sizeof(TranscriptWordHeader); ++k) {
    TranscriptWordHeader w{};
    std::memcpy(&w, rest.data(), sizeof(w));
    rest = rest.subspan(sizeof(w));
    if (w.text_bytes > rest.size()) break;
    t.words.push_back({w.start_s, w.end_s, std::string(reinterpret_cast<const char*>(rest.data()), w.text_bytes),
                       w.probability});
    rest = rest.subspan(w.text_bytes);
  }
  return t;
}

}  // namespace brisvox::engine
