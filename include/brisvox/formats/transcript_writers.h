// The formats of a transcription (`brisvox transcribe`): the JSON document (result_json.h), the
// plain text, and subtitles (SubRip, WebVTT) with one cue per segment that holds speech, or with
// word timestamps one cue per word.
#pragma once

#include <cstdio>
#include <string_view>

#include "brisvox/engine/offline.h"

namespace brisvox {

enum class TranscriptFormat { kJson, kTxt, kSrt, kVtt };

// "json|txt|srt|vtt"; throws Error(kInvalidArgument) otherwise.
TranscriptFormat parse_transcript_format(std::string_view name);
std::string_view file_extension(TranscriptFormat format) noexcept;
// Subtitles hold one recording's track: one result per file.
constexpr bool is_subtitles(TranscriptFormat format) noexcept {
  return format == TranscriptFormat::kSrt || format == TranscriptFormat::kVtt;
}

// One result: JSON and text on one line each; subtitles as a whole file (WebVTT's header
// included), cue times HH:MM:SS,mmm (SubRip) or HH:MM:SS.mmm (WebVTT).
void write_transcript(std::FILE* out, TranscriptFormat format, const OfflineResult& result);

}  // namespace brisvox
