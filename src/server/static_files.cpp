#include "server/static_files.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace brisvox::server {
namespace {

constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{64} << 20;

StaticFile text(int status, std::string body) {
  return StaticFile{status, "text/plain; charset=utf-8", std::move(body)};
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string_view content_type_for(std::string_view path) {
  struct Type {
    std::string_view ext, type;
  };
  static constexpr Type kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".wasm", "application/wasm"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
      {".wav", "audio/wav"},
      {".onnx", "application/octet-stream"},
  };
  for (const auto& t : kTypes) {
    if (ends_with(path, t.ext)) return t.type;
  }
  return "application/octet-stream";
}

StaticFile serve_static_file(const std::string& web_dir, std::string_view path) {
  std::string relative(path.substr(0, path.find('?')));
  while (!relative.empty() && relative.front() == '/') relative.erase(0, 1);
  if (relative.empty()) relative = "index.html";
  // Refuse anything that could leave web_dir or reach hidden files, before touching the disk.
  std::string_view rest = relative;
  while (!rest.empty()) {
    const auto slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    if (part.empty() || part.front() == '.' || part.find('\\') != std::string_view::npos ||
        part.find('%') != std::string_view::npos) {
      return text(403, fmt::format("brisvox: refusing path '{}'\n", path));
    }
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  const std::filesystem::path file = std::filesystem::path(web_dir) / relative;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    if (relative == "index.html") {
      return text(404, fmt::format("brisvox: the demo page is not installed: {} does not exist.\n"
                                   "Start the server from a source tree with web/index.html, or pass "
                                   "--web-dir DIR. The API works without it: see docs/PROTOCOL.md.\n",
                                   file.string()));
    }
    return text(404, fmt::format("brisvox: not found: {}\n", path));
  }
  const auto size = std::filesystem::file_size(file, ec);
  if (ec || size > kMaxFileBytes) return text(500, fmt::format("brisvox: cannot serve {}\n", path));
  std::ifstream in(file, std::ios::binary);
  std::ostringstream body;
  body << in.rdbuf();
  if (!in) return text(500, fmt::format("brisvox: cannot read {}\n", path));
  return StaticFile{200, std::string(content_type_for(file.string())), std::move(body).str()};
}

}  // namespace brisvox::server
