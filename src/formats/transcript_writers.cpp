#include "brisvox/formats/transcript_writers.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "brisvox/error.h"
#include "brisvox/formats/result_json.h"
#include "formats/fields.h"

namespace brisvox {

namespace {

struct TranscriptFormatName {
  TranscriptFormat format;
  std::string_view name;       // --format's
  std::string_view extension;  // of -o files
};
constexpr TranscriptFormatName kTranscriptFormats[] = {{TranscriptFormat::kJson, "json", ".json"},
                                    {TranscriptFormat::kTxt, "txt", ".txt"},
                                    {TranscriptFormat::kSrt, "srt", ".srt"},
                                    {TranscriptFormat::kVtt, "vtt", ".vtt"}};

// SubRip and WebVTT times: HH:MM:SS,mmm and HH:MM:SS.mmm.
std::string clock_time(double seconds, char separator) {
  const auto ms = static_cast<long long>(std::llround(seconds * 1000.0));
  return fmt::format("{:02}:{:02}:{:02}{}{:03}", ms / 3'600'000, ms / 60'000 % 60, ms / 1000 % 60, separator, ms % 1000);
}

void write_subtitles(std::FILE* out, bool vtt, const OfflineResult& r) {
  const char separator = vtt ? '.' : ',';
  if (vtt) fmt::print(out, "WEBVTT\n\n");
  int index = 1;
  auto cue = [&](double start_s, double end_s, const std::string& text) {
    if (!vtt) fmt::print(out, "{}\n", index);
    ++index;
    fmt::print(out, "{} --> {}\n{}\n\n", clock_time(start_s, separator), clock_time(end_s, separator), text);
  };
  for (const TranscriptSegment& seg : r.transcripts) {
    const std::string text = formats::trimmed(seg.transcript.text);
    if (seg.transcript.no_speech || text.empty()) continue;
    if (seg.transcript.words.empty()) {
      cue(seg.start_s, seg.end_s, text);
      continue;
    }
    for (const WhisperWord& w : seg.transcript.words) cue(w.start_s, w.end_s, formats::trimmed(w.text));
  }
}

}  // namespace

TranscriptFormat parse_transcript_format(std::string_view name) {
  for (const TranscriptFormatName& f : kTranscriptFormats) {
    if (name == f.name) return f.format;
  }
  throw Error(ErrorCode::kInvalidArgument, fmt::format("unknown format '{}': use json, txt, srt or vtt", name));
}

std::string_view file_extension(TranscriptFormat format) noexcept {
  for (const TranscriptFormatName& f : kTranscriptFormats) {
    if (f.format == format) return f.extension;
  }
  return ".txt";
}

void write_transcript(std::FILE* out, TranscriptFormat format, const OfflineResult& r) {
  switch (format) {
    case TranscriptFormat::kJson:
      fmt::print(out, "{}\n", transcript_json(r));
      break;
    case TranscriptFormat::kTxt:
      fmt::print(out, "{}\n", transcript_text(r));
      break;
    case TranscriptFormat::kSrt:
    case TranscriptFormat::kVtt:
      write_subtitles(out, format == TranscriptFormat::kVtt, r);
      break;
  }
}

}  // namespace brisvox
