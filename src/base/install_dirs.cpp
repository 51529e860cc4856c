#include "base/install_dirs.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

namespace brisvox::detail {
namespace {

namespace fs = std::filesystem;

// An object file whose path names a shared library ("libbrisvox_c.so.0"): dladdr's path for the
// main executable is argv[0]-like (relative, or no path at all), so it is used only for libraries.
bool is_shared_library(std::string_view path) {
  return path.find(".so") != std::string_view::npos && path.find('/') != std::string_view::npos;
}

}  // namespace

std::string binary_dir() {
  std::error_code ec;
  Dl_info info{};
  // Any function of this file locates the object the layers were linked into.
  if (::dladdr(reinterpret_cast<const void*>(&binary_dir), &info) != 0 && info.dli_fname != nullptr &&
      is_shared_library(info.dli_fname)) {
    const fs::path lib = fs::canonical(info.dli_fname, ec);
    if (!ec) return lib.parent_path().string();
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return exe.parent_path().string();
}

std::string installed_data_dir(std::string_view name) {
  const std::string dir = binary_dir();
  if (dir.empty()) return {};
  return (fs::path(dir) / ".." / "share" / "brisvox" / name).lexically_normal().string();
}

}  // namespace brisvox::detail
