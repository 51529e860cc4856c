// A LatencyHistogram as the samples of a Prometheus histogram (text format 0.0.4): the one writer
// of every brisvox_*_seconds histogram in GET /metrics. Pure; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "brisvox/latency_histogram.h"

namespace brisvox::server {

// Appends `name`'s _bucket lines (cumulative, one per bound in seconds, then +Inf), _sum (seconds)
// and _count. `labels` is empty or ends in a comma (`provider="twilio",`): it goes before le. The
// # HELP and # TYPE lines are the caller's.
void histogram_series(std::string& out, std::string_view name, std::string_view labels, const LatencyHistogram& h,
                      std::span<const double> bounds_s);

}  // namespace brisvox::server
