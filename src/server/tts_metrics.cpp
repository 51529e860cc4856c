#include "server/tts_metrics.h"

#include <fmt/format.h>

#include <iterator>

#include "server/histogram_series.h"

namespace brisvox::server {
namespace {

// Time to first audio: 10 ms to 10 s (a sentence takes 0.1 to 5 s of a core; queued behind others, more).
constexpr double kTtsFirstAudioBoundsS[] = {0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10};

void counter(std::string& out, std::string_view name, std::string_view help, std::string_view series) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} counter\n{}", name, help, name, series);
}

}  // namespace

std::string render_tts_metrics(const TtsMetrics& m) {
  std::string out;
  counter(out, "brisvox_tts_requests_total", "Texts accepted for synthesis, by endpoint.",
          fmt::format("brisvox_tts_requests_total{{endpoint=\"http\"}} {}\nbrisvox_tts_requests_total{{endpoint=\"ws\"}} {}\n",
                      m.http_requests.load(), m.ws_utterances.load()));
  counter(out, "brisvox_tts_utterances_total", "Utterances ended, by outcome.",
          fmt::format("brisvox_tts_utterances_total{{outcome=\"done\"}} {}\n"
                      "brisvox_tts_utterances_total{{outcome=\"cancelled\"}} {}\n"
                      "brisvox_tts_utterances_total{{outcome=\"failed\"}} {}\n",
                      m.utterances_done.load(), m.utterances_cancelled.load(), m.utterances_failed.load()));
  counter(out, "brisvox_tts_audio_seconds_total", "Seconds of synthesised audio sent to clients.",
          fmt::format("brisvox_tts_audio_seconds_total {}\n", m.audio_seconds_sent.load()));
  fmt::format_to(std::back_inserter(out),
                 "# HELP brisvox_tts_websocket_sessions WebSocket /v1/tts sessions open.\n"
                 "# TYPE brisvox_tts_websocket_sessions gauge\nbrisvox_tts_websocket_sessions {}\n",
                 m.ws_sessions_active.load());
  counter(out, "brisvox_tts_websocket_sessions_total", "WebSocket /v1/tts sessions opened.",
          fmt::format("brisvox_tts_websocket_sessions_total {}\n", m.ws_sessions_total.load()));
  fmt::format_to(std::back_inserter(out),
                 "# HELP brisvox_tts_first_audio_seconds From a text accepted to its first audio handed to the "
                 "socket.\n# TYPE brisvox_tts_first_audio_seconds histogram\n");
  histogram_series(out, "brisvox_tts_first_audio_seconds", "", m.first_audio, kTtsFirstAudioBoundsS);
  return out;
}

}  // namespace brisvox::server
