/* The C API's version 5 (include/brisvox/brisvox.h) from C11, on the real models (Silero VAD v6,
 * Whisper tiny.en): brisvox_transcribe_file with faster-whisper's decoding, with a prompt and with
 * word timestamps, each against `brisvox transcribe` with the same options (the whole JSON
 * document, byte for byte); a stream's words read as brisvox_word records, equal to the document's;
 * partial transcripts (TRANSCRIPT_PARTIAL events whose agreed text only grows within a segment,
 * and the segment's transcript after them); a version-3 transcript struct read without the new
 * fields; and the statuses of bad decoding options. About 40 s of CPU (the CLI's runs included).
 *
 *   brisvox_capi_v5_test SAMPLE.wav BRISVOX   (16 kHz 16-bit mono WAV; the brisvox tool)
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "brisvox/brisvox.h"
#include "capi_check.h"
#include "capi_cli.h"

/* brisvox_transcribe_file with `so` against the CLI with `cli_options` on the same file. */
static void check_file_equals_cli(brisvox_engine* engine, const brisvox_stream_options* so, const char* cli,
                                  const char* cli_options, const char* wav, const char* must_contain) {
  char command[8192];
  snprintf(command, sizeof command, "'%s' transcribe --model tiny.en %s --format json '%s' 2>/dev/null", cli,
           cli_options, wav);
  char* expected = run_command(command);
  CHECK(expected != NULL);
  if (!expected) return;
  char* json = NULL;
  CHECK_STATUS(brisvox_transcribe_file(engine, wav, so, &json), BRISVOX_OK);
  CHECK(json != NULL && strcmp(json, expected) == 0);
  if (json && strcmp(json, expected) != 0) fprintf(stderr, "%s\nC API: %s\nCLI:   %s\n", cli_options, json, expected);
  if (must_contain) CHECK(contains(expected, must_contain));
  brisvox_string_free(json);
  free(expected);
}

/* `engine` sized for beams and prompts; `plain` as `brisvox transcribe` sizes its engine for greedy
 * decoding without a prompt (the batch shapes word probabilities are computed in). */
static void test_file_options(brisvox_engine* engine, brisvox_engine* plain, const char* wav, const char* cli) {
  brisvox_stream_options so;
  /* The beam searches are numerics, the bulk of this test's CPU: the release suite compares them;
   * under a sanitizer the options' path is crossed by the prompt's and the words' runs below. */
  const char* preset = getenv("BRISVOX_TEST_PRESET");
  if (!preset || (strcmp(preset, "asan") != 0 && strcmp(preset, "tsan") != 0)) {
    brisvox_stream_options_init(&so);
    so.decoding = BRISVOX_DECODING_FASTER_WHISPER;
    check_file_equals_cli(engine, &so, cli, "--decoding faster-whisper", wav, NULL);

    brisvox_stream_options_init(&so);
    so.beam_size = 3;
    so.temperatures = "0,0.5";
    check_file_equals_cli(engine, &so, cli, "--beam-size 3 --temperatures 0,0.5", wav, NULL);
  }

  /* A prompt that spells a name: every segment decodes after it (the CLI's --prompt). */
  brisvox_stream_options_init(&so);
  so.prompt = "Mr. John Dashwood and Fanny.";
  so.hotwords = "Norland";
  check_file_equals_cli(engine, &so, cli, "--prompt 'Mr. John Dashwood and Fanny.' --hotwords Norland", wav, NULL);

  brisvox_stream_options_init(&so);
  so.word_timestamps = 1;
  check_file_equals_cli(plain, &so, cli, "--word-timestamps", wav, "\"words\":[{\"start\":");
}

/* Opens a stream with `so`, pushes the first `seconds` of the recording (as fast as it takes them,
 * or at `speed` x real time when speed > 0, in 20 ms pieces), finishes it, and hands every
 * TRANSCRIPT and TRANSCRIPT_PARTIAL event to `on_transcript` until END_OF_STREAM (60 s at most).
 * Returns the open stream (NULL on failure), for the caller to check and close. */
typedef void (*OnTranscript)(brisvox_stream* s, const brisvox_event* e, void* context);

static brisvox_stream* run_stream(brisvox_engine* engine, const brisvox_stream_options* so, const Pcm* pcm,
                                  double seconds, double speed, OnTranscript on_transcript, void* context,
                                  int* ended) {
  *ended = 0;
  brisvox_stream* s = NULL;
  CHECK_STATUS(brisvox_stream_open(engine, so, &s), BRISVOX_OK);
  if (!s) return NULL;
  const size_t limit = (size_t)(seconds * 16000);
  const size_t n = pcm->count < limit ? pcm->count : limit;
  size_t pos = 0;
  const double start = now_s();
  while (!*ended && now_s() < start + 60) {
    if (pos < n) {
      size_t room = 0, taken = 0;
      if (speed > 0) sleep_until(start + (double)pos / (16000.0 * speed));
      CHECK_STATUS(brisvox_stream_writable(s, &room), BRISVOX_OK);
      if (speed > 0 && room > 320) room = 320;
      if (room > n - pos) room = n - pos;
      CHECK_STATUS(brisvox_stream_push_i16(s, pcm->samples + pos, room, &taken), BRISVOX_OK);
      pos += taken;
      if (pos == n) CHECK_STATUS(brisvox_stream_finish(s), BRISVOX_OK);
    }
    brisvox_event ev[16];
    size_t got = 0;
    CHECK_STATUS(brisvox_stream_poll(s, ev, 16, sizeof ev[0], &got), BRISVOX_OK);
    for (size_t i = 0; i < got; ++i) {
      if (ev[i].type == BRISVOX_EVENT_END_OF_STREAM) *ended = 1;
      if (ev[i].type == BRISVOX_EVENT_TRANSCRIPT || ev[i].type == BRISVOX_EVENT_TRANSCRIPT_PARTIAL) {
        on_transcript(s, &ev[i], context);
      }
    }
    if (got == 0 && !*ended && (pos == n || speed <= 0)) {
      int32_t ready = 0;
      CHECK_STATUS(brisvox_stream_wait_events(s, 20, &ready), BRISVOX_OK);
    }
  }
  return s;
}

/* A stream with word timestamps: each transcript's brisvox_word records, in order, within its
 * segment (times are rounded to 10 ms, as faster-whisper's), their texts making up its text. */
typedef struct {
  int transcripts;
  size_t words;
} WordsSeen;

static void check_words(brisvox_stream* s, const brisvox_event* e, void* context) {
  WordsSeen* seen = context;
  brisvox_transcript t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  CHECK_STATUS(brisvox_stream_read_transcript(s, e, &t), BRISVOX_OK);
  ++seen->transcripts;
  CHECK(e->type == BRISVOX_EVENT_TRANSCRIPT);
  CHECK(t.text != NULL && t.unstable == NULL);
  CHECK(t.num_words > 0 && t.words != NULL);
  char joined[4096] = "";
  double last = t.start_s;
  for (size_t w = 0; w < t.num_words && t.words; ++w) {
    const brisvox_word* word = &t.words[w];
    CHECK(word->word != NULL && word->word[0] != '\0');
    CHECK(word->start_s >= last - 0.01 && word->end_s >= word->start_s);
    CHECK(word->start_s >= t.start_s - 0.01 && word->end_s <= t.end_s + 0.01);
    CHECK(word->probability >= 0.0f && word->probability <= 1.0f);
    last = word->end_s;
    strncat(joined, word->word, sizeof joined - strlen(joined) - 1);
  }
  CHECK(t.text && strcmp(joined, t.text) == 0);
  if (t.text && strcmp(joined, t.text) != 0) fprintf(stderr, "words '%s'\ntext  '%s'\n", joined, t.text);
  seen->words += t.num_words;
  brisvox_transcript_free(&t);
  CHECK(t.text == NULL && t.words == NULL && t.num_words == 0);
}

static void test_stream_words(brisvox_engine* engine, const Pcm* pcm) {
  brisvox_stream_options so;
  brisvox_stream_options_init(&so);
  so.transcripts = 1;
  so.word_timestamps = 1;
  WordsSeen seen = {0, 0};
  int ended = 0;
  brisvox_stream* s = run_stream(engine, &so, pcm, 12.0, 0.0, check_words, &seen, &ended); /* two utterances */
  CHECK(ended && seen.transcripts >= 2 && seen.words >= 20);
  CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);
}

/* Partial transcripts: the first utterance (about 6.9 s) at twice real time (real time under a
 * sanitizer, whose decodes are several times slower), every 500 ms of audio. Within the segment
 * the agreed text only grows, and the segment's transcript comes after its partials. */
typedef struct {
  int partials;
  int transcripts;
  int partial_after_transcript;
  char agreed[4096];
} PartialsSeen;

static void check_partial(brisvox_stream* s, const brisvox_event* e, void* context) {
  PartialsSeen* seen = context;
  brisvox_transcript t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  CHECK_STATUS(brisvox_stream_read_transcript(s, e, &t), BRISVOX_OK);
  CHECK(t.text != NULL);
  if (e->type == BRISVOX_EVENT_TRANSCRIPT_PARTIAL) {
    ++seen->partials;
    if (seen->transcripts > 0) seen->partial_after_transcript = 1;
    CHECK(t.unstable != NULL && t.words == NULL);
    CHECK(t.end_s > t.start_s);
    CHECK(t.text && strncmp(t.text, seen->agreed, strlen(seen->agreed)) == 0);
    if (t.text) snprintf(seen->agreed, sizeof seen->agreed, "%s", t.text);
  } else {
    ++seen->transcripts;
    CHECK(t.unstable == NULL);
  }
  brisvox_transcript_free(&t);
}

static void test_partials(brisvox_engine* engine, const Pcm* pcm) {
  brisvox_stream_options so;
  brisvox_stream_options_init(&so);
  so.transcripts = 1;
  so.partial_interval_ms = 500;
  const char* preset = getenv("BRISVOX_TEST_PRESET");
  const double speed = preset && (strcmp(preset, "asan") == 0 || strcmp(preset, "tsan") == 0) ? 1.0 : 2.0;
  PartialsSeen seen;
  memset(&seen, 0, sizeof seen);
  int ended = 0;
  brisvox_stream* s = run_stream(engine, &so, pcm, 8.0, speed, check_partial, &seen, &ended);
  CHECK(ended && seen.transcripts >= 1);
  CHECK(seen.partials >= 3);
  CHECK(strlen(seen.agreed) >= 10); /* a few words agreed on */
  CHECK(!seen.partial_after_transcript);
  if (seen.partials < 3 || strlen(seen.agreed) < 10) fprintf(stderr, "%d partials, agreed '%s'\n", seen.partials, seen.agreed);
  CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);
}

/* A program built against version 3's header reads transcripts with its smaller struct: the fields
 * it has, nothing written past them. */
static void check_version3(brisvox_stream* s, const brisvox_event* e, void* context) {
  int* read = context;
  brisvox_transcript t;
  memset(&t, 0xAB, sizeof t);
  t.struct_size = offsetof(brisvox_transcript, unstable);
  CHECK_STATUS(brisvox_stream_read_transcript(s, e, &t), BRISVOX_OK);
  CHECK(t.text != NULL && strlen(t.text) > 10);
  const unsigned char* tail = (const unsigned char*)&t + offsetof(brisvox_transcript, unstable);
  int untouched = 1;
  for (size_t b = 0; b < sizeof t - offsetof(brisvox_transcript, unstable); ++b) untouched &= tail[b] == 0xAB;
  CHECK(untouched);
  brisvox_transcript_free(&t); /* frees the text alone */
  CHECK(t.text == NULL);
  ++*read;
}

static void test_version3_transcript(brisvox_engine* engine, const Pcm* pcm) {
  brisvox_stream_options so;
  brisvox_stream_options_init(&so);
  so.transcripts = 1;
  int read = 0, ended = 0;
  brisvox_stream* s = run_stream(engine, &so, pcm, 8.0, 0.0, check_version3, &read, &ended);
  CHECK(ended && read >= 1);
  /* Neither the size of version 3's struct nor this one's: refused. */
  brisvox_event transcript_event;
  memset(&transcript_event, 0, sizeof transcript_event);
  transcript_event.type = BRISVOX_EVENT_TRANSCRIPT;
  brisvox_transcript t;
  memset(&t, 0, sizeof t);
  t.struct_size = offsetof(brisvox_transcript, unstable) + 8;
  if (s) CHECK_STATUS(brisvox_stream_read_transcript(s, &transcript_event, &t), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);
}

static void expect_refused(brisvox_engine* engine, const brisvox_stream_options* so, const char* field) {
  brisvox_stream* s = NULL;
  CHECK_STATUS(brisvox_stream_open(engine, so, &s), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(s == NULL);
  CHECK(contains(brisvox_last_error_message(), field));
  if (!contains(brisvox_last_error_message(), field)) fprintf(stderr, "%s: %s\n", field, brisvox_last_error_message());
}

static void test_bad_options(brisvox_engine* engine, brisvox_engine* plain, const char* wav) {
  brisvox_stream_options so;
  brisvox_stream_options_init(&so);
  so.transcripts = 1;
  so.beam_size = 17;
  expect_refused(engine, &so, "beam_size");
  so.beam_size = 8; /* more than the engine's stt_max_width (5) */
  expect_refused(engine, &so, "max_width");
  so.beam_size = 0;
  so.decoding = 7;
  expect_refused(engine, &so, "decoding");
  so.decoding = 0;
  so.temperatures = "0,hot";
  expect_refused(engine, &so, "temperatures");
  so.temperatures = NULL;
  so.partial_interval_ms = 100;
  expect_refused(engine, &so, "partial_interval_ms");
  so.partial_interval_ms = 0;
  so.task = 2;
  expect_refused(engine, &so, "task");
  so.task = BRISVOX_TASK_TRANSLATE; /* an English-only model */
  expect_refused(engine, &so, "translate");
  so.task = 0;
  so.language_detection = 3;
  expect_refused(engine, &so, "language_detection");
  so.language_detection = 0;
  so.prompt = "bell \a here";
  expect_refused(engine, &so, "control");
  /* The transcripts' settings without transcripts. */
  brisvox_stream_options_init(&so);
  so.word_timestamps = 1;
  expect_refused(engine, &so, "transcripts = 1");
  char* json = (char*)1;
  brisvox_stream_options_init(&so);
  so.best_of = -1;
  CHECK_STATUS(brisvox_transcribe_file(engine, wav, &so, &json), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(json == NULL);
  brisvox_transcript_free(NULL);

  /* An engine without room for prompts refuses a stream's prompt longer than its lanes' few spare
   * positions, saying where the room comes from. */
  brisvox_stream_options_init(&so);
  so.transcripts = 1;
  so.prompt = "Mr. John Dashwood, his wife Fanny, and his stepmother at Norland Park.";
  expect_refused(plain, &so, "prompt_tokens");
  brisvox_engine_options eo;
  brisvox_engine_options_init(&eo);
  eo.vad_workers = 1;
  eo.stt_model = "tiny.en";
  brisvox_engine* other = NULL;
  eo.stt_max_width = 17;
  CHECK_STATUS(brisvox_engine_create(&eo, &other), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_last_error_message(), "stt_max_width"));
  eo.stt_max_width = 0;
  eo.stt_prompt_tokens = 447;
  CHECK_STATUS(brisvox_engine_create(&eo, &other), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_last_error_message(), "stt_prompt_tokens"));
  eo.stt_prompt_tokens = 64;
  eo.stt_model = NULL;
  CHECK_STATUS(brisvox_engine_create(&eo, &other), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_last_error_message(), "stt_model"));
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SAMPLE.wav BRISVOX\n", argv[0]);
    return 2;
  }
  Pcm pcm = {NULL, 0, 0};
  if (!read_wav(argv[1], &pcm) || pcm.rate != 16000) {
    fprintf(stderr, "%s: not a 16 kHz 16-bit mono WAV (run scripts/setup.sh)\n", argv[1]);
    return 1;
  }
  CHECK(brisvox_api_version() == BRISVOX_C_API_VERSION && BRISVOX_C_API_VERSION == 5);
  brisvox_engine_options eo;
  brisvox_engine_options_init(&eo);
  eo.vad_workers = 1;
  eo.stt_model = "tiny.en";
  eo.stt_max_width = 5;       /* faster-whisper's beam of 5 */
  eo.stt_prompt_tokens = 446; /* a prompt and hotwords, as `brisvox transcribe --prompt` sizes them */
  eo.admission_control = 0;   /* CI machines are shared: a busy one must not refuse the test's streams */
  brisvox_engine* engine = NULL;
  CHECK_STATUS(brisvox_engine_create(&eo, &engine), BRISVOX_OK);
  eo.stt_max_width = 0;
  eo.stt_prompt_tokens = 0;
  brisvox_engine* plain = NULL;
  CHECK_STATUS(brisvox_engine_create(&eo, &plain), BRISVOX_OK);
  if (engine && plain) {
    test_file_options(engine, plain, argv[1], argv[2]);
    test_stream_words(plain, &pcm);
    test_partials(plain, &pcm);
    test_version3_transcript(plain, &pcm);
    test_bad_options(engine, plain, argv[1]);
  }
  CHECK_STATUS(brisvox_engine_destroy(engine), BRISVOX_OK);
  CHECK_STATUS(brisvox_engine_destroy(plain), BRISVOX_OK);
  free(pcm.samples);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
