// Output formats of `brisvox vad`: one writer per format, each writing one file's result.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace brisvox::cli {

struct FileSegments {
  std::string file;
  int input_sample_rate_hz = 0;
  double duration_s = 0;
  std::vector<std::pair<double, double>> segments_s;  // [start, end) in seconds
  const std::vector<float>* frame_probs = nullptr;    // set when --frame-probs
};

enum class SegmentFormat { kJson, kCsv, kRttm, kAudacity };

// "json|csv|rttm|audacity"; throws Error(kInvalidArgument) otherwise.
SegmentFormat parse_segment_format(std::string_view name);
std::string_view file_extension(SegmentFormat format);

// Writes the format's header, if it has one (CSV).
void write_header(std::FILE* out, SegmentFormat format);
void write_segments(std::FILE* out, SegmentFormat format, const FileSegments& result);

}  // namespace brisvox::cli
