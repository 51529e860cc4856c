#include "brisvox/formats/result_json.h"

#include <nlohmann/json.hpp>

#include "formats/fields.h"

namespace brisvox {

using formats::trimmed;

std::string result_json(const OfflineResult& r, std::span<const ResultPart> parts) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["file"] = r.file;
  if (r.channel >= 0) j["channel"] = r.channel;
  j["sample_rate"] = r.input_sample_rate_hz;
  j["duration"] = r.duration_s;
  for (const ResultPart part : parts) {
    switch (part) {
      case ResultPart::kSegments:
        j["segments"] = Json::array();
        for (const auto& [start, end] : r.segments_s) j["segments"].push_back({{"start", start}, {"end", end}});
        break;
      case ResultPart::kFrameProbs:
        j["frame_probs"] = r.frame_probs;
        break;
      case ResultPart::kTurns:
        j["turns"] = Json::array();
        for (const TurnVerdict& t : r.turns) {
          Json turn{{"start", t.start_s}, {"end", t.end_s}};
          if (t.probability >= 0.0f) turn["probability"] = t.probability; else turn["probability"] = nullptr;
          turn["reason"] = std::string(to_string(t.reason));
          j["turns"].push_back(std::move(turn));
        }
        break;
      case ResultPart::kTurnIncomplete:
        j["incomplete"] = Json::array();
        for (const TurnVerdict& t : r.incomplete_turns) {
          j["incomplete"].push_back({{"start", t.start_s}, {"end", t.end_s}, {"probability", t.probability}});
        }
        break;
    }
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string transcript_text(const OfflineResult& r) {
  std::string text;
  for (const TranscriptSegment& seg : r.transcripts) {
    if (seg.transcript.no_speech) continue;
    const std::string t = trimmed(seg.transcript.text);
    if (t.empty()) continue;
    if (!text.empty()) text += ' ';
    text += t;
  }
  return text;
}

const Transcript* first_transcript(const OfflineResult& r) {
  return r.transcripts.empty() ? nullptr : &r.transcripts.front().transcript;
}

namespace {

nlohmann::ordered_json words_array(std::span<const WhisperWord> words) {
  auto a = nlohmann::ordered_json::array();
  for (const WhisperWord& w : words) {
    a.push_back({{"start", w.start_s}, {"end", w.end_s}, {"word", w.text}, {"probability", w.probability}});
  }
  return a;
}

}  // namespace

std::string words_json(std::span<const WhisperWord> words) {
  return words_array(words).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string transcript_json(const OfflineResult& r) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["file"] = r.file;
  if (r.channel >= 0) j["channel"] = r.channel;
  j["duration"] = r.duration_s;
  if (const Transcript* first = first_transcript(r)) {
    j["language"] = first->language;
    j["language_probability"] = first->language_probability;
  }
  j["text"] = transcript_text(r);
  j["segments"] = Json::array();
  for (const TranscriptSegment& seg : r.transcripts) {
    if (seg.transcript.no_speech) continue;
    j["segments"].push_back({{"start", seg.start_s}, {"end", seg.end_s}, {"text", trimmed(seg.transcript.text)}});
    if (!seg.transcript.words.empty()) j["segments"].back()["words"] = words_array(seg.transcript.words);
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace brisvox
