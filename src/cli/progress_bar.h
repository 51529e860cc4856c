// A one-line progress bar on stderr, for many-file runs on a terminal. Disabled, it does nothing.
#pragma once

#include <cstddef>

namespace brisvox::cli {

class ProgressBar {
 public:
  ProgressBar(std::size_t total, bool enabled) : total_(total), enabled_(enabled) {}
  void advance();
  void clear();   // erase the bar (before printing something else to the terminal)
  void finish();  // erase it for good

 private:
  void draw();
  std::size_t total_;
  std::size_t done_ = 0;
  bool enabled_;
};

}  // namespace brisvox::cli
