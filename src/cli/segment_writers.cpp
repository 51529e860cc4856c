#include "cli/segment_writers.h"

#include <fmt/format.h>

#include <filesystem>

#include "brisvox/error.h"

namespace brisvox::cli {

SegmentFormat parse_segment_format(std::string_view name) {
  if (name == "json") return SegmentFormat::kJson;
  if (name == "csv") return SegmentFormat::kCsv;
  if (name == "rttm") return SegmentFormat::kRttm;
  if (name == "audacity") return SegmentFormat::kAudacity;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown format '{}': use json, csv, rttm or audacity", name));
}

std::string_view file_extension(SegmentFormat format) {
  switch (format) {
    case SegmentFormat::kJson: return ".json";
    case SegmentFormat::kCsv: return ".csv";
    case SegmentFormat::kRttm: return ".rttm";
    case SegmentFormat::kAudacity: return ".txt";
  }
  return ".txt";
}

void write_header(std::FILE* out, SegmentFormat format) {
  if (format == SegmentFormat::kCsv) fmt::print(out, "file,start,end\n");
}

namespace {

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// RTTM file ids cannot hold spaces: the stem with spaces replaced.
std::string rttm_id(const std::string& file) {
  std::string id = std::filesystem::path(file).stem().string();
  for (char& c : id) if (c == ' ' || c == '\t') c = '_';
  return id.empty() ? "audio" : id;
}

}  // namespace

void write_segments(std::FILE* out, SegmentFormat format, const OfflineResult& r, bool frame_probs) {
  switch (format) {
    case SegmentFormat::kJson:
      fmt::print(out, "{}\n", frame_probs ? result_json(r, {ResultPart::kSegments, ResultPart::kFrameProbs})
                                          : result_json(r, {ResultPart::kSegments}));
      break;
    case SegmentFormat::kCsv:
      for (const auto& [start, end] : r.segments_s) fmt::print(out, "{},{},{}\n", csv_quote(r.file), start, end);
      break;
    case SegmentFormat::kRttm:
      for (const auto& [start, end] : r.segments_s) {
        fmt::print(out, "SPEAKER {} 1 {:.3f} {:.3f} <NA> <NA> speech <NA> <NA>\n", rttm_id(r.file), start,
                   end - start);
      }
      break;
    case SegmentFormat::kAudacity:
      for (const auto& [start, end] : r.segments_s) fmt::print(out, "{:.6f}\t{:.6f}\tspeech\n", start, end);
      break;
  }
}

}  // namespace brisvox::cli
