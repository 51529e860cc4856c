/* brisvox C API: voice activity and end-of-turn detection for many concurrent audio streams, on one
 * shared engine. Link libbrisvox_c (CMake target brisvox::c); C99 or later, or C++.
 *
 *   brisvox_engine_options eo;
 *   brisvox_engine_options_init(&eo);            // defaults, and eo.struct_size
 *   eo.turn_model = "v3.2";                      // optional: Smart Turn v3.2, bundled
 *   brisvox_engine* engine = NULL;
 *   if (brisvox_engine_create(&eo, &engine) != BRISVOX_OK) puts(brisvox_last_error_message());
 *
 *   brisvox_stream_options so;
 *   brisvox_stream_options_init(&so);
 *   so.sample_rate_hz = 8000;
 *   brisvox_stream* s = NULL;
 *   brisvox_stream_open(engine, &so, &s);
 *   brisvox_stream_push_i16(s, pcm, n, &accepted);   // producer thread; never waits for inference
 *   brisvox_event ev[16]; size_t got;
 *   brisvox_stream_poll(s, ev, 16, sizeof ev[0], &got);  // consumer thread; never blocks
 *   brisvox_stream_finish(s);                    // end of input: final events, then END_OF_STREAM
 *   brisvox_stream_close(s);
 *   brisvox_engine_destroy(engine);
 *
 * Errors. Every function returns a brisvox_status (BRISVOX_OK = 0). On failure the message (what was
 * wrong, and what to do about it) can be read two ways:
 *   - brisvox_last_error_message(): the calling thread's last failure, from any function; the only
 *     way for a failed brisvox_engine_create or brisvox_stream_open, which give no handle;
 *   - brisvox_engine_message(engine) / brisvox_stream_message(stream): the last failure of a call
 *     on that handle, from whichever thread made it.
 * Both return a pointer to a copy owned by the calling thread, valid until that thread's next
 * brisvox_*_message call. Messages are UTF-8. No C++ exception ever leaves a function of this API,
 * and the library never exits or aborts the process.
 *
 * Versioning. Option structs start with `size_t struct_size`, which the caller sets to
 * sizeof(the struct) as compiled (the *_init functions do): a smaller size than this version's is
 * refused with BRISVOX_ERR_INVALID_ARGUMENT (fields will only ever be added at the end, and an
 * older layout will then be accepted with the new fields at their defaults); a larger one, from a
 * newer header, is accepted when the bytes this library does not know are all zero. Event arrays
 * are versioned the same way by the `event_size` argument of brisvox_stream_poll.
 *
 * Threads. A handle is a pointer to an opaque object; the engine's own threads run inference, a
 * caller's thread never does. Each function states what may run concurrently with it.
 * Callbacks: one, optional: a stream's on_events (brisvox_stream_options, API version 2), which
 * tells an event loop that a stream has events to poll, so that one thread can serve many streams
 * without waiting on each (brisvox_stream_wait_events) or polling them all.
 */
#ifndef BRISVOX_BRISVOX_H_
#define BRISVOX_BRISVOX_H_

#include <stddef.h>
#include <stdint.h>

#if defined(BRISVOX_C_BUILDING)
#define BRISVOX_C_API __attribute__((visibility("default")))
#else
#define BRISVOX_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API: incremented when something is added. */
#define BRISVOX_C_API_VERSION 2

/* ---- status codes ------------------------------------------------------------------------------ */

/* Stable values. The names (brisvox_status_name) are the C++ ErrorCode names the server and the
 * CLI print. */
typedef enum brisvox_status {
  BRISVOX_OK = 0,
  BRISVOX_ERR_INVALID_ARGUMENT = 1,     /* a NULL handle or pointer, a bad struct_size, a value out of range */
  BRISVOX_ERR_IO = 2,                   /* a file could not be opened or read (a missing model, audio file) */
  BRISVOX_ERR_BAD_AUDIO = 3,            /* NaN/Inf samples; a corrupt or truncated audio file */
  BRISVOX_ERR_UNSUPPORTED_AUDIO = 4,    /* an audio format, encoding or rate brisvox does not handle */
  BRISVOX_ERR_BAD_MODEL = 5,            /* ONNX Runtime cannot load a model file */
  BRISVOX_ERR_MODEL_MISMATCH = 6,       /* a model loads, but its inputs/outputs are not the family's */
  BRISVOX_ERR_PROVIDER_UNAVAILABLE = 7, /* an execution provider is not in this ONNX Runtime build */
  BRISVOX_ERR_RUNTIME = 8,              /* ONNX Runtime failed while running a model */
  BRISVOX_ERR_INFERENCE_TIMEOUT = 9,    /* a model run passed its deadline and was cancelled */
  BRISVOX_ERR_OVERLOADED = 10,          /* the engine is at capacity or behind its latency budget */
  BRISVOX_ERR_CLOSED = 11,              /* the stream was finished or closed, or its engine destroyed */
  BRISVOX_ERR_INTERNAL = 12,            /* a bug in brisvox: please report it with the message */
  BRISVOX_ERR_OUT_OF_MEMORY = 13,
} brisvox_status;

/* "ok", "invalid_argument", "io", ...; "unknown" for a value not listed. Static storage. Any thread. */
BRISVOX_C_API const char* brisvox_status_name(brisvox_status status);

/* The calling thread's last failure message ("" if none). See "Errors" above. Any thread. */
BRISVOX_C_API const char* brisvox_last_error_message(void);

/* "0.1.0". Static storage. Any thread. */
BRISVOX_C_API const char* brisvox_version(void);

/* ---- engine ------------------------------------------------------------------------------------ */

typedef struct brisvox_engine brisvox_engine;

typedef struct brisvox_engine_options {
  size_t struct_size;        /* sizeof(brisvox_engine_options) */
  /* The voice activity model, named "vad": "v6" (default, NULL means it too), "v5", "v5-exported",
   * "v6-exported" (the bundled Silero VAD files) or the path of a Silero VAD v5/v6 .onnx file. */
  const char* vad_model;
  int32_t vad_workers;       /* inference threads of the VAD; 0 (default): one per core */
  int32_t vad_max_batch;     /* frames per VAD run, 1 to 512; 0 (default): 32 */
  /* The end-of-turn model, named "turn": NULL or "" (default) for none, "v3.2" (Smart Turn v3.2,
   * bundled) or the path of a Smart Turn v3.x .onnx file. Needed by streams with turn set. */
  const char* turn_model;
  int32_t turn_workers;      /* Smart Turn threads; 0 (default): 1 */
  int32_t max_streams;       /* open streams at once, 1 to 1000000; default 4096 */
  int32_t latency_budget_ms; /* queue delay of a frame that counts as overload; default 100 */
  int32_t admission_control; /* nonzero (default): refuse new streams while the VAD is over budget */
  int32_t run_timeout_ms;    /* a model run still going after this is cancelled; 0: never; default 2000 */
} brisvox_engine_options;

/* Fills in the defaults and struct_size. NULL: BRISVOX_ERR_INVALID_ARGUMENT. Any thread. */
BRISVOX_C_API brisvox_status brisvox_engine_options_init(brisvox_engine_options* options);

/* Loads the models (each once per worker) and starts the workers. `options` NULL: the defaults.
 * On success *engine is the new engine; on failure it is set to NULL and the message is the
 * thread's (brisvox_last_error_message). Typical failures: BRISVOX_ERR_IO (a model file missing:
 * the message names the path and how to get the bundled one), BRISVOX_ERR_MODEL_MISMATCH (the file
 * is another model: the message names the tensor), BRISVOX_ERR_INVALID_ARGUMENT (a field out of
 * range: the message names it). Any thread. */
BRISVOX_C_API brisvox_status brisvox_engine_create(const brisvox_engine_options* options, brisvox_engine** engine);

/* Stops the engine: every stream still open is closed (its pending audio and events discarded;
 * its handle must still be released with brisvox_stream_close, and every other call on it returns
 * BRISVOX_ERR_CLOSED), the workers stop, the models are freed. NULL: does nothing, BRISVOX_OK.
 * Must not run concurrently with any other call on this engine or its streams. */
BRISVOX_C_API brisvox_status brisvox_engine_destroy(brisvox_engine* engine);

/* The last failure of a call on this engine (brisvox_stream_open, brisvox_vad_file, ...) or ""; see
 * "Errors" above. NULL: "". Any thread. */
BRISVOX_C_API const char* brisvox_engine_message(const brisvox_engine* engine);

/* ---- streams ----------------------------------------------------------------------------------- */

typedef struct brisvox_stream brisvox_stream;

typedef struct brisvox_stream_options {
  size_t struct_size;         /* sizeof(brisvox_stream_options) */
  int32_t sample_rate_hz;     /* rate of the pushed samples, 1000 to 768000; 8000/16000 native, others
                               * resampled; default 16000 */
  int32_t buffer_ms;          /* audio the stream holds before push refuses samples; default 128 */
  /* Speech segments: silero-vad's get_speech_timestamps parameters and defaults. */
  double threshold;           /* 0.5 */
  double neg_threshold;       /* negative (default -1): max(threshold - 0.15, 0.01) */
  int32_t min_speech_ms;      /* 250 */
  int32_t min_silence_ms;     /* 100 */
  int32_t speech_pad_ms;      /* 30 */
  double max_speech_s;        /* speech longer than this is cut; default: infinity (never) */
  int32_t emit_probabilities; /* nonzero: a BRISVOX_EVENT_VAD_PROBABILITY per 32 ms frame; default 0 */
  /* End of turn (the engine needs a turn_model): TURN_END / TURN_INCOMPLETE events. */
  int32_t turn;               /* nonzero: analyse turns; default 0 */
  int32_t turn_stop_ms;       /* pause that triggers an analysis; default 200 */
  int32_t turn_pre_speech_ms; /* audio kept before the turn's first speech; default 500 */
  int32_t turn_max_silence_ms; /* silence that ends a turn without a verdict; default 3000 */
  double turn_threshold;      /* probability above which a turn is complete; default 0.5 */
  /* Nonzero: hold the stream's frames while an analysis runs, so that verdicts do not depend on
   * timing (files, tests); default 0 (live: speech that resumes cancels the analysis). */
  int32_t turn_wait_for_verdict;
  /* Added in API version 2 (a version-1 struct_size is accepted, with these NULL). Called on an
   * engine thread whenever the stream may have new events to poll: after each processed 32 ms frame
   * and when other events are written (a turn verdict, the end of the stream). It must return
   * quickly and must not call brisvox: wake your own loop (write an eventfd or a pipe, post to a
   * queue) and poll the stream from there. Calls for one stream never overlap; none starts once
   * brisvox_stream_close has returned (close waits for one in progress), so user_data may be freed
   * then. NULL: no callback. */
  void (*on_events)(void* user_data);
  void* on_events_user_data;
} brisvox_stream_options;

/* Fills in the defaults and struct_size. NULL: BRISVOX_ERR_INVALID_ARGUMENT. Any thread. */
BRISVOX_C_API brisvox_status brisvox_stream_options_init(brisvox_stream_options* options);

/* Opens a stream. `options` NULL: the defaults. On failure *stream is NULL and the message is the
 * thread's and the engine's: BRISVOX_ERR_INVALID_ARGUMENT (a field out of range, named; turn set
 * on an engine without a turn model), BRISVOX_ERR_OVERLOADED (max_streams open, or the engine
 * behind its budget: try later). Any thread, concurrently with other opens and with calls on other
 * streams. */
BRISVOX_C_API brisvox_status brisvox_stream_open(brisvox_engine* engine, const brisvox_stream_options* options,
                                                 brisvox_stream** stream);

/* Copies samples ([-1, 1] float32 / int16 PCM, mono, at the stream's rate) into the stream; never
 * waits for inference. *num_accepted (may be NULL) receives how many were taken: all, unless the
 * stream's buffer is full; the rest is refused, counted, and reported by an OVERLOAD event (push
 * it again later, or push at most brisvox_stream_writable). num_samples 0 is fine (samples may
 * then be NULL). NaN/Inf: BRISVOX_ERR_BAD_AUDIO and nothing is taken. After finish or close:
 * BRISVOX_ERR_CLOSED. The stream's producer: one thread at a time per stream, concurrently with its
 * consumer (poll) and with other streams. */
BRISVOX_C_API brisvox_status brisvox_stream_push_f32(brisvox_stream* stream, const float* samples, size_t num_samples,
                                                     size_t* num_accepted);
BRISVOX_C_API brisvox_status brisvox_stream_push_i16(brisvox_stream* stream, const int16_t* samples,
                                                     size_t num_samples, size_t* num_accepted);

/* How many samples a push would take now. Producer thread. */
BRISVOX_C_API brisvox_status brisvox_stream_writable(brisvox_stream* stream, size_t* num_samples);

/* End of input: what is buffered is processed, the last speech segment closed, then an
 * END_OF_STREAM event comes. Idempotent. Pushing afterwards is BRISVOX_ERR_CLOSED. May wait up to
 * 1 s for a resampled stream's tail. Producer thread. */
BRISVOX_C_API brisvox_status brisvox_stream_finish(brisvox_stream* stream);

typedef enum brisvox_event_type {
  BRISVOX_EVENT_SPEECH_START = 0,    /* start_s: where speech starts (padded) */
  BRISVOX_EVENT_SPEECH_END = 1,      /* start_s, end_s: the finished segment */
  BRISVOX_EVENT_VAD_PROBABILITY = 2, /* frame_index, start_s/end_s of the frame, probability */
  BRISVOX_EVENT_OVERLOAD = 3,        /* backlog_ms (queue delay), rejected_samples (running total) */
  BRISVOX_EVENT_ERROR = 4,           /* error_code; brisvox_stream_event_error has the message */
  BRISVOX_EVENT_END_OF_STREAM = 5,   /* end_s: stream length; the last event of a finished stream */
  BRISVOX_EVENT_TURN_END = 6,        /* start_s, end_s (end of speech), probability (-1: none), turn_reason */
  BRISVOX_EVENT_TURN_INCOMPLETE = 7, /* start_s, end_s, probability: a pause, but not the end of the turn */
  BRISVOX_EVENT_TRANSCRIPT = 8,      /* (speech-to-text; not produced through this API yet) */
} brisvox_event_type;

typedef enum brisvox_turn_reason {
  BRISVOX_TURN_REASON_MODEL = 0,         /* Smart Turn said the speaker finished */
  BRISVOX_TURN_REASON_TIMEOUT = 1,       /* max silence passed without a complete verdict */
  BRISVOX_TURN_REASON_END_OF_STREAM = 2, /* the stream ended during the turn */
} brisvox_turn_reason;

/* Times are seconds of stream audio. */
typedef struct brisvox_event {
  int32_t type;        /* brisvox_event_type */
  int32_t error_code;  /* BRISVOX_EVENT_ERROR: a brisvox_status */
  int32_t turn_reason; /* BRISVOX_EVENT_TURN_END: a brisvox_turn_reason */
  float probability;
  double start_s;
  double end_s;
  int64_t frame_index;
  uint32_t backlog_ms;
  uint32_t rejected_samples;
} brisvox_event;

/* Moves up to max_events pending events into `events` (an array whose elements are event_size
 * bytes: pass sizeof(brisvox_event)); *num_events receives how many. Never blocks. Works after
 * finish (until END_OF_STREAM and beyond: then 0 events); after close: BRISVOX_ERR_CLOSED. The
 * stream's consumer: one thread at a time per stream, concurrently with its producer. */
BRISVOX_C_API brisvox_status brisvox_stream_poll(brisvox_stream* stream, brisvox_event* events, size_t max_events,
                                                 size_t event_size, size_t* num_events);

/* Waits up to timeout_ms (0: just looks) until an event is pending; *ready (may be NULL) is 1 if
 * one is, else 0. Consumer thread. */
BRISVOX_C_API brisvox_status brisvox_stream_wait_events(brisvox_stream* stream, int32_t timeout_ms, int32_t* ready);

/* The message of the stream's last ERROR event ("" if none). Same lifetime as the other messages.
 * NULL: "". Consumer thread. */
BRISVOX_C_API const char* brisvox_stream_event_error(brisvox_stream* stream);

/* The last failure of a call on this stream, or "". NULL: "". Any thread. */
BRISVOX_C_API const char* brisvox_stream_message(const brisvox_stream* stream);

/* Closes the stream now (audio not finished and events not polled are discarded: finish and poll
 * until END_OF_STREAM first to keep them) and frees the handle, which must not be used again. NULL:
 * does nothing, BRISVOX_OK. Must not run concurrently with any other call on this stream; any
 * thread, concurrently with calls on other streams and brisvox_stream_open. */
BRISVOX_C_API brisvox_status brisvox_stream_close(brisvox_stream* stream);

/* ---- whole files ------------------------------------------------------------------------------- */

/* Runs a whole audio file (WAV, FLAC, Ogg, ... at any rate) through the engine as one stream with
 * `options` (NULL: the defaults; sample_rate_hz is the file's) and writes to *json the document
 * `brisvox vad --format json` prints: {"file":..., "sample_rate":..., "duration":s,
 * "segments":[{"start":s,"end":s},...]} plus "frame_probs" with emit_probabilities and "turns"
 * with turn (verdicts are waited for: turn_wait_for_verdict is implied). Free *json with
 * brisvox_string_free. On failure *json is NULL: BRISVOX_ERR_IO (missing file), BRISVOX_ERR_BAD_AUDIO
 * / UNSUPPORTED_AUDIO (unreadable file), ... Any thread, concurrently with everything but
 * brisvox_engine_destroy. */
BRISVOX_C_API brisvox_status brisvox_vad_file(brisvox_engine* engine, const char* path,
                                              const brisvox_stream_options* options, char** json);

/* Frees a string this API returned. NULL: nothing. Any thread. */
BRISVOX_C_API void brisvox_string_free(char* string);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* BRISVOX_BRISVOX_H_ */
