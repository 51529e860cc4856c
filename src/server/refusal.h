// A request the server refuses, as its HTTP answer gives it: the status, the documented error code
// (docs/PROTOCOL.md) and a message that says what to do about it.
#pragma once

#include <string>

namespace brisvox::server {

struct Refusal {
  int status = 400;
  std::string code;
  std::string message;
};

}  // namespace brisvox::server
