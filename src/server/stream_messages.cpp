#include "server/stream_messages.h"

namespace brisvox::server {

std::string_view to_string(StreamEvent event) {
  switch (event) {
    case StreamEvent::kConnected: return "connected";
    case StreamEvent::kStart: return "start";
    case StreamEvent::kMedia: return "media";
    case StreamEvent::kDtmf: return "dtmf";
    case StreamEvent::kMark: return "mark";
    case StreamEvent::kStop: return "stop";
    case StreamEvent::kError: return "error";
    case StreamEvent::kCleared: return "cleared";
    case StreamEvent::kUnknown: return "unknown";
  }
  return "unknown";
}

}  // namespace brisvox::server
