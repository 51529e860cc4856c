#include "brisvox/formats/segment_writers.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "brisvox/error.h"
#include "brisvox/formats/result_json.h"
#include "formats/fields.h"

namespace brisvox {

using formats::csv_quote;
using formats::rttm_id;

namespace {

struct SegmentFormatName {
  SegmentFormat format;
  std::string_view name;       // --format's
  std::string_view extension;  // of -o files (Audacity reads labels from .txt)
};
constexpr SegmentFormatName kSegmentFormats[] = {{SegmentFormat::kJson, "json", ".json"},
                                    {SegmentFormat::kCsv, "csv", ".csv"},
                                    {SegmentFormat::kRttm, "rttm", ".rttm"},
                                    {SegmentFormat::kAudacity, "audacity", ".txt"}};

// The file column of a CSV row, with the channel's when asked.
std::string csv_file(const OfflineResult& r, bool channel_column) {
  return channel_column ? fmt::format("{},{}", csv_quote(r.file), std::max(r.channel, 0)) : csv_quote(r.file);
}

struct Verdict {
  const TurnVerdict* turn;
  bool incomplete;
};

// Finished turns and unfinished pauses, by the time the analysis ended.
std::vector<Verdict> verdicts_in_order(const OfflineResult& r) {
  std::vector<Verdict> v;
  for (const TurnVerdict& t : r.turns) v.push_back({&t, false});
  for (const TurnVerdict& t : r.incomplete_turns) v.push_back({&t, true});
  std::stable_sort(v.begin(), v.end(), [](const Verdict& a, const Verdict& b) { return a.turn->end_s < b.turn->end_s; });
  return v;
}

std::string probability_text(float p) { return p >= 0.0f ? fmt::format("{}", p) : std::string(); }

std::string_view reason_text(const Verdict& v) {
  return v.incomplete ? std::string_view("incomplete") : to_string(v.turn->reason);
}

}  // namespace

SegmentFormat parse_segment_format(std::string_view name) {
  for (const SegmentFormatName& f : kSegmentFormats) {
    if (name == f.name) return f.format;
  }
  throw Error(ErrorCode::kInvalidArgument, fmt::format("unknown format '{}': use json, csv, rttm or audacity", name));
}

std::string_view file_extension(SegmentFormat format) {
  for (const SegmentFormatName& f : kSegmentFormats) {
    if (f.format == format) return f.extension;
  }
  return ".txt";
}

void write_header(std::FILE* out, SegmentFormat format, bool channel_column) {
  if (format == SegmentFormat::kCsv) std::fputs(channel_column ? "file,channel,start,end\n" : "file,start,end\n", out);
}

void write_segments(std::FILE* out, SegmentFormat format, const OfflineResult& r, bool frame_probs,
                    bool channel_column) {
  switch (format) {
    case SegmentFormat::kJson:
      fmt::print(out, "{}\n", frame_probs ? result_json(r, {ResultPart::kSegments, ResultPart::kFrameProbs})
                                          : result_json(r, {ResultPart::kSegments}));
      break;
    case SegmentFormat::kCsv: {
      const std::string file = csv_file(r, channel_column);
      for (const auto& [start, end] : r.segments_s) fmt::print(out, "{},{},{}\n", file, start, end);
      if (r.segments_s.empty()) fmt::print(out, "{},,\n", file);  // read, and silent
      break;
    }
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

void write_turn_header(std::FILE* out, SegmentFormat format, bool channel_column) {
  if (format == SegmentFormat::kCsv) {
    std::fputs(channel_column ? "file,channel,start,end,probability,reason\n" : "file,start,end,probability,reason\n",
               out);
  }
}

void write_turns(std::FILE* out, SegmentFormat format, const OfflineResult& r, bool with_segments,
                 bool channel_column) {
  switch (format) {
    case SegmentFormat::kJson:
      fmt::print(out, "{}\n",
                 with_segments
                     ? result_json(r, {ResultPart::kTurns, ResultPart::kTurnIncomplete, ResultPart::kSegments})
                     : result_json(r, {ResultPart::kTurns, ResultPart::kTurnIncomplete}));
      break;
    case SegmentFormat::kCsv: {
      const std::string file = csv_file(r, channel_column);
      for (const Verdict& v : verdicts_in_order(r)) {
        fmt::print(out, "{},{},{},{},{}\n", file, v.turn->start_s, v.turn->end_s, probability_text(v.turn->probability),
                   reason_text(v));
      }
      if (r.turns.empty() && r.incomplete_turns.empty()) fmt::print(out, "{},,,,\n", file);  // read, and no turn
      break;
    }
    case SegmentFormat::kRttm:
      for (const TurnVerdict& t : r.turns) {
        fmt::print(out, "SPEAKER {} {} {:.3f} {:.3f} <NA> <NA> turn <NA> <NA>\n", rttm_id(r.file),
                   r.channel >= 0 ? r.channel + 1 : 1, t.start_s, t.end_s - t.start_s);
      }
      break;
    case SegmentFormat::kAudacity:
      for (const Verdict& v : verdicts_in_order(r)) {
        const std::string channel = r.channel >= 0 ? fmt::format(" (channel {})", r.channel) : std::string();
        fmt::print(out, "{:.6f}\t{:.6f}\tturn {}{}\n", v.turn->start_s, v.turn->end_s, reason_text(v), channel);
      }
      break;
  }
}

}  // namespace brisvox
