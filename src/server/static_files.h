// The demo page route: GET / serves <web_dir>/index.html, GET /<file> the files beside it.
// Only regular files inside web_dir are served (no "..", no hidden files); a missing page is a
// 404 whose text says where the page was looked for.
#pragma once

#include <string>
#include <string_view>

namespace brisvox::server {

struct StaticFile {
  int status = 200;  // 200, 404, or 403 for a path that tries to leave web_dir
  std::string content_type;
  std::string body;
};

// `path` is the request target's path ("/", "/app.js"), percent-decoded or not.
StaticFile serve_static_file(const std::string& web_dir, std::string_view path);

// Content type by extension ("text/html; charset=utf-8", ...; application/octet-stream otherwise).
std::string_view content_type_for(std::string_view path);

}  // namespace brisvox::server
