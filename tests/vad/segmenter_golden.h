// Loads the segmenter golden data, tests/data/vad/*.json (written by
// tools/reference/make_golden.sh from the JavaScript reference): every file is one probability
// sequence with several parameter sets and the segments the reference computed for each.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "brisvox/models/vad/segmenter_params.h"
#include "brisvox/models/vad/speech_segment.h"

namespace brisvox::test {

struct GoldenCase {
  std::string label;  // "file.json: case"
  int sample_rate_hz = 0;
  std::int64_t num_samples = 0;
  std::vector<float> probs;
  SegmenterParams params;
  std::vector<SpeechSegment> segments;
};

// silero-vad's argument names, as the files use them.
inline SegmenterParams params_from_json(const nlohmann::json& j) {
  SegmenterParams p;
  p.threshold = j.at("threshold").get<double>();
  p.neg_threshold = j.at("neg_threshold").is_null() ? -1.0 : j.at("neg_threshold").get<double>();
  p.min_speech_ms = j.at("min_speech_duration_ms").get<int>();
  const nlohmann::json& max_s = j.at("max_speech_duration_s");
  p.max_speech_s = max_s.is_string() && max_s.get<std::string>() == "inf"
                       ? std::numeric_limits<double>::infinity()
                       : max_s.get<double>();
  p.min_silence_ms = j.at("min_silence_duration_ms").get<int>();
  p.speech_pad_ms = j.at("speech_pad_ms").get<int>();
  p.min_silence_at_max_speech_ms = j.at("min_silence_at_max_speech").get<int>();
  p.use_max_poss_sil_at_max_speech = j.at("use_max_poss_sil_at_max_speech").get<bool>();
  return p;
}

inline std::filesystem::path golden_dir() {
  return std::filesystem::path(BRISVOX_TEST_DATA_DIR) / "vad";
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(in);
}

// Every case of every file, in file-name order.
inline std::vector<GoldenCase> load_golden_cases() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(golden_dir())) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<GoldenCase> cases;
  for (const auto& path : files) {
    const nlohmann::json doc = read_json(path);
    std::vector<float> probs;
    // The reference segments float32 probabilities: the nearest float to the stored decimal.
    for (const auto& x : doc.at("frame_probs"))
      probs.push_back(static_cast<float>(x.get<double>()));
    for (const auto& c : doc.at("cases")) {
      GoldenCase g;
      g.label = path.filename().string() + ": " + c.at("name").get<std::string>();
      g.sample_rate_hz = doc.at("sample_rate").get<int>();
      g.num_samples = doc.at("num_samples").get<std::int64_t>();
      g.probs = probs;
      g.params = params_from_json(c.at("params"));
      for (const auto& s : c.at("segments")) {
        g.segments.push_back({s.at("start").get<std::int64_t>(), s.at("end").get<std::int64_t>()});
      }
      cases.push_back(std::move(g));
    }
  }
  return cases;
}

}  // namespace brisvox::test
