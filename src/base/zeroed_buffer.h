// A zero-filled array in an anonymous mapping of its own. Its pages become resident only when
// written (reading an untouched page maps the kernel's one shared zero page), so a buffer sized for
// the worst case costs memory only for the part that is used: a Whisper decoder's caches are sized
// for every lane at a full window, and a worker whose runs fill two lanes with 10 s of audio holds
// those pages alone.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace brisvox {

template <typename T>
class ZeroedBuffer {
  static_assert(std::is_trivial_v<T>, "a mapping's zero bytes must be a valid T");

 public:
  ZeroedBuffer() = default;
  // Throws std::bad_alloc when the mapping fails (as a std::vector of that size would).
  explicit ZeroedBuffer(std::size_t n) : size_(n) {
    if (n == 0) return;
    void* p = mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
  }
  ZeroedBuffer(ZeroedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  ZeroedBuffer& operator=(ZeroedBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ZeroedBuffer(const ZeroedBuffer&) = delete;
  ZeroedBuffer& operator=(const ZeroedBuffer&) = delete;
  ~ZeroedBuffer() { release(); }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  void release() noexcept {
    if (data_ != nullptr) munmap(data_, size_ * sizeof(T));
    data_ = nullptr;
    size_ = 0;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace brisvox
