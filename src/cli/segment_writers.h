// Output formats of `brisvox vad`: one writer per format, each writing one file's result.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "brisvox/engine/offline.h"

namespace brisvox::cli {

enum class SegmentFormat { kJson, kCsv, kRttm, kAudacity };

// "json|csv|rttm|audacity"; throws Error(kInvalidArgument) otherwise.
SegmentFormat parse_segment_format(std::string_view name);
std::string_view file_extension(SegmentFormat format);

// Writes the format's header, if it has one (CSV).
void write_header(std::FILE* out, SegmentFormat format);
// One file's segments; JSON is the offline runner's document (result_json), with the frame
// probabilities when `frame_probs`.
void write_segments(std::FILE* out, SegmentFormat format, const OfflineResult& result, bool frame_probs);

}  // namespace brisvox::cli
