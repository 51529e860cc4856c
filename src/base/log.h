// Private logging helpers: fmt-style formatting into the process-wide sink (brisvox/log.h).
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "brisvox/log.h"

namespace brisvox::detail {

bool log_enabled(LogLevel level);
void log_message(LogLevel level, std::string_view message);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(level)) log_message(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace brisvox::detail
