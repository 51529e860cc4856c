#include "server/call_metrics.h"

#include <fmt/format.h>

#include <iterator>

#include "server/histogram_series.h"

namespace brisvox::server {
namespace {

// Time to first audio: 10 ms to 10 s (a first clause takes tens of ms of a core; queued behind
// other calls' first sentences, more).
constexpr double kCallFirstAudioBoundsS[] = {0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10};

}  // namespace

std::string render_call_metrics(const CallMetrics& m) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "# HELP brisvox_call_sessions Calls (/v1/call) open.\n# TYPE brisvox_call_sessions gauge\n"
                     "brisvox_call_sessions {}\n",
                 m.sessions_active.load());
  fmt::format_to(it, "# HELP brisvox_call_sessions_total Calls opened.\n# TYPE brisvox_call_sessions_total counter\n"
                     "brisvox_call_sessions_total {}\n",
                 m.sessions_total.load());
  fmt::format_to(it, "# HELP brisvox_call_speaks_total Speaks of calls, accepted and ended by outcome.\n"
                     "# TYPE brisvox_call_speaks_total counter\n"
                     "brisvox_call_speaks_total{{outcome=\"accepted\"}} {}\n"
                     "brisvox_call_speaks_total{{outcome=\"done\"}} {}\n"
                     "brisvox_call_speaks_total{{outcome=\"interrupted\"}} {}\n"
                     "brisvox_call_speaks_total{{outcome=\"cancelled\"}} {}\n"
                     "brisvox_call_speaks_total{{outcome=\"failed\"}} {}\n",
                 m.speaks.load(), m.speaks_done.load(), m.speaks_interrupted.load(), m.speaks_cancelled.load(),
                 m.speaks_failed.load());
  fmt::format_to(it, "# HELP brisvox_call_barge_ins_total Callers' confirmed speech that stopped a call's speech.\n"
                     "# TYPE brisvox_call_barge_ins_total counter\nbrisvox_call_barge_ins_total {}\n",
                 m.barge_ins.load());
  fmt::format_to(it, "# HELP brisvox_call_first_audio_seconds From a speak accepted to its first audio handed to "
                     "the socket.\n# TYPE brisvox_call_first_audio_seconds histogram\n");
  histogram_series(out, "brisvox_call_first_audio_seconds", "", m.first_audio, kCallFirstAudioBoundsS);
  return out;
}

}  // namespace brisvox::server
