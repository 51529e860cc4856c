// The label formats of offline results: speech segments (`brisvox vad`) and end-of-turn verdicts
// (`brisvox turn`) as JSON, CSV, RTTM or Audacity labels, one writer call per result.
#pragma once

#include <cstdio>
#include <string_view>

#include "brisvox/engine/offline.h"

namespace brisvox {

enum class SegmentFormat { kJson, kCsv, kRttm, kAudacity };

// "json|csv|rttm|audacity"; throws Error(kInvalidArgument) otherwise.
SegmentFormat parse_segment_format(std::string_view name);
std::string_view file_extension(SegmentFormat format);

// Writes the format's header, if it has one (CSV: file,start,end; with `channel_column`
// file,channel,start,end).
void write_header(std::FILE* out, SegmentFormat format, bool channel_column = false);
// One file's segments; JSON is the result document (result_json.h), with the frame probabilities
// when `frame_probs`. A result of one channel (result.channel >= 0) says so: JSON "channel", CSV
// its column (give `channel_column` to both calls), RTTM's channel field (channel + 1: RTTM counts
// from 1), Audacity's label "speech (channel N)".
// A file without speech is told from a missing one: CSV writes one row with empty start and end;
// JSON has "segments":[]; RTTM and Audacity have no line for it (with -o, an empty file).
void write_segments(std::FILE* out, SegmentFormat format, const OfflineResult& result, bool frame_probs,
                    bool channel_column = false);

// The same for turns: CSV's header is file,[channel,]start,end,probability,reason.
void write_turn_header(std::FILE* out, SegmentFormat format, bool channel_column = false);
// One file's turns. JSON: the result document with the turns and the "not finished yet" verdicts
// (and the segments, `with_segments`); CSV and Audacity: one line per verdict, finished or not,
// in the order the analyses ended (probability empty when there was none, reason "incomplete"
// for a pause that was not the end); RTTM: the finished turns.
void write_turns(std::FILE* out, SegmentFormat format, const OfflineResult& result, bool with_segments,
                 bool channel_column = false);

}  // namespace brisvox
