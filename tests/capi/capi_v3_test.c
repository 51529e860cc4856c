/* The C API's version 3 (include/brisvox/brisvox.h) from C11, on the real models (Silero VAD v6,
 * Whisper tiny.en, the Piper voice en_US-joe-medium): a stream's transcripts and
 * brisvox_transcribe_file against `brisvox transcribe --format json` of the same file; a call that
 * speaks (audio that is not silence, of a plausible length, marks), a caller who talks over it
 * (BARGE_IN, then TTS_INTERRUPTED with the audio handed out); a speech session (speak, read, cancel)
 * and its audio against `brisvox say`'s;
 * and the statuses of bad arguments, missing models and a destroyed engine. About 16 s of CPU.
 *
 *   brisvox_capi_v3_test SAMPLE.wav BRISVOX   (16 kHz 16-bit mono WAV; the brisvox tool)
 * The models are found beside SAMPLE.wav (third_party/audio/../models).
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

/* The string value of the first "key":"..." in a JSON document (escapes: \" and \\ only, enough
 * for English transcripts), copied into out. */
static int json_string(const char* json, const char* key, char* out, size_t most) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  const char* p = strstr(json, pattern);
  if (!p) return 0;
  p += strlen(pattern);
  size_t n = 0;
  for (; *p && *p != '"' && n + 1 < most; ++p) {
    if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) ++p;
    out[n++] = *p;
  }
  out[n] = '\0';
  return *p == '"';
}

/* Appends a transcript's text as `brisvox transcribe` joins them: trimmed, one space between. */
static void append_trimmed(char* all, size_t most, const char* text) {
  while (*text == ' ' || *text == '\t' || *text == '\n') ++text;
  size_t len = strlen(text);
  while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\n')) --len;
  if (len == 0) return;
  size_t at = strlen(all);
  if (at > 0 && at + 1 < most) all[at++] = ' ';
  for (size_t i = 0; i < len && at + 1 < most; ++i) all[at++] = text[i];
  all[at] = '\0';
}

/* ---- transcripts ---- */

/* Pushes the recording through a stream with transcripts and joins the transcripts' texts. */
static void stream_transcripts(brisvox_engine* engine, const Pcm* pcm, char* all, size_t most, int* transcripts) {
  all[0] = '\0';
  *transcripts = 0;
  brisvox_stream_options so;
  brisvox_stream_options_init(&so);
  so.transcripts = 1;
  brisvox_stream* s = NULL;
  CHECK_STATUS(brisvox_stream_open(engine, &so, &s), BRISVOX_OK);
  if (!s) return;
  size_t pos = 0;
  int ended = 0;
  const double deadline = now_s() + 60;
  while (!ended && now_s() < deadline) {
    size_t room = 0;
    if (pos < pcm->count) {
      CHECK_STATUS(brisvox_stream_writable(s, &room), BRISVOX_OK);
      if (room > pcm->count - pos) room = pcm->count - pos;
      size_t taken = 0;
      CHECK_STATUS(brisvox_stream_push_i16(s, pcm->samples + pos, room, &taken), BRISVOX_OK);
      CHECK(taken == room);
      pos += taken;
      if (pos == pcm->count) CHECK_STATUS(brisvox_stream_finish(s), BRISVOX_OK);
    }
    brisvox_event ev[16];
    size_t n = 0;
    CHECK_STATUS(brisvox_stream_poll(s, ev, 16, sizeof ev[0], &n), BRISVOX_OK);
    for (size_t i = 0; i < n; ++i) {
      if (ev[i].type == BRISVOX_EVENT_END_OF_STREAM) ended = 1;
      if (ev[i].type == BRISVOX_EVENT_ERROR) fprintf(stderr, "error event: %s\n", brisvox_stream_event_error(s));
      CHECK(ev[i].type != BRISVOX_EVENT_ERROR);
      if (ev[i].type != BRISVOX_EVENT_TRANSCRIPT) continue;
      ++*transcripts;
      CHECK(ev[i].payload == BRISVOX_PAYLOAD_ATTACHED && ev[i].payload_bytes > 0);
      brisvox_transcript t;
      memset(&t, 0, sizeof t);
      t.struct_size = sizeof t;
      CHECK_STATUS(brisvox_stream_read_transcript(s, &ev[i], &t), BRISVOX_OK);
      CHECK(t.text != NULL);
      CHECK(t.end_s > t.start_s && t.start_s >= 0.0);
      CHECK(strcmp(t.language, "en") == 0);
      CHECK(t.no_speech_prob >= 0.0f && t.no_speech_prob <= 1.0f && t.avg_logprob <= 0.0f);
      if (t.text && !t.no_speech) append_trimmed(all, most, t.text);
      brisvox_string_free(t.text);
      /* Read already: the payload is gone, which the text says (NULL), not an error. */
      t.struct_size = sizeof t;
      CHECK_STATUS(brisvox_stream_read_transcript(s, &ev[i], &t), BRISVOX_OK);
      CHECK(t.text == NULL);
    }
    if (n == 0 && !ended) {
      int32_t ready = 0;
      CHECK_STATUS(brisvox_stream_wait_events(s, 20, &ready), BRISVOX_OK);
    }
  }
  CHECK(ended);
  CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);
}

static void test_transcripts(brisvox_engine* engine, const char* wav, const Pcm* pcm, const char* cli) {
  /* What the CLI prints for the file is the reference (it runs the same engine from C++). */
  char command[8192];
  snprintf(command, sizeof command, "'%s' transcribe --model tiny.en --format json '%s' 2>/dev/null", cli, wav);
  char* expected = run_command(command);
  CHECK(expected != NULL);
  if (!expected) return;
  char* json = NULL;
  CHECK_STATUS(brisvox_transcribe_file(engine, wav, NULL, &json), BRISVOX_OK);
  CHECK(json != NULL && strcmp(json, expected) == 0);
  if (json && strcmp(json, expected) != 0) fprintf(stderr, "C API: %s\nCLI:   %s\n", json, expected);

  char text[8192];
  CHECK(json_string(expected, "text", text, sizeof text));
  CHECK(strlen(text) > 40); /* five readings */
  char streamed[8192];
  int transcripts = 0;
  stream_transcripts(engine, pcm, streamed, sizeof streamed, &transcripts);
  CHECK(transcripts >= 5);
  CHECK(strcmp(streamed, text) == 0);
  if (strcmp(streamed, text) != 0) fprintf(stderr, "stream: '%s'\nCLI:    '%s'\n", streamed, text);
  brisvox_string_free(json);
  free(expected);
}

/* ---- calls ---- */

typedef struct {
  double audio_s[64];  /* speech read per utterance id */
  double speech_rms_sum;
  size_t speech_samples;
  int ended[64];       /* the event that ended each utterance or mark (0: none yet) */
  double end_s[64];
  int barge_ins;
  uint32_t barge_in_utterance;
  int audio_after_barge_in;
  int errors;
  int end_of_stream;
  double first_audio_at; /* now_s() when the first piece of speech was polled */
  double mark_at;        /* ... and the last TTS_MARK */
} Heard;

static void heard_event(Heard* h, const brisvox_event* e, const float* pcm, size_t n, int rate) {
  const uint32_t u = e->utterance_id < 64 ? e->utterance_id : 63;
  switch (e->type) {
    case BRISVOX_EVENT_TTS_AUDIO:
      if (h->speech_samples == 0) h->first_audio_at = now_s();
      h->audio_s[u] += (double)n / rate;
      for (size_t i = 0; i < n; ++i) h->speech_rms_sum += (double)pcm[i] * pcm[i];
      h->speech_samples += n;
      if (h->barge_ins > 0 && e->utterance_id <= h->barge_in_utterance) ++h->audio_after_barge_in;
      break;
    case BRISVOX_EVENT_TTS_END:
    case BRISVOX_EVENT_TTS_CANCELLED:
    case BRISVOX_EVENT_TTS_INTERRUPTED:
    case BRISVOX_EVENT_TTS_MARK:
      h->ended[u] = e->type;
      h->end_s[u] = e->end_s;
      if (e->type == BRISVOX_EVENT_TTS_MARK) h->mark_at = now_s();
      break;
    case BRISVOX_EVENT_BARGE_IN:
      ++h->barge_ins;
      h->barge_in_utterance = e->utterance_id;
      break;
    case BRISVOX_EVENT_ERROR: ++h->errors; break;
    case BRISVOX_EVENT_END_OF_STREAM: ++h->end_of_stream; break;
    default: break;
  }
}

static float g_audio[1 << 20];

/* Takes every event the call has now; reads each piece of speech. */
static void drain_call(brisvox_call* c, Heard* h, int rate) {
  brisvox_event ev[16];
  size_t n = 0;
  do {
    CHECK_STATUS(brisvox_call_poll(c, ev, 16, sizeof ev[0], &n), BRISVOX_OK);
    for (size_t i = 0; i < n; ++i) {
      size_t got = 0;
      if (ev[i].type == BRISVOX_EVENT_TTS_AUDIO) {
        CHECK_STATUS(brisvox_call_read_audio(c, &ev[i], g_audio, sizeof g_audio / sizeof g_audio[0], &got), BRISVOX_OK);
        CHECK(got > 0 && got == ev[i].payload_bytes / sizeof(float));
      }
      if (ev[i].type == BRISVOX_EVENT_ERROR) fprintf(stderr, "call error: %s\n", brisvox_call_event_error(c, &ev[i]));
      heard_event(h, &ev[i], g_audio, got, rate);
    }
  } while (n == 16);
}

/* Polls the call until ended[id] is set or the timeout; returns whether it was. */
static int wait_call(brisvox_call* c, Heard* h, int rate, uint32_t id, double timeout_s) {
  const double deadline = now_s() + timeout_s;
  while (now_s() < deadline) {
    drain_call(c, h, rate);
    if (h->ended[id]) return 1;
    int32_t ready = 0;
    CHECK_STATUS(brisvox_call_wait_events(c, 20, &ready), BRISVOX_OK);
  }
  drain_call(c, h, rate);
  return h->ended[id] != 0;
}

static void test_call_speaks(brisvox_engine* engine) {
  brisvox_call_options co;
  brisvox_call_options_init(&co);
  brisvox_call* c = NULL;
  CHECK_STATUS(brisvox_call_open(engine, &co, &c), BRISVOX_OK);
  if (!c) return;
  int32_t listen_hz = 0, speech_hz = 0;
  CHECK_STATUS(brisvox_call_sample_rates(c, &listen_hz, &speech_hz), BRISVOX_OK);
  CHECK(listen_hz == 16000 && speech_hz == 16000);
  Heard h;
  memset(&h, 0, sizeof h);
  uint32_t id = 0, mark = 0;
  CHECK_STATUS(brisvox_call_speak(c, "Your table is booked for Monday at seven. See you then!", &id), BRISVOX_OK);
  CHECK_STATUS(brisvox_call_mark(c, &mark), BRISVOX_OK);
  CHECK(id == 1 && mark == 2); /* marks share the utterances' sequence */
  CHECK(wait_call(c, &h, speech_hz, mark, 30));
  CHECK(h.ended[id] == BRISVOX_EVENT_TTS_END && h.ended[mark] == BRISVOX_EVENT_TTS_MARK);
  /* About 3 s of speech (eleven words), and all of it handed out. */
  CHECK(h.audio_s[id] > 1.5 && h.audio_s[id] < 6.0);
  CHECK(fabs(h.end_s[id] - h.audio_s[id]) < 1e-3);
  const double rms = h.speech_samples ? sqrt(h.speech_rms_sum / (double)h.speech_samples) : 0;
  CHECK(rms > 0.02); /* speech, not silence */
  CHECK(h.errors == 0);
  /* The mark came out when playback reached it: the audio's length after the first piece (within a
   * poll's slack), at the time its end_s names on the monotonic clock. */
  CHECK(h.mark_at - h.first_audio_at > h.audio_s[id] - 0.1);
  CHECK(h.mark_at - h.first_audio_at < h.audio_s[id] + 1.0);
  CHECK(fabs(h.end_s[mark] - h.mark_at) < 0.5);

  /* Cancel: the reply ends cancelled and the call goes on. */
  uint32_t next = 0, last = 0;
  CHECK_STATUS(brisvox_call_speak(c, "This is a long reply. It has a few sentences. It goes on for a while.", &next),
               BRISVOX_OK);
  CHECK_STATUS(brisvox_call_cancel(c, &last), BRISVOX_OK);
  CHECK(last == next);
  CHECK(wait_call(c, &h, speech_hz, next, 30));
  CHECK(h.ended[next] == BRISVOX_EVENT_TTS_CANCELLED);
  CHECK_STATUS(brisvox_call_close(c), BRISVOX_OK);
}

static void test_call_barge_in(brisvox_engine* engine, const Pcm* pcm) {
  brisvox_call_options co;
  brisvox_call_options_init(&co);
  co.barge_in_min_speech_ms = 300;
  brisvox_call* c = NULL;
  CHECK_STATUS(brisvox_call_open(engine, &co, &c), BRISVOX_OK);
  if (!c) return;
  Heard h;
  memset(&h, 0, sizeof h);
  uint32_t id = 0;
  CHECK_STATUS(brisvox_call_speak(c,
                                  "This is sentence number one of a long reply. This is sentence number two of a long "
                                  "reply. This is sentence number three of a long reply. This is sentence number four "
                                  "of a long reply.",
                                  &id),
               BRISVOX_OK);
  /* Once the reply is playing, the caller talks over it: 8.4 s to 10.4 s of the recording (speech
   * from 8.83 s), in real time, 20 ms at a time. */
  const double start = now_s();
  while (h.speech_samples == 0 && now_s() < start + 30) {
    drain_call(c, &h, 16000);
    int32_t ready = 0;
    CHECK_STATUS(brisvox_call_wait_events(c, 20, &ready), BRISVOX_OK);
  }
  CHECK(h.speech_samples > 0);
  const size_t from = (size_t)(8.4 * 16000), to = (size_t)(10.4 * 16000);
  CHECK(pcm->count >= to);
  const double t0 = now_s();
  for (size_t pos = from; pos < to && pos < pcm->count;) {
    size_t taken = 0;
    CHECK_STATUS(brisvox_call_push_i16(c, pcm->samples + pos, 320, &taken), BRISVOX_OK);
    pos += taken;
    drain_call(c, &h, 16000);
    sleep_until(t0 + (double)(pos - from) / 16000.0);
  }
  CHECK(wait_call(c, &h, 16000, id, 10));
  CHECK(h.barge_ins == 1 && h.barge_in_utterance == id);
  CHECK(h.ended[id] == BRISVOX_EVENT_TTS_INTERRUPTED);
  /* How much was sent: the audio handed out, less than the reply. */
  CHECK(h.end_s[id] > 0 && fabs(h.end_s[id] - h.audio_s[id]) < 1e-3);
  CHECK(h.audio_after_barge_in == 0);
  /* The caller's side ends as a stream does. */
  CHECK_STATUS(brisvox_call_finish(c), BRISVOX_OK);
  const double deadline = now_s() + 10;
  while (!h.end_of_stream && now_s() < deadline) {
    drain_call(c, &h, 16000);
    int32_t ready = 0;
    CHECK_STATUS(brisvox_call_wait_events(c, 20, &ready), BRISVOX_OK);
  }
  CHECK(h.end_of_stream == 1);
  size_t n = 9;
  CHECK_STATUS(brisvox_call_push_i16(c, pcm->samples, 320, &n), BRISVOX_ERR_CLOSED);
  CHECK(n == 0);
  CHECK_STATUS(brisvox_call_close(c), BRISVOX_OK);
}

/* ---- speech sessions ---- */

static void test_speech(brisvox_engine* engine) {
  const char* names[] = {"noise_scale", "noise_w_scale"};
  const double values[] = {0.0, 0.0};
  brisvox_speech_options so;
  brisvox_speech_options_init(&so);
  so.voice_option_names = names;
  so.voice_option_values = values;
  so.num_voice_options = 2;
  brisvox_speech* sp = NULL;
  CHECK_STATUS(brisvox_speech_open(engine, &so, &sp), BRISVOX_OK);
  if (!sp) return;
  int32_t rate = 0;
  CHECK_STATUS(brisvox_speech_sample_rate(sp, &rate), BRISVOX_OK);
  CHECK(rate == 22050); /* the voice's own */
  uint32_t id = 0;
  CHECK_STATUS(brisvox_speech_speak(sp, "Hello. How can I help?", &id), BRISVOX_OK);
  Heard h;
  memset(&h, 0, sizeof h);
  int small_checked = 0;
  const double deadline = now_s() + 30;
  while (!h.ended[id] && now_s() < deadline) {
    brisvox_event ev[8];
    size_t n = 0;
    CHECK_STATUS(brisvox_speech_poll(sp, ev, 8, sizeof ev[0], &n), BRISVOX_OK);
    for (size_t i = 0; i < n; ++i) {
      size_t got = 0;
      if (ev[i].type == BRISVOX_EVENT_TTS_AUDIO) {
        size_t needed = 0;
        CHECK_STATUS(brisvox_speech_read_audio(sp, &ev[i], NULL, 0, &needed), BRISVOX_OK);
        CHECK(needed == ev[i].payload_bytes / sizeof(float) && needed > 0);
        if (!small_checked) {
          /* Too small a buffer: refused, with what it needs; the audio stays readable. */
          size_t want = 0;
          CHECK_STATUS(brisvox_speech_read_audio(sp, &ev[i], g_audio, needed - 1, &want), BRISVOX_ERR_INVALID_ARGUMENT);
          CHECK(want == needed && contains(brisvox_speech_message(sp), "samples"));
          small_checked = 1;
        }
        CHECK_STATUS(brisvox_speech_read_audio(sp, &ev[i], g_audio, needed, &got), BRISVOX_OK);
        CHECK(got == needed);
        CHECK(ev[i].utterance_id == id && ev[i].sentence_index < ev[i].sentence_count);
      }
      heard_event(&h, &ev[i], g_audio, got, rate);
    }
    if (n == 0) {
      int32_t ready = 0;
      CHECK_STATUS(brisvox_speech_wait_events(sp, 20, &ready), BRISVOX_OK);
    }
  }
  CHECK(h.ended[id] == BRISVOX_EVENT_TTS_END);
  CHECK(h.audio_s[id] > 0.8 && h.audio_s[id] < 4.0);
  CHECK(fabs(h.end_s[id] - h.audio_s[id]) < 1e-3);
  CHECK(h.speech_samples && sqrt(h.speech_rms_sum / (double)h.speech_samples) > 0.02);

  /* Bad text: each refused with a status and a message that says what is wrong; nothing queued. */
  uint32_t bad = 77;
  CHECK_STATUS(brisvox_speech_speak(sp, "", &bad), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(bad == 0 && strlen(brisvox_speech_message(sp)) > 0);
  CHECK_STATUS(brisvox_speech_speak(sp, "   ", &bad), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_speech_speak(sp, "caf\xc3 au lait", &bad), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_speech_message(sp), "UTF-8"));
  CHECK_STATUS(brisvox_speech_speak(sp, NULL, &bad), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_speech_message(sp), "text is NULL"));

  /* Cancel stops the utterance within a sentence. */
  uint32_t next = 0, last = 0;
  CHECK_STATUS(brisvox_speech_speak(sp, "One sentence. Another sentence. And a third one to finish.", &next),
               BRISVOX_OK);
  CHECK(next == id + 1);
  CHECK_STATUS(brisvox_speech_cancel(sp, &last), BRISVOX_OK);
  CHECK(last == next);
  const double deadline2 = now_s() + 30;
  while (!h.ended[next] && now_s() < deadline2) {
    brisvox_event ev[8];
    size_t n = 0;
    CHECK_STATUS(brisvox_speech_poll(sp, ev, 8, sizeof ev[0], &n), BRISVOX_OK);
    for (size_t i = 0; i < n; ++i) heard_event(&h, &ev[i], g_audio, 0, rate);
    if (n == 0) {
      int32_t ready = 0;
      CHECK_STATUS(brisvox_speech_wait_events(sp, 20, &ready), BRISVOX_OK);
    }
  }
  CHECK(h.ended[next] == BRISVOX_EVENT_TTS_CANCELLED);
  CHECK_STATUS(brisvox_speech_close(sp), BRISVOX_OK);
}


/* A speech session's audio equals what `brisvox say` writes for the same text and settings
 * (deterministic: noise_scale 0 and noise_w_scale 0; whole sentences: fast_start 0), as 16-bit PCM
 * converted the way it converts (piper-tts's: x 32767, clamped, truncated). */
static float g_said[1 << 20];

static void test_speech_equals_say(brisvox_engine* engine, const char* cli, const char* voice) {
  const char* text = "Hello there. How can I help you today?";
  char command[8192];
  snprintf(command, sizeof command,
           "'%s' say --voice '%s' --noise-scale 0 --noise-w-scale 0 --format raw -o - '%s' 2>/dev/null | od -An -v -td2",
           cli, voice, text);
  char* said = run_command(command);
  CHECK(said != NULL);
  if (!said) return;
  const char* names[] = {"noise_scale", "noise_w_scale"};
  const double values[] = {0.0, 0.0};
  brisvox_speech_options so;
  brisvox_speech_options_init(&so);
  so.fast_start = 0;
  so.voice_option_names = names;
  so.voice_option_values = values;
  so.num_voice_options = 2;
  brisvox_speech* sp = NULL;
  CHECK_STATUS(brisvox_speech_open(engine, &so, &sp), BRISVOX_OK);
  if (!sp) {
    free(said);
    return;
  }
  uint32_t id = 0;
  CHECK_STATUS(brisvox_speech_speak(sp, text, &id), BRISVOX_OK);
  size_t total = 0;
  int done = 0;
  const double deadline = now_s() + 30;
  while (!done && now_s() < deadline) {
    brisvox_event ev[8];
    size_t n = 0;
    CHECK_STATUS(brisvox_speech_poll(sp, ev, 8, sizeof ev[0], &n), BRISVOX_OK);
    for (size_t i = 0; i < n; ++i) {
      if (ev[i].type == BRISVOX_EVENT_TTS_AUDIO) {
        size_t got = 0;
        CHECK_STATUS(brisvox_speech_read_audio(sp, &ev[i], g_said + total, sizeof g_said / sizeof g_said[0] - total, &got),
                     BRISVOX_OK);
        total += got;
      }
      if (ev[i].type == BRISVOX_EVENT_TTS_END || ev[i].type == BRISVOX_EVENT_ERROR) done = 1;
      CHECK(ev[i].type != BRISVOX_EVENT_ERROR);
    }
    int32_t ready = 0;
    if (!done && n == 0) CHECK_STATUS(brisvox_speech_wait_events(sp, 20, &ready), BRISVOX_OK);
  }
  CHECK(done && total > 22050); /* over a second at the voice's 22050 Hz */
  size_t count = 0, differ = 0;
  int most = 0;
  const char* p = said;
  char* next = NULL;
  for (long v = strtol(p, &next, 10); next != p; p = next, v = strtol(p, &next, 10)) {
    if (count < total) {
      float x = g_said[count] * 32767.0f;
      x = x > 32767.0f ? 32767.0f : x < -32767.0f ? -32767.0f : x;
      const int diff = abs((int)(int16_t)x - (int)v);
      if (diff != 0) ++differ;
      if (diff > most) most = diff;
    }
    ++count;
  }
  CHECK(count == total);
  CHECK(differ == 0);
  if (count != total || differ != 0) {
    fprintf(stderr, "brisvox say: %zu samples, the session: %zu; %zu differ (at most by %d)\n", count, total, differ,
            most);
  }
  free(said);
  CHECK_STATUS(brisvox_speech_close(sp), BRISVOX_OK);
}

/* ---- bad arguments ---- */

static void test_null_handles(void) {
  brisvox_event ev;
  memset(&ev, 0, sizeof ev);
  brisvox_transcript t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  size_t n = 0;
  uint32_t id = 0;
  int32_t rate = 0;
  float pcm[4] = {0};
  CHECK_STATUS(brisvox_call_options_init(NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_speech_options_init(NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_open(NULL, NULL, NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_speech_open(NULL, NULL, NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_push_f32(NULL, pcm, 4, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_push_i16(NULL, NULL, 0, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_writable(NULL, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_finish(NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_speak(NULL, "hi", &id), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_last_error_message(), "brisvox_call_speak: call is NULL"));
  CHECK_STATUS(brisvox_call_mark(NULL, &id), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_cancel(NULL, &id), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_poll(NULL, &ev, 1, sizeof ev, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_wait_events(NULL, 0, NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_read_audio(NULL, &ev, pcm, 4, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_read_transcript(NULL, &ev, &t), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_call_sample_rates(NULL, &rate, NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(brisvox_call_event_error(NULL, &ev), "") == 0);
  CHECK(strcmp(brisvox_call_message(NULL), "") == 0);
  CHECK_STATUS(brisvox_call_close(NULL), BRISVOX_OK);
  CHECK_STATUS(brisvox_speech_speak(NULL, "hi", &id), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_speech_mark(NULL, &id), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_speech_cancel(NULL, &id), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_speech_poll(NULL, &ev, 1, sizeof ev, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_speech_wait_events(NULL, 0, NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_speech_read_audio(NULL, &ev, pcm, 4, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(brisvox_speech_sample_rate(NULL, &rate), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(brisvox_speech_event_error(NULL), "") == 0);
  CHECK(strcmp(brisvox_speech_message(NULL), "") == 0);
  CHECK_STATUS(brisvox_speech_close(NULL), BRISVOX_OK);
  CHECK_STATUS(brisvox_stream_read_transcript(NULL, &ev, &t), BRISVOX_ERR_INVALID_ARGUMENT);
  char* json = (char*)&json;
  CHECK_STATUS(brisvox_transcribe_file(NULL, "x.wav", NULL, &json), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(json == NULL);
}

/* An engine with the VAD alone: what needs the other models is refused, naming the option. */
static void test_missing_models(const char* wav) {
  brisvox_engine_options eo;
  brisvox_engine_options_init(&eo);
  eo.vad_workers = 1;
  eo.admission_control = 0;
  /* Version 2's engine options (they end before stt_model): accepted, with no stt model or voice. */
  eo.struct_size = offsetof(brisvox_engine_options, stt_model);
  eo.voice = "/nonexistent/voice.onnx"; /* beyond the struct_size given: never read */
  brisvox_engine* engine = NULL;
  CHECK_STATUS(brisvox_engine_create(&eo, &engine), BRISVOX_OK);
  if (!engine) return;
  brisvox_call* c = (brisvox_call*)&c;
  CHECK_STATUS(brisvox_call_open(engine, NULL, &c), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(c == NULL && contains(brisvox_engine_message(engine), "no voice") &&
        contains(brisvox_engine_message(engine), "brisvox_engine_options.voice"));
  brisvox_speech* sp = (brisvox_speech*)&sp;
  CHECK_STATUS(brisvox_speech_open(engine, NULL, &sp), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(sp == NULL && contains(brisvox_last_error_message(), "no voice"));
  brisvox_stream_options so;
  brisvox_stream_options_init(&so);
  so.transcripts = 1;
  brisvox_stream* s = NULL;
  CHECK_STATUS(brisvox_stream_open(engine, &so, &s), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(s == NULL && contains(brisvox_engine_message(engine), "stt_model"));
  char* json = NULL;
  CHECK_STATUS(brisvox_transcribe_file(engine, wav, NULL, &json), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(json == NULL && contains(brisvox_engine_message(engine), "stt_model"));

  /* The transcripts' settings without transcripts: refused rather than ignored. */
  brisvox_stream_options_init(&so);
  so.language = "de";
  CHECK_STATUS(brisvox_stream_open(engine, &so, &s), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_engine_message(engine), "transcripts = 1"));
  CHECK_STATUS(brisvox_vad_file(engine, wav, &so, &json), BRISVOX_ERR_INVALID_ARGUMENT);

  /* Older layouts still work: version 2's stream options, and version 2's events (48 bytes). */
  brisvox_stream_options_init(&so);
  so.struct_size = offsetof(brisvox_stream_options, transcripts);
  CHECK_STATUS(brisvox_stream_open(engine, &so, &s), BRISVOX_OK);
  if (s) {
    CHECK_STATUS(brisvox_stream_finish(s), BRISVOX_OK);
    unsigned char v2[4][48 + 8];
    memset(v2, 0xab, sizeof v2);
    size_t n = 0;
    int end_seen = 0;
    const double deadline = now_s() + 10;
    while (!end_seen && now_s() < deadline) {
      CHECK_STATUS(brisvox_stream_poll(s, (brisvox_event*)(void*)v2, 4, 48, &n), BRISVOX_OK);
      for (size_t i = 0; i < n; ++i) {
        int32_t type;
        memcpy(&type, (unsigned char*)v2 + i * 48, sizeof type);
        if (type == BRISVOX_EVENT_END_OF_STREAM) end_seen = 1;
      }
      int32_t ready = 0;
      if (!end_seen) CHECK_STATUS(brisvox_stream_wait_events(s, 20, &ready), BRISVOX_OK);
    }
    CHECK(end_seen);
    /* Nothing written past the 48 bytes of the last element given. */
    CHECK(((unsigned char*)v2)[4 * 48] == 0xab);
    CHECK_STATUS(brisvox_stream_close(s), BRISVOX_OK);
  }
  CHECK_STATUS(brisvox_engine_destroy(engine), BRISVOX_OK);
}

/* Version 4: the stream's model_rate_hz. 8 kHz input reaches the 16 kHz model unless 8000 is asked;
 * a rate Silero has no model for is refused with the field's name; version 3's layout still opens. */
static void test_model_rate(brisvox_engine* engine) {
  brisvox_stream_options so;
  brisvox_stream_options_init(&so);
  CHECK(so.model_rate_hz == 0);
  so.sample_rate_hz = 8000;
  brisvox_stream* s = NULL;
  for (int i = 0; i < 2; ++i) {
    so.model_rate_hz = i == 0 ? 8000 : 16000;
    CHECK_STATUS(brisvox_stream_open(engine, &so, &s), BRISVOX_OK);
    if (s) brisvox_stream_close(s);
    s = NULL;
  }
  so.model_rate_hz = 22050;
  CHECK_STATUS(brisvox_stream_open(engine, &so, &s), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(s == NULL && contains(brisvox_engine_message(engine), "model_rate_hz"));
  so.struct_size = offsetof(brisvox_stream_options, model_rate_hz); /* version 3: 22050 never read */
  CHECK_STATUS(brisvox_stream_open(engine, &so, &s), BRISVOX_OK);
  if (s) brisvox_stream_close(s);
}

static void test_call_arguments(brisvox_engine* engine) {
  brisvox_call_options co;
  brisvox_call_options_init(&co);
  co.struct_size = 16;
  brisvox_call* c = NULL;
  CHECK_STATUS(brisvox_call_open(engine, &co, &c), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(c == NULL && contains(brisvox_engine_message(engine), "brisvox_call_options.struct_size is 16"));
  brisvox_call_options_init(&co);
  co.playout_lead_ms = -5;
  CHECK_STATUS(brisvox_call_open(engine, &co, &c), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_engine_message(engine), "playout_lead_ms"));
  brisvox_call_options_init(&co);
  const char* names[] = {"loudness"};
  const double values[] = {2.0};
  co.voice_option_names = names;
  co.voice_option_values = values;
  co.num_voice_options = 1;
  CHECK_STATUS(brisvox_call_open(engine, &co, &c), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_engine_message(engine), "loudness"));
  co.voice_option_values = NULL;
  CHECK_STATUS(brisvox_call_open(engine, &co, &c), BRISVOX_ERR_INVALID_ARGUMENT);
  brisvox_stream_options listen;
  brisvox_stream_options_init(&listen);
  listen.sample_rate_hz = 100;
  brisvox_call_options_init(&co);
  co.listen = &listen;
  CHECK_STATUS(brisvox_call_open(engine, &co, &c), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_engine_message(engine), "sample_rate_hz"));

  /* A good call: bad calls on it fail with its message and leave it usable. */
  brisvox_call_options_init(&co);
  CHECK_STATUS(brisvox_call_open(engine, &co, &c), BRISVOX_OK);
  if (!c) return;
  uint32_t id = 5;
  CHECK_STATUS(brisvox_call_speak(c, "", &id), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(id == 0 && strlen(brisvox_call_message(c)) > 0);
  CHECK_STATUS(brisvox_call_speak(c, "\xff\xfe", &id), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_call_message(c), "UTF-8"));
  brisvox_event ev[2];
  size_t n = 0;
  CHECK_STATUS(brisvox_call_poll(c, ev, 2, 20, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_call_message(c), "event_size"));
  CHECK_STATUS(brisvox_call_wait_events(c, -1, NULL), BRISVOX_ERR_INVALID_ARGUMENT);
  memset(ev, 0, sizeof ev);
  ev[0].type = BRISVOX_EVENT_SPEECH_END;
  float pcm[8];
  CHECK_STATUS(brisvox_call_read_audio(c, &ev[0], pcm, 8, &n), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_call_message(c), "not a BRISVOX_EVENT_TTS_AUDIO"));
  brisvox_transcript t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  CHECK_STATUS(brisvox_call_read_transcript(c, &ev[0], &t), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_call_message(c), "not a BRISVOX_EVENT_TRANSCRIPT"));
  ev[0].type = BRISVOX_EVENT_TRANSCRIPT;
  t.struct_size = 8;
  CHECK_STATUS(brisvox_call_read_transcript(c, &ev[0], &t), BRISVOX_ERR_INVALID_ARGUMENT);
  CHECK(contains(brisvox_call_message(c), "struct_size"));
  /* Oversize text: refused with the limit, nothing queued. */
  const size_t big_bytes = 1 << 20;
  char* big = malloc(big_bytes + 1);
  CHECK(big != NULL);
  if (big) {
    for (size_t i = 0; i < big_bytes; ++i) big[i] = i % 8 == 7 ? ' ' : 'a';
    big[big_bytes] = '\0';
    CHECK_STATUS(brisvox_call_speak(c, big, &id), BRISVOX_ERR_INVALID_ARGUMENT);
    CHECK(contains(brisvox_call_message(c), "more than the limit"));
    free(big);
  }
  CHECK_STATUS(brisvox_call_speak(c, "Still here.", &id), BRISVOX_OK);
  CHECK(id == 1);
  CHECK_STATUS(brisvox_call_close(c), BRISVOX_OK);
}

/* The engine destroyed under an open call and speech session: their calls say closed. */
static void test_destroyed_engine(brisvox_engine* engine, const Pcm* pcm) {
  brisvox_call* c = NULL;
  brisvox_speech* sp = NULL;
  CHECK_STATUS(brisvox_call_open(engine, NULL, &c), BRISVOX_OK);
  CHECK_STATUS(brisvox_speech_open(engine, NULL, &sp), BRISVOX_OK);
  uint32_t id = 0;
  CHECK_STATUS(brisvox_call_speak(c, "Goodbye for now.", &id), BRISVOX_OK);
  CHECK_STATUS(brisvox_speech_speak(sp, "Goodbye for now.", &id), BRISVOX_OK);
  CHECK_STATUS(brisvox_call_push_i16(c, pcm->samples, 1600, NULL), BRISVOX_OK);
  CHECK_STATUS(brisvox_engine_destroy(engine), BRISVOX_OK);
  brisvox_event ev[2];
  size_t n = 3;
  CHECK_STATUS(brisvox_call_speak(c, "Hello?", &id), BRISVOX_ERR_CLOSED);
  CHECK(contains(brisvox_call_message(c), "engine was destroyed"));
  CHECK_STATUS(brisvox_call_poll(c, ev, 2, sizeof ev[0], &n), BRISVOX_ERR_CLOSED);
  CHECK_STATUS(brisvox_call_push_i16(c, pcm->samples, 160, &n), BRISVOX_ERR_CLOSED);
  CHECK(n == 0);
  CHECK_STATUS(brisvox_speech_speak(sp, "Hello?", &id), BRISVOX_ERR_CLOSED);
  CHECK(contains(brisvox_speech_message(sp), "engine was destroyed"));
  CHECK_STATUS(brisvox_speech_poll(sp, ev, 2, sizeof ev[0], &n), BRISVOX_ERR_CLOSED);
  CHECK(strcmp(brisvox_speech_event_error(sp), "") == 0);
  CHECK_STATUS(brisvox_call_close(c), BRISVOX_OK);
  CHECK_STATUS(brisvox_speech_close(sp), BRISVOX_OK);
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
  CHECK(brisvox_api_version() == BRISVOX_C_API_VERSION && BRISVOX_C_API_VERSION >= 4);
  test_null_handles();
  test_missing_models(argv[1]);

  /* The VAD is the default (v6), the one `brisvox transcribe` runs. */
  char voice[4096];
  const char* slash = strrchr(argv[1], '/');
  const int dir_len = slash ? (int)(slash - argv[1]) : 1;
  const char* dir = slash ? argv[1] : ".";
  snprintf(voice, sizeof voice, "%.*s/../models/piper/en_US-joe-medium.onnx", dir_len, dir);
  brisvox_engine_options eo;
  brisvox_engine_options_init(&eo);
  eo.vad_workers = 1;
  eo.stt_model = "tiny.en";
  eo.voice = voice;
  eo.tts_workers = 1;
  eo.admission_control = 0; /* CI machines are shared: a busy one must not refuse the test's calls */
  brisvox_engine* engine = NULL;
  CHECK_STATUS(brisvox_engine_create(&eo, &engine), BRISVOX_OK);
  if (engine) {
    test_transcripts(engine, argv[1], &pcm, argv[2]);
    test_call_arguments(engine);
    test_model_rate(engine);
    test_call_speaks(engine);
    test_call_barge_in(engine, &pcm);
    test_speech(engine);
    test_speech_equals_say(engine, argv[2], voice);
    test_destroyed_engine(engine, &pcm); /* destroys it */
  }
  free(pcm.samples);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
