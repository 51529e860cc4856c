// JSON from a peer (a request body, a WebSocket text message): parsed with its nesting bounded.
//
// nlohmann's parser recurses neither in parsing nor in freeing, but it builds whatever it is given:
// 64 MiB of '[' is 64 million nested arrays, gigabytes of nodes. Every message a peer may send is
// a flat object (a field or two may hold an array or object of scalars), so anything nested deeper
// than kMaxPeerJsonDepth is refused at the bracket that goes too deep, before it is built.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace brisvox::server {

inline constexpr int kMaxPeerJsonDepth = 8;

struct PeerJson {
  nlohmann::json value;  // discarded when `error` is set
  std::string error;     // why the text is not usable JSON: nlohmann's message, or the depth limit
};

PeerJson parse_peer_json(std::string_view text);

}  // namespace brisvox::server
