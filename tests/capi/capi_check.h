/* What the C API's C11 tests share: CHECK / CHECK_STATUS counting into g_passed and g_failed, and
 * a minimal reader of 16-bit PCM mono WAV files. One test program per .c file includes it once. */
#ifndef BRISVOX_TESTS_CAPI_CAPI_CHECK_H_
#define BRISVOX_TESTS_CAPI_CAPI_CHECK_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brisvox/brisvox.h"

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (cond) {                                                               \
      ++g_passed;                                                             \
    } else {                                                                  \
      ++g_failed;                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                         \
  } while (0)

#define CHECK_STATUS(call, expected)                                                              \
  do {                                                                                            \
    brisvox_status got_ = (call);                                                                 \
    if (got_ == (expected)) {                                                                     \
      ++g_passed;                                                                                 \
    } else {                                                                                      \
      ++g_failed;                                                                                 \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, #call,     \
              brisvox_status_name(got_), brisvox_status_name(expected), brisvox_last_error_message()); \
    }                                                                                             \
  } while (0)

static int contains(const char* haystack, const char* needle) { return strstr(haystack, needle) != NULL; }

/* ---- a minimal WAV reader (16-bit PCM mono) ---- */
typedef struct {
  int16_t* samples;
  size_t count;
  int rate;
} Pcm;

static int read_wav(const char* path, Pcm* out) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  unsigned char header[12];
  if (fread(header, 1, 12, f) != 12 || memcmp(header, "RIFF", 4) != 0 || memcmp(header + 8, "WAVE", 4) != 0) {
    fclose(f);
    return 0;
  }
  int ok = 0;
  unsigned char chunk[8];
  while (fread(chunk, 1, 8, f) == 8) {
    const uint32_t size = (uint32_t)chunk[4] | (uint32_t)chunk[5] << 8 | (uint32_t)chunk[6] << 16 | (uint32_t)chunk[7] << 24;
    if (memcmp(chunk, "fmt ", 4) == 0) {
      unsigned char fmt[16];
      if (size < 16 || fread(fmt, 1, 16, f) != 16) break;
      const int channels = fmt[2] | fmt[3] << 8;
      const int bits = fmt[14] | fmt[15] << 8;
      out->rate = (int)((uint32_t)fmt[4] | (uint32_t)fmt[5] << 8 | (uint32_t)fmt[6] << 16 | (uint32_t)fmt[7] << 24);
      if (channels != 1 || bits != 16) break;
      fseek(f, (long)(size - 16 + (size & 1)), SEEK_CUR);
    } else if (memcmp(chunk, "data", 4) == 0) {
      out->count = size / 2;
      out->samples = malloc(out->count * sizeof(int16_t));
      ok = out->samples != NULL && fread(out->samples, 2, out->count, f) == out->count; /* little-endian host */
      break;
    } else {
      fseek(f, (long)(size + (size & 1)), SEEK_CUR);
    }
  }
  fclose(f);
  return ok;
}

#endif /* BRISVOX_TESTS_CAPI_CAPI_CHECK_H_ */
