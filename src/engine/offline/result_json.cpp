#include <nlohmann/json.hpp>

#include "brisvox/engine/offline.h"

namespace brisvox {

std::string result_json(const OfflineResult& r, std::span<const ResultPart> parts) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["file"] = r.file;
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
    }
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace brisvox
