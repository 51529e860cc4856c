// A one-line progress bar on stderr for file runs: the share of the audio read (files done, plus
// the part read of the open ones), the files done and the audio seconds read, so a single 2-hour
// file moves too. Disabled, it does nothing.
#pragma once

#include "brisvox/engine/offline.h"

namespace brisvox::cli {

class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}
  void update(const OfflineProgress& progress);
  void clear();   // erase the bar (before printing something else to the terminal)
  void finish();  // erase it for good

 private:
  bool enabled_;
  bool shown_ = false;
};

}  // namespace brisvox::cli
