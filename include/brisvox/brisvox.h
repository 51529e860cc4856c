/* brisvox C API: voice activity, end-of-turn detection and transcripts for many concurrent audio
 * streams, speech (text-to-speech) sessions, and calls that listen and speak at once, on one shared
 * engine. Link libbrisvox_c (CMake target brisvox::c); C99 or later, or C++.
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
 *     way for a failed brisvox_engine_create, which gives no handle (a failed *_open's message is
 *     also its engine's);
 *   - brisvox_engine_message(engine), brisvox_stream_message(stream), brisvox_call_message(call),
 *     brisvox_speech_message(speech): the last failure of a call on that handle, from whichever
 *     thread made it.
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
 * Callbacks: one per handle, optional: on_events (brisvox_stream_options, API version 2; the call's
 * and the speech session's options, version 3), which tells an event loop that a handle has events
 * to poll, so that one thread can serve many without waiting on each (*_wait_events) or polling
 * them all.
 *
 * Payloads. Transcripts and speech audio travel beside their events: an event that has one says
 * so (payload, payload_bytes, payload_id) and is passed back to a *_read_* function by the
 * consumer. Payloads are read in the order of their events; reading a later one discards those
 * before it.
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

/* The version of this API the header describes: incremented when something is added. Version 5
 * adds Whisper's decoding options (beam search, the temperature fallback, prompts, translation,
 * language detection per segment), word timestamps and partial transcripts; version 4, the
 * stream's model_rate_hz; version 3, transcripts, calls, speech sessions and file transcription;
 * version 2, on_events. */
#define BRISVOX_C_API_VERSION 5

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

/* The version of the C API the loaded library implements (API version 3 and later; a library
 * without this function is version 1 or 2). A program built against a newer header than the
 * library it loads compares it with BRISVOX_C_API_VERSION before using what was added since: a
 * function the library lacks is missing at load time, a struct field it lacks is refused unless
 * zero (see "Versioning"). Any thread. */
BRISVOX_C_API int32_t brisvox_api_version(void);

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
  /* Added in API version 3 (a version-1/2 struct_size is accepted, with these NULL and 0). */
  /* The speech-to-text model, named "stt": NULL or "" (default) for none, "tiny.en" or
   * "tiny.en-int8" (bundled Whisper) or a Whisper model folder. Needed by streams and calls with
   * transcripts set. */
  const char* stt_model;
  int32_t stt_workers;       /* Whisper threads; 0 (default): 1 */
  /* The voice, named "tts": NULL or "" (default) for none, or a Piper voice (VOICE.onnx with
   * VOICE.onnx.json beside it, or an installed voice's name). Needed by calls and speech sessions. */
  const char* voice;
  int32_t tts_workers;       /* Piper threads; 0 (default): one per core */
  /* Added in API version 5 (an earlier struct_size is accepted, with these 0). Room in the Whisper
   * decoder's lanes, which every stream's decoding options must fit: */
  int32_t stt_max_width;     /* the most sequences a segment is decoded as (a stream's beam_size or
                              * best_of, 1 to 16); 0 (default): 1, greedy decoding only. Each
                              * segment in the decoder holds that many lanes. */
  int32_t stt_prompt_tokens; /* the longest prompt + hotwords a stream may give, in tokens (up to
                              * 446); 0 (default): none. Longer lanes: more memory per segment. */
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
  int32_t sample_rate_hz;     /* rate of the pushed samples, 1000 to 768000; all reach the 16 kHz model
                               * (8000 upsampled 2x) unless model_rate_hz is 8000; default 16000 */
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
  /* Added in API version 3 (a version-1/2 struct_size is accepted, with these at their defaults).
   * Speech-to-text (the engine needs an stt_model): each speech segment is transcribed when it
   * ends, and a BRISVOX_EVENT_TRANSCRIPT follows its SPEECH_END (read it with
   * brisvox_stream_read_transcript). Segments are then at most 30 s (max_speech_s is capped). */
  int32_t transcripts;        /* nonzero: TRANSCRIPT events; default 0 */
  const char* language;       /* Whisper's language code ("en", "de", ...); NULL or "" (default):
                               * detected from the speech by a multilingual model (on the stream's
                               * first segment, then kept); English-only models take "en" or "". */
  int32_t stt_window;         /* a brisvox_stt_window; default BRISVOX_STT_WINDOW_FULL */
  /* Added in API version 4 (an earlier struct_size is accepted, with this at its default). The rate
   * Silero VAD runs at: 0 (default) the 16 kHz model for every input rate, 8 kHz upsampled (the
   * more accurate on phone audio, docs/TELEPHONY.md); 8000 the 8 kHz model (8 kHz input natively,
   * ~1.7x the callers per core); 16000 the same as 0. */
  int32_t model_rate_hz;
  /* Added in API version 5 (an earlier struct_size is accepted, with these at their defaults).
   * Whisper's decoding, as `brisvox transcribe`'s options (docs/MODELS.md); the transcripts'
   * settings: they need transcripts set. */
  int32_t decoding;           /* a brisvox_decoding; default BRISVOX_DECODING_GREEDY */
  int32_t beam_size;          /* beams at temperature 0, 1 to 16 (at most the engine's
                               * stt_max_width); 0 (default): the decoding's */
  int32_t best_of;            /* samples per fallback temperature, 1 to 16; 0 (default): the decoding's */
  const char* temperatures;   /* temperatures tried in turn, comma-separated ("0,0.2,0.4"; "0" alone:
                               * no fallback); NULL or "" (default): the decoding's */
  int32_t task;               /* a brisvox_task; default BRISVOX_TASK_TRANSCRIBE */
  const char* prompt;         /* text the speech is taken to follow: names, spellings, a style
                               * (faster-whisper's initial_prompt; every segment gets it); needs the
                               * engine's stt_prompt_tokens; NULL or "" (default): none */
  const char* hotwords;       /* words likely to be said (faster-whisper's hotwords); as prompt */
  int32_t language_detection; /* a brisvox_language_detection; default BRISVOX_LANGUAGE_DETECTION_FIRST */
  int32_t word_timestamps;    /* nonzero: each transcript's words with their times (an alignment
                               * pass after the text, ~1.15x the speech-to-text CPU); default 0 */
  int32_t partial_interval_ms; /* 200 to 10000: while speech goes on, its audio so far is decoded
                                * again every this many ms of audio, each a TRANSCRIPT_PARTIAL event
                                * (docs/MODELS.md, "Partial transcripts"); 0 (default): none */
} brisvox_stream_options;

typedef enum brisvox_decoding {
  BRISVOX_DECODING_GREEDY = 0,         /* the most probable token at each step; no fallback (live streams' default) */
  BRISVOX_DECODING_FASTER_WHISPER = 1, /* faster-whisper's transcribe defaults: beam 5, best_of 5, temperatures
                                        * 0, 0.2, ..., 1.0 with its thresholds (the engine's stt_max_width >= 5) */
} brisvox_decoding;

typedef enum brisvox_task {
  BRISVOX_TASK_TRANSCRIBE = 0,
  BRISVOX_TASK_TRANSLATE = 1, /* into English (multilingual models) */
} brisvox_task;

typedef enum brisvox_language_detection {
  BRISVOX_LANGUAGE_DETECTION_FIRST = 0, /* without a language: detected on the stream's first segment, then kept */
  BRISVOX_LANGUAGE_DETECTION_EACH = 1,  /* each segment detects its own (callers who switch languages) */
} brisvox_language_detection;

typedef enum brisvox_stt_window {
  BRISVOX_STT_WINDOW_FULL = 0, /* the 30 s window Whisper was trained on (faster-whisper's results) */
  BRISVOX_STT_WINDOW_FIT = 1,  /* the window cut to the segment (at least 10 s): cheaper, slightly worse */
} brisvox_stt_window;

/* Fills in the defaults and struct_size. NULL: BRISVOX_ERR_INVALID_ARGUMENT. Any thread. */
BRISVOX_C_API brisvox_status brisvox_stream_options_init(brisvox_stream_options* options);

/* Opens a stream. `options` NULL: the defaults. On failure *stream is NULL and the message is the
 * thread's and the engine's: BRISVOX_ERR_INVALID_ARGUMENT (a field out of range, named; turn set
 * on an engine without a turn model, transcripts without an stt_model), BRISVOX_ERR_OVERLOADED (max_streams open, or the engine
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
  /* Added in API version 3. */
  BRISVOX_EVENT_TRANSCRIPT = 8,      /* start_s, end_s of the segment, probability (its no-speech
                                      * probability); the transcript as payload (*_read_transcript) */
  /* A speech session's or a call's speech; utterance_id says which utterance (speak's id). */
  BRISVOX_EVENT_TTS_AUDIO = 9,       /* a piece of audio as payload (*_read_audio); start_s/end_s:
                                      * where it lies in the utterance's audio */
  BRISVOX_EVENT_TTS_END = 10,        /* the utterance is done: all its audio was handed out (end_s: its length) */
  BRISVOX_EVENT_TTS_CANCELLED = 11,  /* the utterance was stopped by *_cancel (end_s: the audio handed out) */
  /* A call's caller talked over its speech (confirmed speech): every utterance spoken so far stops.
   * start_s: where that speech started, end_s: where it was confirmed (seconds of the caller's
   * audio); utterance_id: the utterance being heard then (0: none yet). */
  BRISVOX_EVENT_BARGE_IN = 12,
  BRISVOX_EVENT_TTS_INTERRUPTED = 13, /* the utterance was stopped by a barge-in (end_s: the audio handed out) */
  /* A mark (*_mark) was reached: utterance_id is its id; end_s: when playback reaches it, in
   * seconds of CLOCK_MONOTONIC (a call holds the event until then). */
  BRISVOX_EVENT_TTS_MARK = 14,
  /* Added in API version 5: with partial_interval_ms, a decode of the speech segment still open
   * (start_s, end_s: its audio so far); its text is what the latest decodes agree on, its unstable
   * the rest (*_read_transcript). */
  BRISVOX_EVENT_TRANSCRIPT_PARTIAL = 15,
} brisvox_event_type;

/* Whether an event comes with a payload (a transcript, a piece of speech). */
typedef enum brisvox_payload {
  BRISVOX_PAYLOAD_NONE = 0,
  BRISVOX_PAYLOAD_ATTACHED = 1,  /* payload_bytes bytes wait to be read */
  BRISVOX_PAYLOAD_TRUNCATED = 2, /* attached, but holds only the end of what it describes */
  BRISVOX_PAYLOAD_DROPPED = 3,   /* there was one, but the reader fell behind and it was dropped */
} brisvox_payload;

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
  /* Added in API version 3: an event_size of version 2's layout (48 bytes) gets none of these. */
  uint32_t utterance_id;   /* TTS_*, BARGE_IN, and a speech ERROR: the utterance (or mark) */
  uint16_t sentence_index; /* TTS_AUDIO: the piece's sentence (0-based); TTS_END etc.: sentences handed out */
  uint16_t sentence_count; /* of the utterance (0 when it ended before its text was split) */
  int32_t payload;         /* a brisvox_payload */
  uint32_t payload_bytes;  /* with a payload: its size (TTS_AUDIO: 4 x its float samples) */
  uint32_t payload_id;     /* with a payload: its number, which the *_read_* functions look for */
  int32_t speech_error;    /* ERROR: nonzero when the speech side failed (utterance_id: which one);
                            * the session or call goes on with the next utterance */
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

/* A word of a transcript (API version 5, word_timestamps), as faster-whisper's Word. */
typedef struct brisvox_word {
  const char* word;     /* UTF-8, NUL-terminated, with its leading space; owned by the transcript's words */
  double start_s;       /* seconds of stream audio */
  double end_s;
  float probability;
} brisvox_word;

/* A transcript (API version 3), read for a BRISVOX_EVENT_TRANSCRIPT (or, version 5, a
 * BRISVOX_EVENT_TRANSCRIPT_PARTIAL). Free what it owns with brisvox_transcript_free. */
typedef struct brisvox_transcript {
  size_t struct_size;  /* set by the caller: sizeof(brisvox_transcript); version 3/4's layout (ending
                        * at language) is read without the fields added since */
  /* UTF-8, NUL-terminated, as faster-whisper's segment text (a leading space); "" when no_speech.
   * Owned by the caller: free it with brisvox_transcript_free. NULL: the payload is gone (the event
   * says BRISVOX_PAYLOAD_DROPPED, or it was read already, or a later payload was read first). */
  char* text;
  double start_s;       /* the segment, in seconds of stream audio */
  double end_s;
  float avg_logprob;    /* of the decoded tokens */
  float no_speech_prob;
  int32_t no_speech;    /* nonzero: Whisper's no-speech rule fired: the segment holds no speech */
  int32_t hit_token_limit; /* nonzero: decoding stopped at the token limit (the text may be cut) */
  char language[16];    /* the language it was decoded in (the stream's `language`, or the detected
                         * one), NUL-terminated */
  /* Added in API version 5. */
  char* unstable;       /* TRANSCRIPT_PARTIAL: the latest decode's words past the agreed text (may
                         * change); NULL otherwise */
  brisvox_word* words;  /* with word_timestamps: num_words words (NULL when none) */
  size_t num_words;
} brisvox_transcript;

/* Frees what a transcript owns (text, unstable, words) and sets those fields to NULL (num_words 0).
 * NULL: does nothing. Any thread. (Version 3's brisvox_string_free(text) still frees the text.) */
BRISVOX_C_API void brisvox_transcript_free(brisvox_transcript* transcript);

/* Reads the transcript of a TRANSCRIPT (or TRANSCRIPT_PARTIAL) event that brisvox_stream_poll
 * returned into *transcript (whose struct_size the caller sets). Payloads are read in the order of
 * their events: reading a later one first discards the earlier ones. BRISVOX_ERR_INVALID_ARGUMENT:
 * NULL, a bad struct_size, an event that is neither. The stream's consumer thread, like poll;
 * allocates the text (and unstable, words): brisvox_transcript_free. */
BRISVOX_C_API brisvox_status brisvox_stream_read_transcript(brisvox_stream* stream, const brisvox_event* event,
                                                            brisvox_transcript* transcript);

/* Closes the stream now (audio not finished and events not polled are discarded: finish and poll
 * until END_OF_STREAM first to keep them) and frees the handle, which must not be used again. NULL:
 * does nothing, BRISVOX_OK. Must not run concurrently with any other call on this stream; any
 * thread, concurrently with calls on other streams and brisvox_stream_open. */
BRISVOX_C_API brisvox_status brisvox_stream_close(brisvox_stream* stream);

/* ---- speech sessions (API version 3) ----------------------------------------------------------- */

/* Text-to-speech on the engine's voice: text in (speak), audio out, sentence by sentence, as
 * TTS_AUDIO events whose payload is read with brisvox_speech_read_audio. Utterances are spoken
 * in the order of speak; each ends with exactly one of TTS_END, TTS_CANCELLED or an ERROR with
 * speech_error set. Synthesis waits while the session's audio is not read (nothing is dropped), so
 * read each TTS_AUDIO (or skip it: reading a later one discards it). The engine needs a voice.
 *
 *   brisvox_speech* sp; brisvox_speech_open(engine, NULL, &sp);
 *   uint32_t id; brisvox_speech_speak(sp, "Hello. How can I help?", &id);
 *   ... brisvox_speech_wait_events / brisvox_speech_poll; for each TTS_AUDIO:
 *       brisvox_speech_read_audio(sp, &ev, buf, ev.payload_bytes / sizeof(float), &n);
 *
 * Threads: speak, mark and cancel on controlling threads (they lock: several may call them);
 * poll, wait_events, read_audio and event_error on one consumer thread; close alone. */
typedef struct brisvox_speech brisvox_speech;

typedef struct brisvox_speech_options {
  size_t struct_size;           /* sizeof(brisvox_speech_options) */
  int32_t sample_rate_hz;       /* of the audio: 0 (default: the voice's own), 8000, 16000, 24000, 48000 */
  double volume;                /* after the voice's peak normalisation, 0 to 10; default 1 */
  /* Nonzero (default): the first sentence of each utterance comes as two pieces (its first clause,
   * then the rest), so the first audio costs one clause's synthesis. 0: whole sentences. */
  int32_t fast_start;
  int32_t max_queued;           /* utterances waiting behind the current one, 1 to 4096; default 16 */
  int32_t payload_buffer_bytes; /* audio held for the reader; 0 (default): 512 KiB; else 16384 to 268435456 */
  /* The voice's settings for this session by name (Piper: "noise_scale", "length_scale" (> 1
   * slower), "noise_w_scale", "speaker_id"): voice_option_values[i] for voice_option_names[i], i <
   * num_voice_options. Each left out is the voice's own. An unknown name or a value out of range
   * is refused at open (BRISVOX_ERR_INVALID_ARGUMENT naming it). The arrays are read at open only. */
  const char* const* voice_option_names;
  const double* voice_option_values;
  size_t num_voice_options;
  /* Called on an engine thread when the session may have new events (as a stream's on_events:
   * quick, no brisvox calls; none starts once brisvox_speech_close has returned). NULL: none. */
  void (*on_events)(void* user_data);
  void* on_events_user_data;
} brisvox_speech_options;

/* Fills in the defaults and struct_size. NULL: BRISVOX_ERR_INVALID_ARGUMENT. Any thread. */
BRISVOX_C_API brisvox_status brisvox_speech_options_init(brisvox_speech_options* options);

/* Opens a speech session on the engine's voice. `options` NULL: the defaults. On failure *speech
 * is NULL: BRISVOX_ERR_INVALID_ARGUMENT (the engine has no voice; a field out of range, named),
 * BRISVOX_ERR_OVERLOADED (too many sessions open). Any thread. */
BRISVOX_C_API brisvox_status brisvox_speech_open(brisvox_engine* engine, const brisvox_speech_options* options,
                                                 brisvox_speech** speech);

/* Queues `text` (UTF-8, NUL-terminated) after the utterances before it; *utterance_id (may be
 * NULL) receives its id (1, 2, ... per session; marks share the sequence). Never waits for
 * synthesis. BRISVOX_ERR_INVALID_ARGUMENT: NULL, empty or blank text, invalid UTF-8, control
 * characters other than tab/CR/LF, text over the voice's limit (the message says which and
 * where); BRISVOX_ERR_OVERLOADED: max_queued utterances wait already; BRISVOX_ERR_CLOSED: the
 * engine was destroyed. */
BRISVOX_C_API brisvox_status brisvox_speech_speak(brisvox_speech* speech, const char* text, uint32_t* utterance_id);
/* A mark after what was spoken so far: a TTS_MARK with its id once all of it was handed out. */
BRISVOX_C_API brisvox_status brisvox_speech_mark(brisvox_speech* speech, uint32_t* mark_id);
/* Stops every utterance spoken so far (each ends with TTS_CANCELLED, within one sentence); audio
 * already handed out stays readable. *last_id (may be NULL): the last utterance stopped (0: none). */
BRISVOX_C_API brisvox_status brisvox_speech_cancel(brisvox_speech* speech, uint32_t* last_id);

/* As brisvox_stream_poll / brisvox_stream_wait_events. Consumer thread. */
BRISVOX_C_API brisvox_status brisvox_speech_poll(brisvox_speech* speech, brisvox_event* events, size_t max_events,
                                                 size_t event_size, size_t* num_events);
BRISVOX_C_API brisvox_status brisvox_speech_wait_events(brisvox_speech* speech, int32_t timeout_ms, int32_t* ready);

/* Copies the audio of a TTS_AUDIO event (float32 mono in [-1, 1] at the session's rate) into
 * `samples`, which holds max_samples; *num_samples receives the samples copied (0: the audio is
 * gone: read already, or a later piece was read first). samples NULL and max_samples 0: a size
 * query (*num_samples = what the piece needs, event.payload_bytes / sizeof(float)). A buffer too
 * small: BRISVOX_ERR_INVALID_ARGUMENT with *num_samples = what it needs, and the audio stays.
 * Reading frees room: a synthesis waiting for it goes on. Consumer thread; never allocates. */
BRISVOX_C_API brisvox_status brisvox_speech_read_audio(brisvox_speech* speech, const brisvox_event* event,
                                                       float* samples, size_t max_samples, size_t* num_samples);

/* The rate of the session's audio. */
BRISVOX_C_API brisvox_status brisvox_speech_sample_rate(const brisvox_speech* speech, int32_t* sample_rate_hz);

/* The message of the session's last ERROR event ("" if none); lifetime as the other messages.
 * NULL: "". Consumer thread. */
BRISVOX_C_API const char* brisvox_speech_event_error(brisvox_speech* speech);
/* The last failure of a call on this session, or "". NULL: "". Any thread. */
BRISVOX_C_API const char* brisvox_speech_message(const brisvox_speech* speech);

/* Ends the session now (what is queued and unread is dropped, without events) and frees the
 * handle. NULL: nothing, BRISVOX_OK. Must not run concurrently with other calls on it. */
BRISVOX_C_API brisvox_status brisvox_speech_close(brisvox_speech* speech);

/* ---- calls (API version 3) --------------------------------------------------------------------- */

/* A call: one caller listened to (a stream: push audio in; speech, turn, transcript events out)
 * and spoken to (a speech session: speak text, TTS_AUDIO out) at once, with barge-in: when the
 * caller's speech is confirmed while the call is speaking, the speech stops within the VAD frame
 * that confirmed it (BARGE_IN, then TTS_INTERRUPTED for each utterance not finished), and no more
 * of its audio comes out of poll. The call hands its speech out at most playout_lead_ms ahead of
 * real-time playback from the first piece handed out (the owner is assumed to play it as it comes),
 * so that what was sent is close to what was heard; marks come out when playback reaches them.
 * Every utterance ends with exactly one of TTS_END, TTS_CANCELLED, TTS_INTERRUPTED, or an ERROR
 * with speech_error set. The engine needs a voice (and the models of the listening side's stages).
 *
 * Threads: push, writable and finish on one producer thread; speak, mark, cancel on controlling
 * threads (they lock); poll, wait_events, read_audio, read_transcript, event_error on one consumer
 * thread; close alone. Nothing waits for inference. */
typedef struct brisvox_call brisvox_call;

typedef struct brisvox_call_options {
  size_t struct_size; /* sizeof(brisvox_call_options) */
  /* The caller's side (read at open): its sample_rate_hz is the call's, and its stages (turn,
   * transcripts). Its on_events must be NULL: the call's own is below. NULL: the defaults. */
  const brisvox_stream_options* listen;
  /* The call's speech: as brisvox_speech_options, except sample_rate_hz (0, default: the call's
   * rate; the voice must be able to speak at it) and payload_buffer_bytes (0: two pieces of about
   * 100 ms, at least 16 KiB). */
  int32_t speech_sample_rate_hz;
  double volume;
  int32_t fast_start;
  int32_t max_queued;
  int32_t payload_buffer_bytes;
  const char* const* voice_option_names;
  const double* voice_option_values;
  size_t num_voice_options;
  /* Barge-in: nonzero (default) to stop the speech when the caller's speech is confirmed after
   * barge_in_min_speech_ms of voiced frames (32 to 10000; default 400: a backchannel shorter does
   * not interrupt); barge_in_on_turn_end nonzero: only when the caller's turn ends (needs turn). */
  int32_t barge_in;
  int32_t barge_in_min_speech_ms;
  int32_t barge_in_on_turn_end;
  int32_t playout_lead_ms; /* 0 to 60000; default 500; 0: speech is handed out as soon as it is made */
  /* Called on an engine thread when either side may have new events (see the stream's). */
  void (*on_events)(void* user_data);
  void* on_events_user_data;
} brisvox_call_options;

/* Fills in the defaults and struct_size. NULL: BRISVOX_ERR_INVALID_ARGUMENT. Any thread. */
BRISVOX_C_API brisvox_status brisvox_call_options_init(brisvox_call_options* options);

/* Opens a call. `options` NULL: the defaults. On failure *call is NULL: BRISVOX_ERR_INVALID_ARGUMENT
 * (the engine has no voice; transcripts without an stt_model; a field out of range, named),
 * BRISVOX_ERR_OVERLOADED (at capacity). It counts as one stream and one speech session. Any thread. */
BRISVOX_C_API brisvox_status brisvox_call_open(brisvox_engine* engine, const brisvox_call_options* options,
                                               brisvox_call** call);

/* The caller's audio, as brisvox_stream_push_f32 / _i16 / writable / finish (finish ends the
 * caller's side: END_OF_STREAM comes; the call's speech goes on until close). Producer thread. */
BRISVOX_C_API brisvox_status brisvox_call_push_f32(brisvox_call* call, const float* samples, size_t num_samples,
                                                   size_t* num_accepted);
BRISVOX_C_API brisvox_status brisvox_call_push_i16(brisvox_call* call, const int16_t* samples, size_t num_samples,
                                                   size_t* num_accepted);
BRISVOX_C_API brisvox_status brisvox_call_writable(brisvox_call* call, size_t* num_samples);
BRISVOX_C_API brisvox_status brisvox_call_finish(brisvox_call* call);

/* The call's speech, as brisvox_speech_speak / mark / cancel (cancel's utterances end with
 * TTS_CANCELLED). Controlling threads. */
BRISVOX_C_API brisvox_status brisvox_call_speak(brisvox_call* call, const char* text, uint32_t* utterance_id);
BRISVOX_C_API brisvox_status brisvox_call_mark(brisvox_call* call, uint32_t* mark_id);
BRISVOX_C_API brisvox_status brisvox_call_cancel(brisvox_call* call, uint32_t* last_id);

/* Both sides' events, as brisvox_stream_poll: the caller's first, then the speech's as the
 * playout lead allows, then marks whose time has come. wait_events also wakes when a held event
 * comes due. Consumer thread. */
BRISVOX_C_API brisvox_status brisvox_call_poll(brisvox_call* call, brisvox_event* events, size_t max_events,
                                               size_t event_size, size_t* num_events);
BRISVOX_C_API brisvox_status brisvox_call_wait_events(brisvox_call* call, int32_t timeout_ms, int32_t* ready);

/* A TTS_AUDIO's samples (at the call's speech rate), as brisvox_speech_read_audio; a TRANSCRIPT's
 * text, as brisvox_stream_read_transcript. Consumer thread. */
BRISVOX_C_API brisvox_status brisvox_call_read_audio(brisvox_call* call, const brisvox_event* event, float* samples,
                                                     size_t max_samples, size_t* num_samples);
BRISVOX_C_API brisvox_status brisvox_call_read_transcript(brisvox_call* call, const brisvox_event* event,
                                                          brisvox_transcript* transcript);

/* The rate of push (the listening side's) and of TTS_AUDIO (the speech's); either may be NULL. */
BRISVOX_C_API brisvox_status brisvox_call_sample_rates(const brisvox_call* call, int32_t* listen_hz,
                                                       int32_t* speech_hz);

/* The message of an ERROR event the call's poll returned (its side's last error: speech_error
 * says which); "" if none. NULL: "". Consumer thread. */
BRISVOX_C_API const char* brisvox_call_event_error(brisvox_call* call, const brisvox_event* event);
/* The last failure of a call on this call handle, or "". NULL: "". Any thread. */
BRISVOX_C_API const char* brisvox_call_message(const brisvox_call* call);

/* Ends the call now (the caller's pending audio and events and the unspoken speech are dropped)
 * and frees the handle. NULL: nothing, BRISVOX_OK. Must not run concurrently with other calls on it. */
BRISVOX_C_API brisvox_status brisvox_call_close(brisvox_call* call);

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

/* Transcribes a whole audio file (API version 3; the engine needs an stt_model) as one stream
 * with `options` (NULL: the defaults; transcripts is implied; sample_rate_hz is the file's) and
 * writes to *json the document `brisvox transcribe --format json` prints: {"file":...,
 * "duration":s, "text":"...", "segments":[{"start":s,"end":s,"text":"..."},...]} (segments
 * Whisper finds no speech in left out). Free *json with brisvox_string_free. Failures as
 * brisvox_vad_file's. Any thread, concurrently with everything but brisvox_engine_destroy. */
BRISVOX_C_API brisvox_status brisvox_transcribe_file(brisvox_engine* engine, const char* path,
                                                     const brisvox_stream_options* options, char** json);

/* Frees a string this API returned. NULL: nothing. Any thread. */
BRISVOX_C_API void brisvox_string_free(char* string);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* BRISVOX_BRISVOX_H_ */
