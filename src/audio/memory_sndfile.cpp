#include "audio/memory_sndfile.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace brisvox::audio {
namespace {

MemorySndfile& self_of(void* user_data) { return *static_cast<MemorySndfile*>(user_data); }

}  // namespace

MemorySndfile::MemorySndfile(std::span<const std::byte> bytes) noexcept
    : bytes_(bytes), io_{&get_filelen, &seek, &read, &write, &tell} {}

SNDFILE* MemorySndfile::open(SF_INFO* info) noexcept {
  position_ = 0;
  return sf_open_virtual(&io_, SFM_READ, info, this);
}

bool MemorySndfile::read_at(std::uint64_t offset, void* buffer, std::size_t size) const noexcept {
  if (offset > bytes_.size() || size > bytes_.size() - offset) return false;
  std::memcpy(buffer, bytes_.data() + offset, size);
  return true;
}

sf_count_t MemorySndfile::get_filelen(void* self) noexcept {
  return static_cast<sf_count_t>(self_of(self).bytes_.size());
}

sf_count_t MemorySndfile::seek(sf_count_t offset, int whence, void* self) noexcept {
  MemorySndfile& m = self_of(self);
  sf_count_t base = 0;
  switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = m.position_; break;
    case SEEK_END: base = static_cast<sf_count_t>(m.bytes_.size()); break;
    default: return -1;
  }
  // A corrupt header can ask for any offset: refuse (as lseek does with EINVAL) what would be
  // negative or overflow, rather than computing it.
  sf_count_t target = 0;
  if (__builtin_add_overflow(base, offset, &target) || target < 0) return -1;
  m.position_ = target;
  return m.position_;
}

sf_count_t MemorySndfile::read(void* buffer, sf_count_t count, void* self) noexcept {
  MemorySndfile& m = self_of(self);
  const auto size = static_cast<sf_count_t>(m.bytes_.size());
  if (count <= 0 || m.position_ >= size) return 0;
  const sf_count_t n = std::min(count, size - m.position_);
  std::memcpy(buffer, m.bytes_.data() + m.position_, static_cast<std::size_t>(n));
  m.position_ += n;
  return n;
}

sf_count_t MemorySndfile::write(const void*, sf_count_t, void*) noexcept { return 0; }  // read-only

sf_count_t MemorySndfile::tell(void* self) noexcept { return self_of(self).position_; }

}  // namespace brisvox::audio
