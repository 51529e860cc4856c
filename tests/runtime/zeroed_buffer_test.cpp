// ZeroedBuffer (src/base/zeroed_buffer.h): zero-filled, moved without a copy, and resident only
// where written, the property the Whisper decoder's and encoder's worst-case buffers rely on.
#include "base/zeroed_buffer.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <string>
#include <utility>

namespace brisvox {
namespace {

double rss_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

TEST(ZeroedBuffer, IsZeroFilledAndMovesWithoutACopy) {
  ZeroedBuffer<float> a(1 << 20);
  ASSERT_EQ(a.size(), std::size_t{1} << 20);
  for (std::size_t i = 0; i < a.size(); i += 4099) EXPECT_EQ(a.data()[i], 0.0f);
  a.data()[7] = 1.5f;
  float* const where = a.data();
  ZeroedBuffer<float> b(std::move(a));
  EXPECT_EQ(b.data(), where);
  EXPECT_EQ(b.data()[7], 1.5f);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): a moved-from buffer is empty
  EXPECT_EQ(a.size(), 0u);
  ZeroedBuffer<float> c;
  c = std::move(b);
  EXPECT_EQ(c.data(), where);
  EXPECT_EQ(ZeroedBuffer<int>(0).data(), nullptr);
}

TEST(ZeroedBuffer, OnlyWrittenPagesAreResident) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory and allocator change what is resident";
#else
  const double before = rss_mib();
  ZeroedBuffer<float> big(std::size_t{64} << 20);  // 256 MiB
  float sum = 0;
  for (std::size_t i = 0; i < big.size(); i += 1024) sum += big.data()[i];  // reads: the zero page
  EXPECT_EQ(sum, 0.0f);
  EXPECT_LT(rss_mib() - before, 16.0) << "allocated and read, nothing written";
  for (std::size_t i = 0; i < big.size() / 4; i += 1024) big.data()[i] = 1.0f;  // a quarter written
  const double grown = rss_mib() - before;
  EXPECT_GT(grown, 48.0);
  EXPECT_LT(grown, 80.0);
#endif
}

}  // namespace
}  // namespace brisvox
