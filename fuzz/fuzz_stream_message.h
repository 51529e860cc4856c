// What every provider reader's target checks of a message it read (server/stream_messages.h): ok
// exactly when there is no error text, and an error text valid UTF-8 of bounded length (it goes into
// a log line).
#pragma once

#include "fuzz_check.h"
#include "fuzz_utf8.h"
#include "server/stream_messages.h"

inline void check_stream_error(const brisvox::server::StreamMessage& m) {
  FUZZ_CHECK(m.ok == m.error.empty(), "ok=%d with error '%s'", m.ok, m.error.c_str());
  if (!m.ok) {
    FUZZ_CHECK(is_utf8(m.error), "the error text is not valid UTF-8");
    FUZZ_CHECK(m.error.size() < 1024, "error text of %zu bytes", m.error.size());
  }
}
