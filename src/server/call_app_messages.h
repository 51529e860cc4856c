// The duplex call protocol between brisvox and a telephony call's application (docs/TELEPHONY.md,
// "The application side"): the messages brisvox sends that /v1/call does not (call_start, dtmf,
// call_end), and the reading of what the application sends: /v1/call's speak, cancel and mark
// (call_params.h), and hangup in place of close. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/call_params.h"

namespace brisvox::server {

// What call_start tells the application of the call.
struct CallStartInfo {
  std::string_view provider;    // "twilio", "telnyx"
  std::string_view call_id;     // the provider's call id (Twilio: callSid, Telnyx: call_control_id)
  std::string_view stream_id;   // the provider's media stream id (Twilio: streamSid, Telnyx: stream_id)
  std::string_view account_id;  // Twilio: accountSid, Telnyx: user_id; "" when absent
  bool listen_only = false;     // the stream takes no audio back: speak is refused
  const std::vector<std::pair<std::string, std::string>>* parameters = nullptr;  // the provider's custom parameters
  std::uint64_t session_id = 0;  // brisvox's id of the call (its log lines)
};
std::string call_start_message(const CallStartInfo& info);
std::string dtmf_message(std::string_view digit);
// reason: caller_hangup, app_hangup, provider_gone, error, shutdown; `detail` empty or a why.
std::string call_end_message(std::string_view reason, std::string_view detail);

enum class AppMessageType { kSpeak, kCancel, kMark, kHangup };
struct AppMessage {
  bool ok = false;
  AppMessageType type = AppMessageType::kSpeak;
  CallMessage call;   // kSpeak, kMark: as parse_call_message read it
  std::string error;  // !ok
};
// Never throws.
AppMessage parse_app_message(std::string_view json_text);

}  // namespace brisvox::server
