/* What the C API's tests that compare with the brisvox tool share: a monotonic clock, sleeping
 * until a time on it, and a command's output. Included after capi_check.h. */
#ifndef BRISVOX_TESTS_CAPI_CAPI_CLI_H_
#define BRISVOX_TESTS_CAPI_CAPI_CLI_H_

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void sleep_until(double t) {
  const double d = t - now_s();
  if (d <= 0) return;
  struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
  nanosleep(&ts, NULL);
}

/* What a command printed on its stdout (NULL on failure); free it. */
static inline char* run_command(const char* command) {
  FILE* p = popen(command, "r");
  if (!p) return NULL;
  size_t size = 0, cap = 4096;
  char* out = malloc(cap);
  size_t n;
  while (out && (n = fread(out + size, 1, cap - size - 1, p)) > 0) {
    size += n;
    if (cap - size < 2) {
      char* bigger = realloc(out, cap * 2);
      if (!bigger) {
        free(out);
        out = NULL;
        break;
      }
      out = bigger;
      cap *= 2;
    }
  }
  const int rc = pclose(p);
  if (!out) return NULL;
  out[size] = '\0';
  if (rc != 0) {
    free(out);
    return NULL;
  }
  while (size > 0 && (out[size - 1] == '\n' || out[size - 1] == '\r')) out[--size] = '\0';
  return out;
}

#endif /* BRISVOX_TESTS_CAPI_CAPI_CLI_H_ */
