#include "server/asterisk_messages.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <charconv>
#include <utility>

#include "server/peer_json.h"
#include "server/stream_json.h"

namespace brisvox::server {
namespace {

using Json = nlohmann::json;

StreamEvent event_of(std::string_view name) {
  if (name == "MEDIA_START") return StreamEvent::kStart;
  if (name == "DTMF_END") return StreamEvent::kDtmf;
  if (name == "MEDIA_BUFFERING_COMPLETED") return StreamEvent::kMark;
  if (name == "ERROR") return StreamEvent::kError;
  return StreamEvent::kUnknown;  // MEDIA_XOFF, MEDIA_XON, QUEUE_DRAINED, STATUS, and any added later
}

std::string check_digit(const std::string& digit) {
  if (digit.size() != 1 || std::string_view("0123456789*#ABCD").find(digit[0]) == std::string_view::npos) {
    return "DTMF_END's digit must be one of 0-9, *, #, A-D";
  }
  return {};
}

std::string bounded_report(std::string text) {
  if (text.size() > kMaxAsteriskReportBytes) text = text.substr(0, kMaxAsteriskReportBytes) + "...";
  return printable(text);
}

// The plain-text format: NAME key:value key:value ... (a value runs to the next space), or
// MEDIA_BUFFERING_COMPLETED ID.
std::string read_asterisk_plain(std::string_view text, StreamMessage& m) {
  const std::size_t space = text.find(' ');
  m.event_name = std::string(text.substr(0, space));
  if (m.event_name.size() > kMaxAsteriskFieldBytes) return "an event name longer than 256 bytes";
  if (m.event_name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != std::string::npos) {
    m.event_name.clear();
    return "a message must begin with an event name (A-Z and _) or be a JSON object with an \"event\"";
  }
  m.event = event_of(m.event_name);
  std::string_view rest = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  if (m.event == StreamEvent::kMark) {
    m.mark_name = std::string(rest);
    return m.mark_name.size() > kMaxAsteriskFieldBytes ? "MEDIA_BUFFERING_COMPLETED's id is longer than 256 bytes"
                                                        : std::string();
  }
  if (m.event == StreamEvent::kError) {
    m.report = bounded_report(std::string(rest));
    return {};
  }
  if (m.event == StreamEvent::kUnknown) return {};
  std::string frame_size;
  while (!rest.empty()) {
    const std::size_t next = rest.find(' ');
    const std::string_view pair = rest.substr(0, next);
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
    if (pair.empty()) continue;
    const std::size_t colon = pair.find(':');
    if (colon == std::string_view::npos) return fmt::format("{}: \"{}\" is not key:value", m.event_name, printable(std::string(pair.substr(0, 64))));
    const std::string_view key = pair.substr(0, colon);
    const std::string value(pair.substr(colon + 1));
    if (value.size() > kMaxAsteriskFieldBytes) return fmt::format("{}: a value longer than 256 bytes", m.event_name);
    if (m.event == StreamEvent::kDtmf) {
      if (key == "digit") m.digit = value;
      continue;
    }
    if (key == "connection_id") m.start.stream_sid = value;
    if (key == "channel_id") m.start.call_sid = value;
    if (key == "format") m.start.encoding = value;
    if (key == "optimal_frame_size") frame_size = value;
  }
  if (m.event == StreamEvent::kDtmf) return check_digit(m.digit);
  if (m.start.encoding.empty()) return "MEDIA_START has no format";
  if (!frame_size.empty()) {
    int n = 0;
    const auto [end, ec] = std::from_chars(frame_size.data(), frame_size.data() + frame_size.size(), n);
    if (ec != std::errc() || end != frame_size.data() + frame_size.size() || n < 0) {
      return "MEDIA_START's optimal_frame_size is not a number";
    }
  }
  m.start.control_format = "plain-text";
  return {};
}

std::string read_asterisk_json(const Json& j, StreamMessage& m) {
  const auto event = j.find("event");
  if (event == j.end() || !event->is_string() || event->get_ref<const std::string&>().size() > kMaxAsteriskFieldBytes) {
    return "a JSON message must be an object with an \"event\" (a short string)";
  }
  m.event_name = event->get<std::string>();
  m.event = event_of(m.event_name);
  std::string e;
  switch (m.event) {
    case StreamEvent::kStart: {
      StreamStart& s = m.start;
      if (!(e = read_string(j, "connection_id", s.stream_sid, kMaxAsteriskFieldBytes, false, "MEDIA_START")).empty() ||
          !(e = read_string(j, "channel_id", s.call_sid, kMaxAsteriskFieldBytes, false, "MEDIA_START")).empty() ||
          !(e = read_string(j, "format", s.encoding, kMaxAsteriskFieldBytes, true, "MEDIA_START")).empty()) {
        return e;
      }
      if (j.contains("optimal_frame_size")) {
        int n = 0;
        if (!(e = read_count(j, "optimal_frame_size", n, "MEDIA_START")).empty()) return e;
      }
      if (!(e = read_parameters(j, "channel_variables", kMaxAsteriskVariables, kMaxAsteriskVariableBytes,
                                s.custom_parameters, "MEDIA_START")).empty()) {
        return e;
      }
      s.control_format = "json";
      return {};
    }
    case StreamEvent::kDtmf:
      if (!(e = read_string(j, "digit", m.digit, kMaxAsteriskFieldBytes, true, "DTMF_END")).empty()) return e;
      return check_digit(m.digit);
    case StreamEvent::kMark:
      return read_string(j, "correlation_id", m.mark_name, kMaxAsteriskFieldBytes, false, "MEDIA_BUFFERING_COMPLETED");
    case StreamEvent::kError: {
      std::string text;
      if (!(e = read_string(j, "error_text", text, kMaxAsteriskReportBytes * 4, false, "ERROR")).empty()) return e;
      m.report = bounded_report(std::move(text));
      return {};
    }
    default:
      return {};
  }
}

}  // namespace

StreamMessage parse_asterisk_message(std::string_view text) {
  StreamMessage m;
  // Asterisk strips a command's surrounding whitespace; its own messages are written without.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  std::string error;
  if (!text.empty() && text.front() == '{') {
    PeerJson parsed = parse_peer_json(text);
    if (!parsed.error.empty()) {
      m.error = printable("not JSON: " + parsed.error.substr(0, 200));
      return m;
    }
    error = parsed.value.is_object() ? read_asterisk_json(parsed.value, m)
                                     : "a JSON message must be an object with an \"event\" (a short string)";
  } else if (text.empty()) {
    error = "an empty message";
  } else {
    error = read_asterisk_plain(text, m);
  }
  if (!error.empty()) {
    // The event name is the peer's.
    m.error = printable(fmt::format("an Asterisk {}message: {}",
                                    m.event == StreamEvent::kUnknown ? "" : m.event_name + " ", error));
    return m;
  }
  m.stream_sid = {};  // the socket is the stream: no message but MEDIA_START names it
  m.ok = true;
  return m;
}

AsteriskFormat asterisk_format(std::string_view name) {
  if (name == "ulaw") return {"mulaw", 8000};
  if (name == "alaw") return {"alaw", 8000};
  if (name == "slin") return {"pcm_s16le", 8000};
  if (name == "slin16") return {"pcm_s16le", 16000};
  return {};
}

std::string check_asterisk_format(const StreamStart& start, std::string_view name) {
  if (start.encoding == name) return {};
  return fmt::format("MEDIA_START's format is {}; this connection takes {} (set the dial string's c({}) and the "
                     "connection's ?format= to match)",
                     json_quoted(start.encoding), name, name);
}

std::string asterisk_command(std::string_view command, bool json) {
  return json ? fmt::format(R"({{"command":{}}})", json_quoted(command)) : std::string(command);
}

std::string asterisk_stop_buffering(std::string_view id, bool json) {
  return json ? fmt::format(R"({{"command":"STOP_MEDIA_BUFFERING","correlation_id":{}}})", json_quoted(id))
              : fmt::format("STOP_MEDIA_BUFFERING {}", id);
}

}  // namespace brisvox::server
