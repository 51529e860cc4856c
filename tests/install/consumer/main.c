/* A program an installed brisvox's user writes: the C API from the installed header and library,
 * built by scripts/install_test.sh through find_package(brisvox) and through pkg-config. It loads
 * the bundled VAD model (found by the installed library in its share/brisvox/models) and prints
 * the segments of a file.
 *
 *   brisvox_consumer SAMPLE.wav     -> {"file":..., "segments":[...]} on stdout, exit 0
 */
#include <stdio.h>
#include <string.h>

#include <brisvox/brisvox.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE.wav\n", argv[0]);
    return 2;
  }
  brisvox_engine* engine = NULL;
  if (brisvox_engine_create(NULL, &engine) != BRISVOX_OK) {  /* the defaults: bundled "v6" */
    fprintf(stderr, "brisvox_engine_create: %s\n", brisvox_last_error_message());
    return 1;
  }
  char* json = NULL;
  const brisvox_status status = brisvox_vad_file(engine, argv[1], NULL, &json);
  if (status != BRISVOX_OK) {
    fprintf(stderr, "brisvox_vad_file: %s: %s\n", brisvox_status_name(status), brisvox_last_error_message());
    brisvox_engine_destroy(engine);
    return 1;
  }
  printf("brisvox %s\n%s\n", brisvox_version(), json);
  const int has_speech = strstr(json, "\"start\"") != NULL;
  brisvox_string_free(json);
  brisvox_engine_destroy(engine);
  return has_speech ? 0 : 1;
}
