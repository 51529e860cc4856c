// Invariant checks for the fuzz targets. A violated invariant is a finding like a crash: print
// what was expected and abort, so that libFuzzer saves the input as a crash artifact.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, ...)                                                    \
  do {                                                                                \
    if (!(condition)) {                                                               \
      std::fprintf(stderr, "%s:%d: invariant violated: %s\n  ", __FILE__, __LINE__,   \
                   #condition);                                                       \
      std::fprintf(stderr, __VA_ARGS__);                                              \
      std::fprintf(stderr, "\n");                                                     \
      std::abort();                                                                   \
    }                                                                                 \
  } while (false)
