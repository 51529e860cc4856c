// multipart/form-data request bodies (RFC 7578), as `curl -F file=@call.wav` and HTML forms send
// them to POST /v1/vad and /v1/transcribe: the audio is the form field named "file".
//
// Only what an upload needs: the boundary from the Content-Type, each part's Content-Disposition
// name and filename, and the part's bytes, which are a view into the body (nothing is copied).
// Other fields are skipped; part headers other than Content-Disposition are ignored (a part's
// Content-Type says nothing the audio decoder does not find in the bytes).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace brisvox::server {

// Whether `content_type` (a Content-Type header value) is multipart/form-data (case-insensitive).
bool is_multipart_form(std::string_view content_type);

struct FormFile {
  std::string_view data;  // the part's bytes: a view into the body
  std::string filename;   // its filename="...", empty if none
};

// One part of a form: views into the body (valid while `visit` runs).
struct FormPart {
  std::string_view name;      // its Content-Disposition name
  std::string_view filename;  // its filename="...", empty if none
  std::string_view data;
};

// Every part of a multipart/form-data `body`, in order, to `visit`, until it returns false. The
// errors of form_field for a malformed form (those after the part where `visit` stopped are not
// seen).
void for_each_form_part(std::string_view body, std::string_view content_type,
                        const std::function<bool(const FormPart&)>& visit);

// The form field `field` of a multipart/form-data `body` whose Content-Type is `content_type`.
// Throws Error(kInvalidArgument) with what is wrong and how to send it right: no boundary, a
// body that does not start with it or is cut before the closing boundary, a part without a
// Content-Disposition, or no field `field` (naming the fields there are).
FormFile form_field(std::string_view body, std::string_view content_type, std::string_view field);

}  // namespace brisvox::server
