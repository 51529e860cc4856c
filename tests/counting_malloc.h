// Replaces malloc and friends (and so every operator new, and what C libraries allocate) with
// versions that count while counting is on. Include it in exactly ONE source file of a test
// binary that is about allocations: it defines the process's malloc.
#pragma once

#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace brisvox::test {

inline std::atomic<bool> g_counting{false};
inline std::atomic<std::uint64_t> g_allocations{0};

inline void count_allocation() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}

// Heap allocations made (by any thread) while f() runs.
template <typename F>
std::uint64_t allocations_in(F&& f) {
  g_allocations.store(0);
  g_counting.store(true);
  f();
  g_counting.store(false);
  return g_allocations.load();
}

}  // namespace brisvox::test

extern "C" {
void* malloc(size_t n) {
  brisvox::test::count_allocation();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) {
  brisvox::test::count_allocation();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) {
  brisvox::test::count_allocation();
  return __libc_realloc(p, n);
}
void* memalign(size_t alignment, size_t n) {
  brisvox::test::count_allocation();
  return __libc_memalign(alignment, n);
}
void* aligned_alloc(size_t alignment, size_t n) {
  brisvox::test::count_allocation();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  brisvox::test::count_allocation();
  *out = __libc_memalign(alignment, n);
  return *out ? 0 : ENOMEM;
}
void free(void* p) { __libc_free(p); }
}
