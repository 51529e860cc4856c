#include "server/histogram_series.h"

#include <fmt/format.h>

#include <cstdint>
#include <iterator>

namespace brisvox::server {

void histogram_series(std::string& out, std::string_view name, std::string_view labels, const LatencyHistogram& h,
                      std::span<const double> bounds_s) {
  auto it = std::back_inserter(out);
  for (double bound : bounds_s) {
    fmt::format_to(it, "{}_bucket{{{}le=\"{}\"}} {}\n", name, labels, bound, h.count_at_most(bound * 1e6));
  }
  // A count read once: +Inf and _count agree even while another thread records.
  const std::uint64_t count = h.count();
  const std::string plain = labels.empty() ? std::string() : fmt::format("{{{}}}", labels.substr(0, labels.size() - 1));
  fmt::format_to(it, "{}_bucket{{{}le=\"+Inf\"}} {}\n{}_sum{} {}\n{}_count{} {}\n", name, labels, count, name, plain,
                 h.sum_us() / 1e6, name, plain, count);
}

}  // namespace brisvox::server
