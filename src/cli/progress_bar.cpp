#include "cli/progress_bar.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace brisvox::cli {

void ProgressBar::update(const OfflineProgress& p) {
  if (!enabled_) return;
  constexpr std::size_t kWidth = 30;
  const auto filled = static_cast<std::size_t>(std::clamp(p.fraction, 0.0, 1.0) * kWidth);
  std::string bar(filled, '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "\r[%s] %zu/%zu file%s, %.0f s of audio read", bar.c_str(), p.num_done, p.num_inputs,
               p.num_inputs == 1 ? "" : "s", p.seconds_read);
  std::fflush(stderr);
  shown_ = true;
}

void ProgressBar::clear() {
  if (enabled_ && shown_) std::fprintf(stderr, "\r\033[K");
  shown_ = false;
}

void ProgressBar::finish() {
  clear();
  enabled_ = false;
}

}  // namespace brisvox::cli
