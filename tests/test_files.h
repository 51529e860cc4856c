// Reading a test's files whole.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace brisvox::test {

inline std::vector<char> read_bytes(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace brisvox::test
