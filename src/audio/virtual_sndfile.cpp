#include "audio/virtual_sndfile.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

namespace brisvox::audio {
namespace {

VirtualSndfile& self_of(void* user_data) { return *static_cast<VirtualSndfile*>(user_data); }

}  // namespace

VirtualSndfile::VirtualSndfile(std::vector<std::byte> head, ReadSome body, std::uint64_t body_size)
    : head_(std::move(head)),
      body_(std::move(body)),
      body_size_(body_size),
      io_{&get_filelen, &seek, &read, &write, &tell} {}

SNDFILE* VirtualSndfile::open(SF_INFO* info) noexcept {
  position_ = 0;
  return sf_open_virtual(&io_, SFM_READ, info, this);
}

sf_count_t VirtualSndfile::get_filelen(void* self) noexcept {
  return static_cast<sf_count_t>(self_of(self).size());
}

sf_count_t VirtualSndfile::seek(sf_count_t offset, int whence, void* self) noexcept {
  VirtualSndfile& v = self_of(self);
  sf_count_t base = 0;
  switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = v.position_; break;
    case SEEK_END: base = static_cast<sf_count_t>(v.size()); break;
    default: return -1;
  }
  // A corrupt header can ask for any offset: refuse (as lseek does with EINVAL) what would be
  // negative or overflow, rather than computing it.
  sf_count_t target = 0;
  if (__builtin_add_overflow(base, offset, &target) || target < 0) return -1;
  v.position_ = target;
  return v.position_;
}

sf_count_t VirtualSndfile::read(void* buffer, sf_count_t count, void* self) noexcept {
  VirtualSndfile& v = self_of(self);
  const auto size = static_cast<sf_count_t>(v.size());
  if (count <= 0 || v.position_ >= size) return 0;
  auto* out = static_cast<std::byte*>(buffer);
  sf_count_t wanted = std::min(count, size - v.position_);
  sf_count_t done = 0;
  const auto head_size = static_cast<sf_count_t>(v.head_.size());
  if (v.position_ < head_size) {
    const sf_count_t n = std::min(wanted, head_size - v.position_);
    std::memcpy(out, v.head_.data() + v.position_, static_cast<std::size_t>(n));
    done = n;
  }
  if (done < wanted) {
    const auto body_offset = static_cast<std::uint64_t>(v.position_ + done - head_size);
    try {
      done += static_cast<sf_count_t>(
          v.body_(body_offset, out + done, static_cast<std::size_t>(wanted - done)));
    } catch (...) {
      // A short read: libsndfile reports the input as truncated.
    }
  }
  v.position_ += done;
  return done;
}

sf_count_t VirtualSndfile::write(const void*, sf_count_t, void*) noexcept { return 0; }  // read-only

sf_count_t VirtualSndfile::tell(void* self) noexcept { return self_of(self).position_; }

}  // namespace brisvox::audio
