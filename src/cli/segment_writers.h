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

// Writes the format's header, if it has one (CSV: file,start,end; with `channel_column`
// file,channel,start,end).
void write_header(std::FILE* out, SegmentFormat format, bool channel_column = false);
// One file's segments; JSON is the offline runner's document (result_json), with the frame
// probabilities when `frame_probs`. A result of one channel (result.channel >= 0) says so: JSON
// "channel", CSV its column (give `channel_column` to both calls), RTTM's channel field
// (channel + 1: RTTM counts from 1), Audacity's label "speech (channel N)".
// A file without speech is told from a missing one: CSV writes one row with empty start and end;
// JSON has "segments":[]; RTTM and Audacity have no line for it (with -o, an empty file).
void write_segments(std::FILE* out, SegmentFormat format, const OfflineResult& result, bool frame_probs,
                    bool channel_column = false);

// The pieces the other writers of these formats (`brisvox turn`) share: a CSV field quoted when
// it needs it, and the RTTM file id of a path.
std::string csv_quote(const std::string& s);
std::string rttm_id(const std::string& file);

}  // namespace brisvox::cli
