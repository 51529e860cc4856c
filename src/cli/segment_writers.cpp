#include "cli/segment_writers.h"

#include <fmt/format.h>

#include <algorithm>
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

void write_header(std::FILE* out, SegmentFormat format, bool channel_column) {
  if (format == SegmentFormat::kCsv) std::fputs(channel_column ? "file,channel,start,end\n" : "file,start,end\n", out);
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// RTTM file ids cannot hold spaces: the stem with spaces replaced ("stdin" for "-").
std::string rttm_id(const std::string& file) {
  std::string id = file == "-" ? std::string("stdin") : std::filesystem::path(file).stem().string();
  for (char& c : id) if (c == ' ' || c == '\t') c = '_';
  return id.empty() ? "audio" : id;
}

void write_segments(std::FILE* out, SegmentFormat format, const OfflineResult& r, bool frame_probs,
                    bool channel_column) {
  const std::string csv_file =
      channel_column ? fmt::format("{},{}", csv_quote(r.file), std::max(r.channel, 0)) : csv_quote(r.file);
  switch (format) {
    case SegmentFormat::kJson:
      fmt::print(out, "{}\n", frame_probs ? result_json(r, {ResultPart::kSegments, ResultPart::kFrameProbs})
                                          : result_json(r, {ResultPart::kSegments}));
      break;
    case SegmentFormat::kCsv:
      for (const auto& [start, end] : r.segments_s) fmt::print(out, "{},{},{}\n", csv_file, start, end);
      if (r.segments_s.empty()) fmt::print(out, "{},,\n", csv_file);  // read, and silent
      break;
    case SegmentFormat::kRttm:
      for (const auto& [start, end] : r.segments_s) {
        fmt::print(out, "SPEAKER {} {} {:.3f} {:.3f} <NA> <NA> speech <NA> <NA>\n", rttm_id(r.file),
                   r.channel >= 0 ? r.channel + 1 : 1, start, end - start);
      }
      break;
    case SegmentFormat::kAudacity:
      for (const auto& [start, end] : r.segments_s) {
        if (r.channel >= 0) {
          fmt::print(out, "{:.6f}\t{:.6f}\tspeech (channel {})\n", start, end, r.channel);
        } else {
          fmt::print(out, "{:.6f}\t{:.6f}\tspeech\n", start, end);
        }
      }
      break;
  }
}

}  // namespace brisvox::cli
