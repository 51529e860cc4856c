// The multipart/form-data parser of POST /v1/vad (server/multipart.h) on arbitrary bodies and
// Content-Type values: the first input byte splits the data into a Content-Type and a body.
//
// Invariants: form_field fails only with kInvalidArgument; the part it returns lies inside the
// body (a view, never past its end), and the body holds the boundary's delimiter right after it.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "brisvox/error.h"
#include "fuzz_check.h"
#include "server/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t split = std::min<std::size_t>(data[0], size - 1);
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string content_type = "multipart/form-data; " + std::string(input.substr(0, split));
  const std::string_view body = input.substr(split);
  FUZZ_CHECK(brisvox::server::is_multipart_form(content_type), "%s", content_type.c_str());
  try {
    const brisvox::server::FormFile f = brisvox::server::form_field(body, content_type, "file");
    FUZZ_CHECK(f.data.data() >= body.data() && f.data.data() + f.data.size() <= body.data() + body.size(),
               "the part lies outside the body");
    FUZZ_CHECK(std::string_view(f.data.data() + f.data.size(), body.data() + body.size() - (f.data.data() + f.data.size()))
                   .starts_with("\r\n--"),
               "the part is not followed by a delimiter");
  } catch (const brisvox::Error& e) {
    FUZZ_CHECK(e.code() == brisvox::ErrorCode::kInvalidArgument, "%s", e.what());
  }
  return 0;
}
