#include "cli/progress_bar.h"

#include <cstdio>
#include <string>

namespace brisvox::cli {

void ProgressBar::advance() {
  ++done_;
  draw();
}

void ProgressBar::draw() {
  if (!enabled_ || total_ == 0) return;
  constexpr std::size_t kWidth = 30;
  const std::size_t filled = done_ * kWidth / total_;
  std::string bar(filled, '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "\r[%s] %zu/%zu files", bar.c_str(), done_, total_);
  std::fflush(stderr);
}

void ProgressBar::clear() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");
}

void ProgressBar::finish() {
  clear();
  enabled_ = false;
}

}  // namespace brisvox::cli
