// A read-only libsndfile input (SF_VIRTUAL_IO) that is a header held in memory followed by a
// body read on demand from a file or a buffer.
//
// Both audio readers decode through it: a file received as an HTTP request body is decoded where
// it lies, without a round trip through a temporary file, and a WAV reaches libsndfile as a
// canonical header plus its sample bytes, never with its original metadata chunks (riff_wave.h
// says why).
#pragma once

#include <sndfile.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace brisvox::audio {

class VirtualSndfile {
 public:
  // Copies up to `size` bytes at `offset` of the body into `buffer`; returns how many (fewer only
  // at the end of the input or on a read error).
  using ReadSome = std::function<std::size_t(std::uint64_t offset, void* buffer, std::size_t size)>;

  // The input is `head` followed by `body_size` bytes of `body` (offsets 0..body_size-1).
  VirtualSndfile(std::vector<std::byte> head, ReadSome body, std::uint64_t body_size);
  // libsndfile keeps a pointer to this object: it must stay where it is.
  VirtualSndfile(const VirtualSndfile&) = delete;
  VirtualSndfile& operator=(const VirtualSndfile&) = delete;

  // sf_open_virtual in read mode. Null on failure; sf_error(nullptr) then says why.
  SNDFILE* open(SF_INFO* info) noexcept;

  std::uint64_t size() const noexcept { return head_.size() + body_size_; }

 private:
  static sf_count_t get_filelen(void* self) noexcept;
  static sf_count_t seek(sf_count_t offset, int whence, void* self) noexcept;
  static sf_count_t read(void* buffer, sf_count_t count, void* self) noexcept;
  static sf_count_t write(const void* buffer, sf_count_t count, void* self) noexcept;
  static sf_count_t tell(void* self) noexcept;

  std::vector<std::byte> head_;
  ReadSome body_;
  std::uint64_t body_size_;
  // May lie past the end, as a file offset may: reads there return nothing.
  sf_count_t position_ = 0;
  SF_VIRTUAL_IO io_;
};

}  // namespace brisvox::audio
