// The JSON documents of offline results (engine/offline.h): what `brisvox vad`, `brisvox turn` and
// `brisvox transcribe` print with --format json, and what POST /v1/vad and /v1/transcribe answer.
#pragma once

#include <initializer_list>
#include <span>
#include <string>

#include "brisvox/engine/offline.h"

namespace brisvox {

// The parts of the result document, in the order they are written.
enum class ResultPart { kSegments, kFrameProbs, kTurns, kTurnIncomplete };

// The JSON object of one result, on one line without its newline:
//   {"file":...,["channel":N,]"sample_rate":<input rate>,"duration":s, then the parts in order:
//    "segments":[{"start":s,"end":s},...], "frame_probs":[p,...],
//    "turns":[{"start":s,"end":s,"probability":p|null,"reason":"model|timeout|end_of_stream"},...],
//    "incomplete":[{"start":s,"end":s,"probability":p},...]: the analyses that said the speaker
//    paused but had not finished (kTurnIncomplete)}
// "channel" is there only for a result of one channel (OfflineResult::channel >= 0).
// What `brisvox vad --format json` (segments, frame_probs), `brisvox turn` (turns, segments) and
// POST /v1/vad (segments, frame_probs, turns) print. Invalid UTF-8 in the file name is replaced.
std::string result_json(const OfflineResult& result, std::span<const ResultPart> parts);
inline std::string result_json(const OfflineResult& result, std::initializer_list<ResultPart> parts) {
  return result_json(result, std::span(parts.begin(), parts.size()));
}

// The transcription document of one result (`brisvox transcribe --format json`, POST
// /v1/transcribe), on one line without its newline:
//   {"file":...,"duration":s,"language":"en","language_probability":p,"text":"...",
//    "segments":[{"start":s,"end":s,"text":"..."},...]}
// "language" and "language_probability": the first transcript's (absent without any).
// "text" joins the segments' texts with spaces; each text is trimmed of surrounding whitespace;
// segments without speech (Whisper's no-speech rule) are left out.
std::string transcript_json(const OfflineResult& result);
// With word timestamps, each segment also holds "words" (words_json).
// A transcript's words: [{"start":s,"end":s,"word":" Hello,","probability":p},...], faster-whisper's
// Word fields (the word with its leading space and merged punctuation), times in the recording.
std::string words_json(std::span<const WhisperWord> words);
// The recording's whole text (as "text" above).
std::string transcript_text(const OfflineResult& result);
// The recording's language: its first transcript's (the given, detected or "en"), and that
// transcript's detection probability; nullptr without any transcript.
const Transcript* first_transcript(const OfflineResult& result);

}  // namespace brisvox
