#include "server/multipart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "brisvox/error.h"
#include "server/header_value.h"

namespace brisvox::server {
namespace {

constexpr std::string_view kHint = "send the audio as the form field 'file' (curl -F file=@call.wav), or as the raw body";

[[noreturn]] void bad_form(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, fmt::format("multipart/form-data body: {}; {}", what, kHint));
}

}  // namespace

bool is_multipart_form(std::string_view content_type) {
  return media_type(content_type) == "multipart/form-data";
}

void for_each_form_part(std::string_view body, std::string_view content_type,
                        const std::function<bool(const FormPart&)>& visit) {
  const std::optional<std::string> boundary = header_param(content_type, "boundary");
  // RFC 2046: 1 to 70 characters.
  if (!boundary || boundary->empty() || boundary->size() > 70) bad_form("the Content-Type has no valid boundary");
  const std::string delimiter = "--" + *boundary;
  // The first delimiter: at the start, or after a preamble ending in CRLF.
  std::size_t pos = 0;
  if (body.substr(0, delimiter.size()) != delimiter) {
    pos = body.find("\r\n" + delimiter);
    if (pos == std::string_view::npos) bad_form(fmt::format("it does not contain its boundary '{}'", *boundary));
    pos += 2;
  }
  const std::string next_delimiter = "\r\n" + delimiter;
  while (true) {
    pos += delimiter.size();
    if (body.substr(pos, 2) == "--") break;  // the closing delimiter
    // Transport padding (spaces) may follow a delimiter, then CRLF.
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") bad_form("a boundary is not followed by a line end");
    pos += 2;
    // From the line end just read: a part without headers is CRLF CRLF there.
    const std::size_t headers_end = body.find("\r\n\r\n", pos - 2);
    if (headers_end == std::string_view::npos) bad_form("a part's headers do not end (no empty line)");
    std::optional<std::string> name;
    std::string filename;
    for (std::size_t line = pos; line < headers_end + 2;) {
      const std::size_t eol = body.find("\r\n", line);
      const std::string_view header = body.substr(line, eol - line);
      line = eol + 2;
      const std::size_t colon = header.find(':');
      if (colon == std::string_view::npos) continue;
      if (ascii_lower(trim_ows(header.substr(0, colon))) != "content-disposition") continue;
      const std::string_view value = header.substr(colon + 1);
      name = header_param(value, "name");
      filename = header_param(value, "filename").value_or("");
    }
    const std::size_t data_begin = headers_end + 4;
    const std::size_t data_end = body.find(next_delimiter, data_begin);
    if (data_end == std::string_view::npos) bad_form("it is cut short: the closing boundary is missing");
    if (!name) bad_form("a part has no Content-Disposition name");
    if (!visit(FormPart{*name, filename, body.substr(data_begin, data_end - data_begin)})) return;
    pos = data_end + 2;
  }
}

FormFile form_field(std::string_view body, std::string_view content_type, std::string_view field) {
  std::optional<FormFile> found;
  std::vector<std::string> names;
  for_each_form_part(body, content_type, [&](const FormPart& part) {
    if (part.name == field) {
      found = FormFile{part.data, std::string(part.filename)};
      return false;
    }
    names.emplace_back(part.name);
    return true;
  });
  if (found) return *found;
  // The error quotes the client's own field names: a few of them, each cut short, never the
  // whole form (a 20 MB form of names made a 20 MB error).
  constexpr std::size_t kShownNames = 8, kShownChars = 40;
  std::string there;
  for (std::size_t i = 0; i < names.size() && i < kShownNames; ++i) {
    const std::string& n = names[i];
    there += (there.empty() ? "'" : ", '") + (n.size() > kShownChars ? n.substr(0, kShownChars) + "..." : n) + "'";
  }
  if (names.size() > kShownNames) there += fmt::format(" and {} more", names.size() - kShownNames);
  bad_form(fmt::format("it has no field '{}' (fields: {})", field, there.empty() ? std::string("none") : there));
}

}  // namespace brisvox::server
