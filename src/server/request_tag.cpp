#include "server/request_tag.h"

#include <fmt/format.h>

#include "brisvox/error.h"
#include "server/query_params.h"

namespace brisvox::server {
namespace {

bool tag_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == ':' || c == '-';
}

}  // namespace

std::string parse_tag(std::string_view value) {
  constexpr std::string_view rule = "1 to 64 characters of A-Z a-z 0-9 . _ : -";
  if (value.empty() || value.size() > kMaxTagLength) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("query key 'tag' must be {}, got {} characters", rule, value.size()));
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (!tag_char(value[i])) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("query key 'tag' must be {}: character {} is byte 0x{:02x}", rule, i + 1,
                              static_cast<unsigned char>(value[i])));
    }
  }
  return std::string(value);
}

std::string tag_of_target(std::string_view target) noexcept {
  try {
    const auto query = parse_query_string(target_query(target));
    const auto it = query.find("tag");
    return it == query.end() ? std::string() : parse_tag(it->second);
  } catch (...) {
    return {};  // a bad query: the request is refused, and its line shows no tag
  }
}

}  // namespace brisvox::server
