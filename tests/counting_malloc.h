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
// Bytes of the blocks allocated and freed while counting (malloc_usable_size: what the program
// may use of each block, without the allocator's 8-byte header).
inline std::atomic<std::uint64_t> g_bytes_allocated{0};
inline std::atomic<std::uint64_t> g_bytes_freed{0};

inline void count_allocation() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
inline void* count_block(void* p) {
  if (p != nullptr && g_counting.load(std::memory_order_relaxed)) {
    g_bytes_allocated.fetch_add(malloc_usable_size(p), std::memory_order_relaxed);
  }
  return p;
}
inline void count_free(void* p) {
  if (p != nullptr && g_counting.load(std::memory_order_relaxed)) {
    g_bytes_freed.fetch_add(malloc_usable_size(p), std::memory_order_relaxed);
  }
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

struct HeapGrowth {
  std::uint64_t allocations = 0;  // blocks allocated
  std::int64_t net_bytes = 0;     // bytes allocated minus bytes freed
};

// What f() leaves allocated: blocks and net bytes (any thread) while it runs.
template <typename F>
HeapGrowth heap_growth_in(F&& f) {
  g_bytes_allocated.store(0);
  g_bytes_freed.store(0);
  HeapGrowth g;
  g.allocations = allocations_in(std::forward<F>(f));
  g.net_bytes = static_cast<std::int64_t>(g_bytes_allocated.load()) - static_cast<std::int64_t>(g_bytes_freed.load());
  return g;
}

}  // namespace brisvox::test

extern "C" {
void* malloc(size_t n) {
  brisvox::test::count_allocation();
  return brisvox::test::count_block(__libc_malloc(n));
}
void* calloc(size_t n, size_t size) {
  brisvox::test::count_allocation();
  return brisvox::test::count_block(__libc_calloc(n, size));
}
void* realloc(void* p, size_t n) {
  brisvox::test::count_allocation();
  brisvox::test::count_free(p);
  return brisvox::test::count_block(__libc_realloc(p, n));
}
void* memalign(size_t alignment, size_t n) {
  brisvox::test::count_allocation();
  return brisvox::test::count_block(__libc_memalign(alignment, n));
}
void* aligned_alloc(size_t alignment, size_t n) {
  brisvox::test::count_allocation();
  return brisvox::test::count_block(__libc_memalign(alignment, n));
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  brisvox::test::count_allocation();
  *out = brisvox::test::count_block(__libc_memalign(alignment, n));
  return *out ? 0 : ENOMEM;
}
void free(void* p) {
  brisvox::test::count_free(p);
  __libc_free(p);
}
}
