#include "brisvox/models/stt/whisper_fallback.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "brisvox/error.h"

namespace brisvox {
namespace {

bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

int WhisperFallbackOptions::max_width(const WhisperDecodeOptions& decode) const {
  int width = 1;
  for (float t : temperatures) {
    WhisperDecodeOptions d = decode;
    d.temperature = t;
    width = std::max(width, d.width());
  }
  return width;
}

std::vector<WhisperDecodeOptions> WhisperFallbackOptions::attempts(const WhisperDecodeOptions& decode) const {
  if (temperatures.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "Whisper: the fallback's temperatures are empty (give at least 0)");
  }
  std::vector<WhisperDecodeOptions> out;
  for (float t : temperatures) {
    out.push_back(decode);
    out.back().temperature = t;
  }
  return out;
}

std::vector<float> parse_temperatures(std::string_view list) {
  std::vector<float> out;
  std::size_t at = 0;
  while (at <= list.size() && out.size() <= 64) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string item(list.substr(at, comma - at));
    std::size_t used = 0;
    float t = -1.0f;
    try {
      t = std::stof(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || !(t >= 0.0f && t <= 10.0f)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("temperatures are numbers 0 to 10 separated by commas (e.g. 0,0.2,0.4), got '{}'",
                              list.substr(0, 80)));
    }
    out.push_back(t);
    at = comma + 1;
  }
  if (out.size() > 64) throw Error(ErrorCode::kInvalidArgument, "at most 64 temperatures");
  return out;
}

void use_faster_whisper_decoding(WhisperDecodeOptions& decode, WhisperFallbackOptions& fallback) {
  decode.beam_size = 5;
  decode.best_of = 5;
  decode.patience = 1.0f;
  decode.length_penalty = 1.0f;
  decode.log_prob_threshold = -1.0f;
  decode.no_speech_threshold = 0.6f;
  fallback.temperatures = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};
  fallback.compression_ratio_threshold = 2.4f;
}

double whisper_compression_ratio(std::string_view text) {
  while (!text.empty() && ascii_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && ascii_space(text.back())) text.remove_suffix(1);
  if (text.empty()) return 0.0;
  // Python's zlib.compress(data): level -1 (6), a zlib stream with its header and checksum.
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::vector<Bytef> out(size);
  if (compress2(out.data(), &size, reinterpret_cast<const Bytef*>(text.data()), static_cast<uLong>(text.size()),
                Z_DEFAULT_COMPRESSION) != Z_OK) {
    return 0.0;  // only on memory exhaustion; a ratio of 0 never triggers the fallback
  }
  return static_cast<double>(text.size()) / static_cast<double>(size);
}

bool whisper_needs_fallback(const WhisperAttempt& a, const WhisperDecodeOptions& o, float compression_ratio_threshold) {
  bool needs = compression_ratio_threshold > 0.0f && a.compression_ratio > compression_ratio_threshold;
  if (a.avg_logprob < o.log_prob_threshold) needs = true;
  if (a.no_speech_prob > o.no_speech_threshold && a.avg_logprob < o.log_prob_threshold) needs = false;  // silence
  return needs;
}

std::optional<std::size_t> whisper_kept_attempt(std::span<const WhisperAttempt> attempts, std::size_t temperatures,
                                                const WhisperDecodeOptions& options, float compression_ratio_threshold) {
  if (!whisper_needs_fallback(attempts.back(), options, compression_ratio_threshold)) return attempts.size() - 1;
  if (attempts.size() < temperatures) return std::nullopt;
  return whisper_pick_attempt(attempts, compression_ratio_threshold);
}

std::size_t whisper_pick_attempt(std::span<const WhisperAttempt> attempts, float compression_ratio_threshold) {
  std::size_t best = attempts.size();
  for (int pass = 0; pass < 2 && best == attempts.size(); ++pass) {
    for (std::size_t i = 0; i < attempts.size(); ++i) {
      const bool repeats = compression_ratio_threshold > 0.0f && attempts[i].compression_ratio > compression_ratio_threshold;
      if (pass == 0 && repeats) continue;
      if (best == attempts.size() || attempts[i].avg_logprob > attempts[best].avg_logprob) best = i;
    }
  }
  return best == attempts.size() ? 0 : best;
}

}  // namespace brisvox
