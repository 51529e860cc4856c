/* The C API (include/brisvox/brisvox.h) from C11: every function's bad arguments, struct_size
 * versioning, messages per handle and per thread, closed streams and a destroyed engine, and real
 * audio through streams (float32 and int16, with and without end-of-turn) against the engine's
 * own offline run of the same file.
 *
 *   brisvox_capi_test SAMPLE.wav     (16-bit PCM mono 16 kHz; CTest passes third_party/audio/sample.wav)
 */
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "brisvox/brisvox.h"
#include "capi_check.h"

static void sleep_ms(int ms) {
  struct timespec ts = {0, (long)ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- what a stream reported ---- */
#define MAX_SEGMENTS 256
typedef struct {
  double start[MAX_SEGMENTS];
  double end[MAX_SEGMENTS];
  int segments;
  int speech_starts;
  int turn_ends;
  int turn_incompletes;
  int probabilities;
  int errors;
  int end_of_stream;
} Report;

static void take_events(brisvox_stream* s, Report* r) {
  brisvox_event ev[16];
  size_t n = 0;
  do {
    CHECK_STATUS(brisvox_stream_poll(s, ev, 16, sizeof ev[0], &n), BRISVOX_OK);
    for (size_t i = 0; i < n; ++i) {
      switch (ev[i].type) {
        case BRISVOX_EVENT_SPEECH_START: ++r->speech_starts; break;
        case BRISVOX_EVENT_SPEECH_END:
          if (r->segments < MAX_SEGMENTS) {
            r->start[r->segments] = ev[i].start_s;
            r->end[r->segments] = ev[i].end_s;
          }
          ++r->segments;
          break;
        case BRISVOX_EVENT_TURN_END:
          ++r->turn_ends;
          CHECK(ev[i].turn_reason >= BRISVOX_TURN_REASON_MODEL && ev[i].turn_reason <= BRISVOX_TURN_REASON_END_OF_STREAM);
          CHECK(ev[i].probability == -1.0f || (ev[i].probability >= 0.0f && ev[i].probability <= 1.0f));
          break;
        case BRISVOX_EVENT_TURN_INCOMPLETE: ++r->turn_incompletes; break;
        case BRISVOX_EVENT_VAD_PROBABILITY: ++r->probabilities; break;
        case BRISVOX_EVENT_ERROR:
          ++r->errors;
          fprintf(stderr, "error event %s: %s\n", brisvox_status_name((brisvox_status)ev[i].error_code),
                  brisvox_stream_event_error(s));
          break;
        case BRISVOX_EVENT_END_OF_STREAM: ++r->end_of_stream; break;
        default: break;
      }
    }
  } while (n == 16);
}

/* Feeds the whole recording faster than real time (never more than the stream takes), finishes,
 * and polls until END_OF_STREAM. as_float: push float32 converted here, else int16. */
static void run_stream(brisvox_engine* engine, const brisvox_stream_options* o, const Pcm* pcm, int as_float, Report* r) {
  memset(r, 0, sizeof *r);
  brisvox_stream* s = NULL;
  CHECK_STATUS(brisvox_stream_open(engine, o, &s), BRISVOX_OK);
  if (!s) return;
  float chunk_f[320];
  size_t pos = 0;
  while (pos < pcm->count) {
    size_t room = 0;
    CHECK_STATUS(brisvox_stream_writable(s, &room), BRISVOX_OK);
    size_t n = pcm->count - pos;
    if (n > 320) n = 320;
    if (room < n) {
      take_events(s, r);
      sleep_ms(1);
      continue;
    }
    size_t accepted = 0;
    if (as_float) {
      for (size_t i = 0; i < n; ++i) chunk_f[i] = (float)pcm->samples[pos + i] / 32768.0f;
      CHECK_STATUS(brisvox_stream_push_f32(s, chunk_f, n, &accepted), BRISVOX_OK);
    } else {
      CHECK_STATUS(brisvox_stream_push_i16(s, pcm->samples + pos, n, &accepted), BRISVOX_OK);
    }
    CHECK(accepted == n);
    pos += accepted;
    take_events(s, r);
  }
  CHECK_STATUS(brisvox_stream_finish(s), BRISVOX_OK);
  CHECK_STATUS(brisvox_stream_finish(s), BRISVOX_OK); /* idempotent */
  for (int waited = 0; r->end_of_stream == 0 && waited < 20000; ++waited) {
    int32_t ready = 0;
    CHECK_STATUS(brisvox_stream_wait_events(s, 5, &ready), BRISVOX_OK);
    take_events(s, r);
  }
  CHECK(r->end_of_stream == 1);
  /* Pushing after finish: closed, with a message on the stream's handle. */
  size_t accepted = 99;
  CHECK_STATUS(brisvox_stream_push_i16(s, pcm->samples, 10, &accepted), BRISVOX_ERR_CLOSED);
  CHECK(accepted == 0);
  CHECK(contains(brisvox_stream_message(s), "flush"));
  CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);
}

/* The documented threading: one producer thread pushes while another (this one) polls. */
typedef struct {
  brisvox_stream* stream;
  const Pcm* pcm;
  int failures;
} Producer;

static void* produce(void* arg) {
  Producer* p = arg;
  size_t pos = 0;
  while (pos < p->pcm->count) {
    size_t n = p->pcm->count - pos;
    if (n > 480) n = 480;
    size_t accepted = 0;
    if (brisvox_stream_push_i16(p->stream, p->pcm->samples + pos, n, &accepted) != BRISVOX_OK) ++p->failures;
    pos += accepted;
    if (accepted < n) sleep_ms(1); /* full: the consumer's worker catches up */
  }
  if (brisvox_stream_finish(p->stream) != BRISVOX_OK) ++p->failures;
  return NULL;
}

static void run_two_threads(brisvox_engine* engine, const Pcm* pcm, Report* r) {
  memset(r, 0, sizeof *r);
  brisvox_stream* s = NULL;
  CHECK_STATUS(brisvox_stream_open(engine, NULL, &s), BRISVOX_OK);
  if (!s) return;
  Producer p = {s, pcm, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, produce, &p) == 0);
  for (int waited = 0; r->end_of_stream == 0 && waited < 20000; ++waited) {
    int32_t ready = 0;
    CHECK_STATUS(brisvox_stream_wait_events(s, 5, &ready), BRISVOX_OK);
    take_events(s, r);
  }
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(p.failures == 0 && r->end_of_stream == 1);
  CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);
}

/* on_events: an event loop's wake-up. The callback writes a byte to a pipe; the consumer sleeps in
 * poll(2) on the pipe and reads the stream only when woken, as a loop serving many streams does.
 * A call after brisvox_stream_close returned is counted as a violation. */
typedef struct {
  int pipe_write;
  atomic_int calls;
  atomic_int closed;
  atomic_int after_close;
} Notified;

static void on_events(void* user_data) {
  Notified* n = user_data;
  atomic_fetch_add(&n->calls, 1);
  if (atomic_load(&n->closed)) atomic_fetch_add(&n->after_close, 1);
  const char byte = 1;
  if (write(n->pipe_write, &byte, 1) < 0) { /* full: the loop is awake anyway */ }
}

static void run_notified(brisvox_engine* engine, const Pcm* pcm, Report* r) {
  memset(r, 0, sizeof *r);
  int fds[2];
  CHECK(pipe(fds) == 0);
  CHECK(fcntl(fds[1], F_SETFL, O_NONBLOCK) == 0); /* the worker never blocks on it */
  Notified note;
  note.pipe_write = fds[1];
  atomic_init(&note.calls, 0);
  atomic_init(&note.closed, 0);
  atomic_init(&note.after_close, 0);
  brisvox_stream_options o;
  brisvox_stream_options_init(&o);
  o.on_events = on_events;
  o.on_events_user_data = &note;
  brisvox_stream* s = NULL;
  CHECK_STATUS(brisvox_stream_open(engine, &o, &s), BRISVOX_OK);
  if (!s) return;
  Producer p = {s, pcm, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, produce, &p) == 0);
  while (r->end_of_stream == 0) {
    struct pollfd pfd = {fds[0], POLLIN, 0};
    if (poll(&pfd, 1, 10000) != 1) break; /* 10 s without a wake-up: the END_OF_STREAM was never announced */
    char drain[256];
    if (read(fds[0], drain, sizeof drain) <= 0) break;
    take_events(s, r);
  }
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(p.failures == 0 && r->end_of_stream == 1);
  CHECK(atomic_load(&note.calls) >= (int)(pcm->count / 512));  /* once per frame at least */
  /* Another stream, closed while its frames are still running: no call after close returns. */
  brisvox_stream* busy = NULL;
  CHECK_STATUS(brisvox_stream_open(engine, &o, &busy), BRISVOX_OK);
  CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);
  if (busy) {
    CHECK_STATUS(brisvox_stream_push_i16(busy, pcm->samples, 2048, NULL), BRISVOX_OK);
    CHECK_STATUS(brisvox_stream_close(busy), BRISVOX_OK);
  }
  atomic_store(&note.closed, 1);
  sleep_ms(50);
  CHECK(atomic_load(&note.after_close) == 0);
  close(fds[0]);
  close(fds[1]);
}

/* The "segments" of a brisvox_vad_file document, in order. */
static int parse_segments(const char* json, double* start, double* end, int most) {
  const char* p = strstr(json, "\"segments\":[");
  int n = 0;
  if (!p) return -1;
  while ((p = strstr(p, "{\"start\":")) != NULL && n < most) {
    if (sscanf(p, "{\"start\":%lf,\"end\":%lf}", &start[n], &end[n]) != 2) return -1;
    ++n;
    ++p;
  }
  return n;
}

/* ---- a failed create on another thread leaves this thread's message alone ---- */
static void* fail_on_other_thread(void* arg) {
  brisvox_engine_options o;
  brisvox_engine_options_init(&o);
  o.vad_model = "/nonexistent/other-thread.onnx";
  brisvox_engine* e = NULL;
  *(brisvox_status*)arg = brisvox_engine_create(&o, &e);
  return contains(brisvox_last_error_message(), "other-thread.onnx") ? arg : NULL;
}

static void test_names_and_messages(void) {
  CHECK(strcmp(brisvox_status_name(BRISVOX_OK), "ok") == 0);
  CHECK(strcmp(brisvox_status_name(BRISVOX_ERR_INVALID_ARGUMENT), "invalid_argument") == 0);
  CHECK(strcmp(brisvox_status_name(BRISVOX_ERR_CLOSED), "closed") == 0);
  CHECK(strcmp(brisvox_status_name(BRISVOX_ERR_OUT_OF_MEMORY), "out_of_memory") == 0);
  CHECK(strcmp(brisvox_status_name((brisvox_status)999), "unknown") == 0);
  CHECK(strlen(brisvox_version()) > 0);
  CHECK(strcmp(brisvox_engine_message(NULL), "") == 0);
  CHECK(strcmp(brisvox_stream_message(NULL), "") == 0);
  CHECK(strcmp(brisvox_stream_event_error(NULL), "") == 0);
  CHECK_STATUS(brisvox_engine_options_init(NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_last_error_message(), "options is NULL"));
  CHECK_STATUS(brisvox_stream_options_init(NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  brisvox_stream_options so;
  CHECK_STATUS(brisvox_stream_options_init(&so), BRISVOX_OK);
  CHECK(so.struct_size == sizeof so && so.sample_rate_hz == 16000 && so.threshold == 0.5 && so.min_silence_ms == 100);
  CHECK(isinf(so.max_speech_s) && so.turn == 0 && so.turn_stop_ms == 200);
  brisvox_engine_options eo;
  CHECK_STATUS(brisvox_engine_options_init(&eo), BRISVOX_OK);
  CHECK(eo.struct_size == sizeof eo && eo.vad_model == NULL && eo.turn_model == NULL && eo.max_streams == 4096);
  CHECK(eo.run_timeout_ms == 2000 && eo.admission_control == 1);
}

static void test_engine_create_failures(const char* silero_path) {
  brisvox_engine* e = (brisvox_engine*)&e; /* a non-NULL value that must be reset */
  brisvox_engine_options o;
  brisvox_engine_options_init(&o);
  CHECK_STATUS(brisvox_engine_create(&o, NULL), BRISVOX_ERR_INVALID_ARGUMENT);

  o.struct_size = 0;
  CHECK_STATUS(brisvox_engine_create(&o, &e), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(e == NULL);
  CHECK(contains(brisvox_last_error_message(), "struct_size is 0"));
  o.struct_size = sizeof o - 4;
  CHECK_STATUS(brisvox_engine_create(&o, &e), BRISVOX_ERR_INVALID_ARGUMENT);
  o.struct_size = (size_t)1 << 40; /* garbage */
  CHECK_STATUS(brisvox_engine_create(&o, &e), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_last_error_message(), "not initialised"));

  /* A newer header's larger struct: accepted when the unknown tail is zero, refused otherwise. */
  struct {
    brisvox_engine_options o;
    int64_t newer_fields[4];
  } bigger;
  memset(&bigger, 0, sizeof bigger);
  brisvox_engine_options_init(&bigger.o);
  bigger.o.struct_size = sizeof bigger;
  bigger.o.vad_workers = 1;
  bigger.newer_fields[2] = 7;
  CHECK_STATUS(brisvox_engine_create(&bigger.o, &e), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_last_error_message(), "newer than the library"));
  bigger.newer_fields[2] = 0;
  CHECK_STATUS(brisvox_engine_create(&bigger.o, &e), BRISVOX_OK);
  CHECK(e != NULL);
  CHECK_STATUS(brisvox_engine_destroy(e), BRISVOX_OK);

  /* Typed failures with actionable messages. */
  brisvox_engine_options_init(&o);
  o.vad_model = "/nonexistent/vad.onnx";
  CHECK_STATUS(brisvox_engine_create(&o, &e), BRISVOX_ERR_IO);
  CHECK(e == NULL && contains(brisvox_last_error_message(), "/nonexistent/vad.onnx"));
  brisvox_engine_options_init(&o);
  o.turn_model = "/nonexistent/turn.onnx";
  CHECK_STATUS(brisvox_engine_create(&o, &e), BRISVOX_ERR_IO);
  CHECK(contains(brisvox_last_error_message(), "v3.2"));
  brisvox_engine_options_init(&o);
  o.vad_workers = -3;
  CHECK_STATUS(brisvox_engine_create(&o, &e), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_last_error_message(), "num_workers"));
  brisvox_engine_options_init(&o);
  o.turn_model = silero_path; /* a Silero file is no Smart Turn model: the tensor is named */
  CHECK_STATUS(brisvox_engine_create(&o, &e), BRISVOX_ERR_MODEL_MISMATCH);
  CHECK(contains(brisvox_last_error_message(), "input_features"));

  /* The thread-local message: another thread's failure does not replace this thread's. */
  brisvox_engine_options_init(&o);
  o.vad_model = "/nonexistent/this-thread.onnx";
  CHECK_STATUS(brisvox_engine_create(&o, &e), BRISVOX_ERR_IO);
  pthread_t t;
  brisvox_status other = BRISVOX_OK;
  void* result = NULL;
  CHECK(pthread_create(&t, NULL, fail_on_other_thread, &other) == 0);
  CHECK(pthread_join(t, &result) == 0);
  CHECK(other == BRISVOX_ERR_IO && result != NULL);
  CHECK(contains(brisvox_last_error_message(), "this-thread.onnx"));
  CHECK_STATUS(brisvox_engine_destroy(NULL), BRISVOX_OK);
}

static void test_null_stream_handles(void) {
  size_t n = 5;
  int32_t ready = 5;
  brisvox_event ev[2];
  float f[4] = {0};
  int16_t i16[4] = {0};
  CHECK_STATUS(brisvox_stream_push_f32(NULL, f, 4, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(n == 0);
  CHECK(contains(brisvox_last_error_message(), "stream is NULL"));
  CHECK_STATUS(brisvox_stream_push_i16(NULL, i16, 4, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_stream_writable(NULL, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_stream_finish(NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_stream_poll(NULL, ev, 2, sizeof ev[0], &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_stream_wait_events(NULL, 0, &ready), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(ready == 0);
  CHECK_STATUS(brisvox_stream_close(NULL), BRISVOX_OK);
  brisvox_stream* s = NULL;
  CHECK_STATUS(brisvox_stream_open(NULL, NULL, &s), BRISVOX_ERR_INVALID_ARGUMENT);
  char* json = (char*)f;
  CHECK_STATUS(brisvox_vad_file(NULL, "x.wav", NULL, &json), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(json == NULL);
  brisvox_string_free(NULL);
}

static void test_stream_arguments(brisvox_engine* engine) {
  brisvox_stream* s = NULL;
  brisvox_stream_options o;
  brisvox_stream_options_init(&o);
  CHECK_STATUS(brisvox_stream_open(engine, &o, NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  o.sample_rate_hz = 500;
  CHECK_STATUS(brisvox_stream_open(engine, &o, &s), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(s == NULL);
  CHECK(contains(brisvox_engine_message(engine), "sample_rate_hz"));
  CHECK(contains(brisvox_last_error_message(), "sample_rate_hz"));
  o.sample_rate_hz = 16000;
  o.threshold = 1.5;
  CHECK_STATUS(brisvox_stream_open(engine, &o, &s), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_engine_message(engine), "threshold"));
  brisvox_stream_options_init(&o);
  o.struct_size = 8;
  CHECK_STATUS(brisvox_stream_open(engine, &o, &s), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_engine_message(engine), "brisvox_stream_options.struct_size is 8"));
  /* API version 1's layout (before on_events) is accepted; a size between the versions is not. */
  brisvox_stream_options_init(&o);
  o.struct_size = offsetof(brisvox_stream_options, on_events);
  CHECK_STATUS(brisvox_stream_open(engine, &o, &s), BRISVOX_OK);
  CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);
  o.struct_size = offsetof(brisvox_stream_options, on_events) + 4;
  CHECK_STATUS(brisvox_stream_open(engine, &o, &s), BRISVOX_ERR_INVALID_ARGUMENT);

  /* A good stream: bad calls on it fail with a message on its handle and leave it usable. */
  CHECK_STATUS(brisvox_stream_open(engine, NULL, &s), BRISVOX_OK);
  CHECK(s != NULL);
  size_t n = 9;
  float samples[640];
  for (int i = 0; i < 640; ++i) samples[i] = 0.01f * (float)((i % 7) - 3);
  samples[100] = NAN;
  CHECK_STATUS(brisvox_stream_push_f32(s, samples, 640, &n), BRISVOX_ERR_BAD_AUDIO);
  CHECK(n == 0 && contains(brisvox_stream_message(s), "sample 100"));
  CHECK_STATUS(brisvox_stream_push_f32(s, NULL, 10, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_stream_push_f32(s, NULL, 0, &n), BRISVOX_OK);
  CHECK_STATUS(brisvox_stream_push_i16(s, NULL, 0, NULL), BRISVOX_OK);
  samples[100] = 0.0f;
  CHECK_STATUS(brisvox_stream_push_f32(s, samples, 640, NULL), BRISVOX_OK);
  brisvox_event ev[4];
  CHECK_STATUS(brisvox_stream_poll(s, ev, 4, sizeof ev[0] - 8, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_stream_message(s), "event_size"));
  CHECK_STATUS(brisvox_stream_poll(s, ev, 4, sizeof ev[0], NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_stream_poll(s, NULL, 4, sizeof ev[0], &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_stream_poll(s, NULL, 0, sizeof ev[0], &n), BRISVOX_OK);
  CHECK(n == 0);
  CHECK_STATUS(brisvox_stream_wait_events(s, -1, NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_stream_writable(s, NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  /* A larger event stride (a newer header's events): the known fields written, the rest zeroed. */
  CHECK_STATUS(brisvox_stream_finish(s), BRISVOX_OK);
  unsigned char wide[8][sizeof(brisvox_event) + 16];
  memset(wide, 0xab, sizeof wide);
  int end_seen = 0;
  for (int tries = 0; tries < 2000 && !end_seen; ++tries) {
    CHECK_STATUS(brisvox_stream_poll(s, (brisvox_event*)(void*)wide, 8, sizeof wide[0], &n), BRISVOX_OK);
    for (size_t i = 0; i < n; ++i) {
      brisvox_event e;
      memcpy(&e, wide[i], sizeof e);
      if (e.type == BRISVOX_EVENT_END_OF_STREAM) end_seen = 1;
      for (size_t b = sizeof(brisvox_event); b < sizeof wide[0]; ++b) CHECK(wide[i][b] == 0);
    }
    if (!end_seen) sleep_ms(1);
  }
  CHECK(end_seen);
  CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);

  /* The end-of-turn stage needs a turn model (this engine has none). */
  brisvox_stream_options_init(&o);
  o.turn = 1;
  CHECK_STATUS(brisvox_stream_open(engine, &o, &s), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(s == NULL && contains(brisvox_engine_message(engine), "no turn model"));

  /* Whole files: a missing one is an I/O error on the engine's handle. */
  char* json = NULL;
  CHECK_STATUS(brisvox_vad_file(engine, "/nonexistent/audio.wav", NULL, &json), BRISVOX_ERR_IO);
  CHECK(json == NULL && contains(brisvox_engine_message(engine), "/nonexistent/audio.wav"));
  CHECK_STATUS(brisvox_vad_file(engine, NULL, NULL, &json), BRISVOX_ERR_INVALID_ARGUMENT);
}

static void test_real_audio(const char* wav, const Pcm* pcm) {
  brisvox_engine_options eo;
  brisvox_engine_options_init(&eo);
  /* CI machines are shared: a busy one must not make the engine refuse the test's streams. */
  eo.admission_control = 0;
  eo.vad_workers = 1;
  brisvox_engine* engine = NULL;
  CHECK_STATUS(brisvox_engine_create(&eo, &engine), BRISVOX_OK);
  if (!engine) return;
  test_stream_arguments(engine);
  CHECK_STATUS(brisvox_engine_destroy(engine), BRISVOX_OK);

  eo.vad_workers = 0;
  eo.turn_model = "v3.2";
  engine = NULL;
  CHECK_STATUS(brisvox_engine_create(&eo, &engine), BRISVOX_OK);
  if (!engine) return;

  /* The engine's offline run of the file: the document `brisvox vad --format json` prints. */
  char* json = NULL;
  CHECK_STATUS(brisvox_vad_file(engine, wav, NULL, &json), BRISVOX_OK);
  double start[MAX_SEGMENTS], end[MAX_SEGMENTS];
  const int expected = json ? parse_segments(json, start, end, MAX_SEGMENTS) : -1;
  CHECK(json && contains(json, "\"sample_rate\":16000"));
  CHECK(expected >= 5); /* five readings, joined with pauses */
  brisvox_string_free(json);

  /* The same recording pushed through streams, as int16 and as float32: the same segments. */
  brisvox_stream_options so;
  brisvox_stream_options_init(&so);
  for (int as_float = 0; as_float <= 1; ++as_float) {
    Report r;
    run_stream(engine, &so, pcm, as_float, &r);
    CHECK(r.segments == expected && r.speech_starts == expected && r.errors == 0);
    for (int i = 0; i < r.segments && i < expected; ++i) {
      CHECK(fabs(r.start[i] - start[i]) < 1e-6 && fabs(r.end[i] - end[i]) < 1e-6);
    }
  }

  {
    Report r;
    run_two_threads(engine, pcm, &r);
    CHECK(r.segments == expected && r.errors == 0);
    for (int i = 0; i < r.segments && i < expected; ++i) {
      CHECK(fabs(r.start[i] - start[i]) < 1e-6 && fabs(r.end[i] - end[i]) < 1e-6);
    }
  }

  {
    Report r;
    run_notified(engine, pcm, &r);
    CHECK(r.segments == expected && r.errors == 0);
    for (int i = 0; i < r.segments && i < expected; ++i) {
      CHECK(fabs(r.start[i] - start[i]) < 1e-6 && fabs(r.end[i] - end[i]) < 1e-6);
    }
  }

  /* With end-of-turn detection (Smart Turn v3.2): at least one verdict, and the file document's
   * turns. */
  so.turn = 1;
  so.turn_wait_for_verdict = 1;
  so.emit_probabilities = 1;
  Report r;
  run_stream(engine, &so, pcm, 0, &r);
  CHECK(r.turn_ends >= 1 && r.errors == 0);
  CHECK(r.probabilities == (int)(pcm->count / 512) || r.probabilities == (int)(pcm->count / 512) + 1);
  CHECK_STATUS(brisvox_vad_file(engine, wav, &so, &json), BRISVOX_OK);
  CHECK(json && contains(json, "\"turns\":[") && contains(json, "\"frame_probs\":["));
  brisvox_string_free(json);

  /* The engine destroyed under an open stream: the stream's calls say closed; close frees it. */
  brisvox_stream* s = NULL;
  CHECK_STATUS(brisvox_stream_open(engine, NULL, &s), BRISVOX_OK);
  CHECK_STATUS(brisvox_stream_push_i16(s, pcm->samples, 1600, NULL), BRISVOX_OK);
  CHECK_STATUS(brisvox_engine_destroy(engine), BRISVOX_OK);
  size_t n = 7;
  brisvox_event ev[2];
  CHECK_STATUS(brisvox_stream_push_i16(s, pcm->samples, 1600, &n), BRISVOX_ERR_CLOSED);
  CHECK(n == 0 && contains(brisvox_stream_message(s), "engine was destroyed"));
  CHECK_STATUS(brisvox_stream_poll(s, ev, 2, sizeof ev[0], &n), BRISVOX_ERR_CLOSED);
  CHECK_STATUS(brisvox_stream_finish(s), BRISVOX_ERR_CLOSED);
  CHECK(strcmp(brisvox_stream_event_error(s), "") == 0);
  CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SAMPLE.wav\n", argv[0]);
    return 2;
  }
  Pcm pcm = {NULL, 0, 0};
  if (!read_wav(argv[1], &pcm) || pcm.rate != 16000) {
    fprintf(stderr, "%s: not a 16 kHz 16-bit mono WAV (run scripts/setup.sh)\n", argv[1]);
    return 1;
  }
  test_names_and_messages();
  /* SAMPLE.wav is third_party/audio/sample.wav: the models are in third_party/models. */
  char silero[4096];
  const char* slash = strrchr(argv[1], '/');
  snprintf(silero, sizeof silero, "%.*s/../models/silero_vad_v5.onnx", slash ? (int)(slash - argv[1]) : 1,
           slash ? argv[1] : ".");
  test_engine_create_failures(silero);
  test_null_stream_handles();
  test_real_audio(argv[1], &pcm);
  free(pcm.samples);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
