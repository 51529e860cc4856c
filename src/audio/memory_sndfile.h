// A read-only libsndfile input over bytes in memory (SF_VIRTUAL_IO), so that a file received as
// an HTTP request body is decoded where it lies, without a round trip through a temporary file.
#pragma once

#include <sndfile.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace brisvox::audio {

class MemorySndfile {
 public:
  // The bytes are not copied: they must outlive this object and every SNDFILE it opened.
  explicit MemorySndfile(std::span<const std::byte> bytes) noexcept;
  // libsndfile keeps a pointer to this object: it must stay where it is.
  MemorySndfile(const MemorySndfile&) = delete;
  MemorySndfile& operator=(const MemorySndfile&) = delete;

  // sf_open_virtual in read mode. Null on failure; sf_error(nullptr) then says why.
  SNDFILE* open(SF_INFO* info) noexcept;

  // Copies exactly `size` bytes at `offset` into `buffer`, or returns false if they run past
  // the end. Independent of libsndfile's read position.
  bool read_at(std::uint64_t offset, void* buffer, std::size_t size) const noexcept;

  std::uint64_t size() const noexcept { return bytes_.size(); }

 private:
  static sf_count_t get_filelen(void* self) noexcept;
  static sf_count_t seek(sf_count_t offset, int whence, void* self) noexcept;
  static sf_count_t read(void* buffer, sf_count_t count, void* self) noexcept;
  static sf_count_t write(const void* buffer, sf_count_t count, void* self) noexcept;
  static sf_count_t tell(void* self) noexcept;

  std::span<const std::byte> bytes_;
  // May lie past the end, as a file offset may: reads there return nothing.
  sf_count_t position_ = 0;
  SF_VIRTUAL_IO io_;
};

}  // namespace brisvox::audio
