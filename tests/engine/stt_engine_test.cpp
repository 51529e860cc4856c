// Speech-to-text on the engine (the stt stage, Whisper tiny.en on real weights): each VAD segment's
// transcript equals what the single-stream WhisperTranscriber makes of the same audio, whether
// the stream runs alone or its segments share encoder runs and decoder steps with other streams'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/engine/offline.h"
#include "brisvox/formats/result_json.h"
#include "brisvox/models/stt/whisper_model.h"
#include "brisvox/models/stt/whisper_transcriber.h"
#include "engine/engine_test_util.h"
#include "stt/stt_test_util.h"
#include "test_paths.h"

namespace brisvox {
namespace {

EngineConfig stt_engine(int stt_max_batch = 8) {
  EngineConfig c;
  c.model("vad").path = test::bundled_model("silero_vad_v5.onnx");
  c.model("vad").num_workers = 1;
  c.models.push_back(ModelSpec::whisper(test::whisper_tiny_en()));
  c.model("stt").max_batch = stt_max_batch;
  return c;
}

struct Transcribed {
  Event event;
  Transcript transcript;
};

// Feeds `audio` as fast as the stream takes it and reads every transcript.
std::vector<Transcribed> transcripts_of(Stream& s, std::span<const float> audio) {
  std::vector<Transcribed> out;
  std::size_t pos = 0;
  bool flushed = false, ended = false;
  Event events[16];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!ended && std::chrono::steady_clock::now() < deadline) {
    if (pos < audio.size()) {
      pos += s.push(audio.subspan(pos, std::min(audio.size() - pos, s.writable())));
    } else if (!flushed) {
      s.flush();
      flushed = true;
    }
    const std::size_t n = s.poll(events);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_NE(events[i].type, EventType::kError) << s.last_error();
      if (events[i].type == EventType::kError) std::printf("error: %s\n", s.last_error().c_str());
      if (events[i].type == EventType::kTranscript) {
        std::optional<Transcript> t = s.read_transcript(events[i]);
        EXPECT_TRUE(t.has_value());
        if (t) out.push_back({events[i], *t});
      }
      ended |= events[i].type == EventType::kEndOfStream;
    }
    if (n == 0) s.wait_events(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(ended);
  return out;
}

// What the single-stream transcriber makes of the segment [start_s, end_s) of `audio`.
std::string reference_text(const WhisperModel& model, std::span<const float> audio, int rate, double start_s,
                           double end_s) {
  const auto begin = static_cast<std::size_t>(std::llround(start_s * rate));
  const auto end = std::min(static_cast<std::size_t>(std::llround(end_s * rate)), audio.size());
  return transcribe(model, audio.subspan(begin, end - begin), rate).text();
}

TEST(EngineStt, EachSegmentsTranscriptIsTheTranscribersOnTheSameAudio) {
  Engine engine(stt_engine());
  const WhisperModel model = WhisperModel::load(test::whisper_tiny_en());
  const auto& audio = test::sample_audio().samples;
  StreamConfig sc;
  sc.stt = SttOptions{};
  Stream s = engine.open_stream(sc);
  const auto got = transcripts_of(s, audio);
  ASSERT_EQ(got.size(), 5u) << "one transcript per utterance of the sample";
  for (const Transcribed& t : got) {
    EXPECT_FALSE(t.transcript.no_speech);
    EXPECT_FALSE(t.transcript.hit_token_limit);
    EXPECT_EQ(t.transcript.window_frames, 3000);
    EXPECT_FALSE(t.transcript.text.empty());
    EXPECT_EQ(t.transcript.text, reference_text(model, audio, 16000, t.event.start_s, t.event.end_s))
        << "segment at " << t.event.start_s << " s";
    EXPECT_FLOAT_EQ(t.event.probability, t.transcript.no_speech_prob);
  }
  for (std::size_t i = 1; i < got.size(); ++i) EXPECT_GT(got[i].event.start_s, got[i - 1].event.start_s) << "in order";
  const EngineStats st = engine.stats();
  const ModelStats& stt = st.model("stt");
  EXPECT_EQ(stt.family, ModelFamily::kWhisper);
  EXPECT_GT(stt.runs, 5u) << "encoder runs and decoder steps";
  EXPECT_EQ(stt.run_errors, 0u);
}

TEST(EngineStt, ConcurrentStreamsShareRunsAndEachGetsItsOwnTranscripts) {
  Engine engine(stt_engine());
  const WhisperModel model = WhisperModel::load(test::whisper_tiny_en());
  const auto& sample = test::sample_audio().samples;
  constexpr int kStreams = 4;
  // Each stream: a different stretch of the sample (one or two utterances).
  std::vector<std::vector<float>> inputs;
  for (int i = 0; i < kStreams; ++i) {
    const std::size_t begin = static_cast<std::size_t>(i) * 5 * 16000;
    inputs.emplace_back(sample.begin() + static_cast<std::ptrdiff_t>(begin),
                        sample.begin() + static_cast<std::ptrdiff_t>(std::min(begin + 9 * 16000, sample.size())));
  }
  StreamConfig sc;
  sc.stt = SttOptions{};
  std::vector<Stream> streams;
  for (int i = 0; i < kStreams; ++i) streams.push_back(engine.open_stream(sc));
  std::vector<std::vector<Transcribed>> results(kStreams);
  std::vector<std::thread> feeders;
  for (int i = 0; i < kStreams; ++i) {
    feeders.emplace_back([&, i] { results[i] = transcripts_of(streams[i], inputs[i]); });
  }
  for (auto& f : feeders) f.join();
  int segments = 0;
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_FALSE(results[i].empty()) << "stream " << i;
    for (const Transcribed& t : results[i]) {
      ++segments;
      EXPECT_EQ(t.transcript.text, reference_text(model, inputs[i], 16000, t.event.start_s, t.event.end_s))
          << "stream " << i << " segment at " << t.event.start_s << " s";
    }
  }
  const ModelStats stt = engine.stats().model("stt");
  std::uint64_t shared = 0;
  for (std::size_t b = 2; b < stt.batch_size_counts.size(); ++b) shared += stt.batch_size_counts[b];
  EXPECT_GT(shared, 0u) << "segments of different streams must share encoder runs or decoder steps";
  std::printf("%d segments of %d streams: %llu runs, %llu of them shared\n", segments, kStreams,
              static_cast<unsigned long long>(stt.runs), static_cast<unsigned long long>(shared));
}

TEST(EngineStt, TelephonyAudioIsTranscribedAt8kHz) {
  Engine engine(stt_engine());
  const WhisperModel model = WhisperModel::load(test::whisper_tiny_en());
  const Audio prompt = load_audio("/usr/share/asterisk/sounds/en/conf-onlyperson.wav");
  ASSERT_EQ(prompt.sample_rate_hz, 8000);
  StreamConfig sc;
  sc.sample_rate_hz = 8000;
  sc.stt = SttOptions{};
  Stream s = engine.open_stream(sc);
  const auto got = transcripts_of(s, prompt.samples);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].transcript.text, reference_text(model, prompt.samples, 8000, got[0].event.start_s, got[0].event.end_s));
  EXPECT_EQ(got[0].transcript.text, " You are currently the only person in this conference.");
}

TEST(EngineStt, TheOfflineRunnerWritesTheTranscriptionDocument) {
  Engine engine(stt_engine());
  OfflineOptions o;
  o.stream.stt = SttOptions{};
  const OfflineResult r = run_offline(engine, OfflineInput{test::sample_wav(), std::nullopt}, o);
  ASSERT_FALSE(r.error) << r.error->what();
  ASSERT_EQ(r.transcripts.size(), 5u);
  const std::string json = transcript_json(r);
  EXPECT_NE(json.find("\"segments\":[{\"start\":"), std::string::npos) << json;
  const std::string text = transcript_text(r);
  ASSERT_FALSE(text.empty());
  EXPECT_NE(text.front(), ' ');
  EXPECT_NE(text.back(), ' ');
  EXPECT_NE(json.find("\"text\":\"" + text + "\""), std::string::npos) << json;
}

TEST(EngineStt, BeamSearchAndTheFallbackGiveTheTranscribersResultAcrossStreams) {
  // faster-whisper's decoding (beam 5, the temperature fallback) on two streams at once: the
  // sample, and the sample played backwards (speech-like sounds Whisper is unsure of, so that some
  // segments fall back to sampling). Each segment must be what the single-stream transcriber makes
  // of its audio: the same beams, the same draws (each slot's generator is seeded alike), whatever
  // else shares the decoder steps.
  EngineConfig config = stt_engine(4);
  config.model("stt").options["max_width"] = "5";
  Engine engine(config);
  const WhisperModel model = WhisperModel::load(test::whisper_tiny_en());
  const auto& sample = test::sample_audio().samples;
  const std::size_t n = std::min<std::size_t>(sample.size(), 15 * 16000);  // about three utterances
  const std::vector<float> forward(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(n));
  const std::vector<float> backward(sample.rbegin(), sample.rbegin() + static_cast<std::ptrdiff_t>(n));
  StreamConfig sc;
  sc.stt = SttOptions{};
  use_faster_whisper_decoding(sc.stt->decode, sc.stt->fallback);
  // A stricter log-probability threshold than faster-whisper's -1.0, so that tiny.en, sure of
  // itself even backwards, falls back on some segments; two temperatures keep the test short.
  sc.stt->decode.log_prob_threshold = -0.5f;
  sc.stt->fallback.temperatures = {0.0f, 0.6f};
  WhisperTranscribeOptions reference = WhisperTranscribeOptions::faster_whisper();
  reference.decode.log_prob_threshold = -0.5f;
  reference.fallback.temperatures = {0.0f, 0.6f};
  std::vector<Transcribed> got[2];
  {
    Stream a = engine.open_stream(sc);
    Stream b = engine.open_stream(sc);
    std::thread other([&] { got[1] = transcripts_of(b, backward); });
    got[0] = transcripts_of(a, forward);
    other.join();
  }
  int fell_back = 0;
  for (int i = 0; i < 2; ++i) {
    const std::vector<float>& audio = i == 0 ? forward : backward;
    ASSERT_GE(got[i].size(), 2u) << (i == 0 ? "forward" : "backward");
    for (const Transcribed& t : got[i]) {
      const auto begin = static_cast<std::size_t>(std::llround(t.event.start_s * 16000));
      const auto end = std::min(static_cast<std::size_t>(std::llround(t.event.end_s * 16000)), audio.size());
      const WhisperTranscript want =
          transcribe(model, std::span<const float>(audio).subspan(begin, end - begin), 16000, reference);
      ASSERT_EQ(want.segments.size(), 1u);
      fell_back += want.segments[0].attempts.size() > 1;
      EXPECT_EQ(t.transcript.text, want.text()) << (i == 0 ? "forward" : "backward") << " at " << t.event.start_s;
      EXPECT_NEAR(t.transcript.avg_logprob, want.segments[0].avg_logprob, 1e-4);
    }
  }
  std::printf("segments decoded again at a higher temperature: %d\n", fell_back);
  EXPECT_GE(fell_back, 1) << "the backward sample should make Whisper unsure somewhere";
  EXPECT_EQ(engine.stats().model("stt").run_errors, 0u);
}

TEST(EngineStt, WordTimestampsAreTheTranscribersOnTheSameAudio) {
  // Two streams at once with word timestamps: each segment's alignment pass shares decoder steps
  // with the other stream's decoding and alignment. Its words must be what the single-stream
  // transcriber finds on the segment's audio, placed at the segment's start (within one encoder
  // position, 20 ms: batching may move a nearly tied path by one). The first word of a later
  // segment may differ: the pause rule looks back at the previous segment's words, which the
  // transcriber of one segment does not have.
  Engine engine(stt_engine(4));
  const WhisperModel model = WhisperModel::load(test::whisper_tiny_en());
  const auto& sample = test::sample_audio().samples;
  const std::size_t half = sample.size() / 2;
  const std::vector<float> inputs[2] = {std::vector<float>(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(half)),
                                        std::vector<float>(sample.begin() + static_cast<std::ptrdiff_t>(half), sample.end())};
  StreamConfig sc;
  sc.stt = SttOptions{};
  sc.stt->word_timestamps = true;
  std::vector<Transcribed> got[2];
  {
    Stream a = engine.open_stream(sc);
    Stream b = engine.open_stream(sc);
    std::thread other([&] { got[1] = transcripts_of(b, inputs[1]); });
    got[0] = transcripts_of(a, inputs[0]);
    other.join();
  }
  WhisperTranscribeOptions reference;
  reference.word_timestamps = true;
  std::size_t words = 0;
  for (int i = 0; i < 2; ++i) {
    ASSERT_GE(got[i].size(), 1u);
    for (std::size_t k = 0; k < got[i].size(); ++k) {
      const Transcribed& t = got[i][k];
      const auto begin = static_cast<std::size_t>(std::llround(t.event.start_s * 16000));
      const auto end = std::min(static_cast<std::size_t>(std::llround(t.event.end_s * 16000)), inputs[i].size());
      const WhisperTranscript want =
          transcribe(model, std::span<const float>(inputs[i]).subspan(begin, end - begin), 16000, reference);
      ASSERT_EQ(want.segments.size(), 1u);
      EXPECT_EQ(t.transcript.text, want.text());
      const auto& w = want.segments[0].words;
      ASSERT_EQ(t.transcript.words.size(), w.size()) << "stream " << i << " at " << t.event.start_s;
      std::string joined;
      for (std::size_t j = 0; j < w.size(); ++j) {
        const WhisperWord& x = t.transcript.words[j];
        joined += x.text;
        EXPECT_EQ(x.text, w[j].text);
        EXPECT_NEAR(x.end_s, t.event.start_s + w[j].end_s, 0.021) << x.text;
        if (j > 0 || k == 0) {
          EXPECT_NEAR(x.start_s, t.event.start_s + w[j].start_s, 0.021) << x.text;
        }
        EXPECT_LE(x.start_s, x.end_s);
        EXPECT_NEAR(x.probability, w[j].probability, 1e-3);
        ++words;
      }
      EXPECT_EQ(joined, t.transcript.text);
    }
  }
  EXPECT_GT(words, 20u);
  EXPECT_EQ(engine.stats().model("stt").run_errors, 0u);
}

TEST(EngineStt, PartialTranscriptsGrowWithinTheirSegmentAndThenTheTranscriptCloses) {
  // The sample, a partial every 500 ms of speech: each segment's partials
  // come after its speech start and before its transcript, start where it starts, and their agreed
  // text only grows (each a prefix of the next, never taken back).
  Engine engine(stt_engine(4));
  const auto& audio = test::sample_audio().samples;
  StreamConfig sc;
  sc.stt = SttOptions{};
  sc.stt->partial_interval_ms = 500;
  Stream s = engine.open_stream(sc);
  // Pushed in 100 ms chunks; once 0.7 s of a segment's speech went in without a partial (every
  // segment of the sample is longer: it is still open), the test waits (up to 30 s) for one before
  // pushing on, so that a busy machine makes the test slower, never the partials late for their
  // segment (a partial that comes after its segment's end is dropped, as it should be).
  struct Seen {
    EventType type;
    Event event;
    Transcript transcript;
  };
  std::vector<Seen> seen;
  std::size_t pos = 0;
  bool flushed = false, ended = false, in_segment = false;
  std::size_t since_partial = 0;  // samples pushed in the open segment since its last partial
  auto waiting_since = std::chrono::steady_clock::time_point{};
  Event events[16];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (!ended && std::chrono::steady_clock::now() < deadline) {
    const bool wait = in_segment && since_partial >= 11200 &&
                      (waiting_since == decltype(waiting_since){} ||
                       std::chrono::steady_clock::now() - waiting_since < std::chrono::seconds(30));
    if (wait && waiting_since == decltype(waiting_since){}) waiting_since = std::chrono::steady_clock::now();
    if (!wait && pos < audio.size()) {
      const std::size_t n = s.push(std::span<const float>(audio).subspan(pos, std::min<std::size_t>(audio.size() - pos, 1600)));
      pos += n;
      if (in_segment) since_partial += n;
    } else if (!wait && !flushed) {
      s.flush();
      flushed = true;
    }
    const std::size_t n = s.poll(events);
    for (std::size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      ASSERT_NE(e.type, EventType::kError) << s.last_error();
      if (e.type == EventType::kSpeechStart || e.type == EventType::kSpeechEnd || e.type == EventType::kTranscriptPartial) {
        in_segment = e.type != EventType::kSpeechEnd;
        since_partial = 0;
        waiting_since = {};
      }
      if (e.type == EventType::kSpeechStart || e.type == EventType::kTranscript ||
          e.type == EventType::kTranscriptPartial) {
        std::optional<Transcript> t = s.read_transcript(e);
        seen.push_back({e.type, e, t ? *t : Transcript{}});
      }
      ended |= e.type == EventType::kEndOfStream;
    }
    if (n == 0) s.wait_events(std::chrono::milliseconds(wait ? 5 : 1));
  }
  ASSERT_TRUE(ended);
  int partials = 0, segments_with_partials = 0;
  double start = -1;          // the latest segment's start
  bool closed = false;        // its transcript came
  std::string agreed;
  int of_segment = 0;
  for (const Seen& x : seen) {
    if (x.type == EventType::kSpeechStart) {
      start = x.event.start_s;
      closed = false;
      agreed.clear();
      of_segment = 0;
    } else if (x.type == EventType::kTranscriptPartial) {
      EXPECT_DOUBLE_EQ(x.event.start_s, start) << "a partial of the open segment";
      EXPECT_FALSE(closed) << "a partial after its segment's transcript at " << x.event.start_s;
      EXPECT_GT(x.event.end_s, start);
      EXPECT_EQ(x.transcript.text.substr(0, agreed.size()), agreed) << "agreed text taken back";
      EXPECT_FALSE((x.transcript.text + x.transcript.unstable).empty());
      agreed = x.transcript.text;
      ++partials;
      segments_with_partials += of_segment++ == 0;
    } else if (x.event.start_s == start) {
      closed = true;  // (a transcript may also come after the next segment's start)
    }
  }
  std::printf("%d partial transcripts in %d segments\n", partials, segments_with_partials);
  EXPECT_GE(segments_with_partials, 4);
  EXPECT_EQ(engine.stats().model("stt").run_errors, 0u);
}

TEST(EngineStt, StreamsWaitingForTheOneRequestSlotAllGetTheirTranscripts) {
  // One request slot (max_batch 1, one worker) for four streams of three segments each: streams
  // wait for the slot over and over, each slot given back must wake whoever still waits (a stream
  // woken for a slot another took, or no longer wanting one, must not leave the others asleep).
  EngineConfig config = stt_engine(1);
  Engine engine(config);
  ASSERT_EQ(engine.config().model("stt").max_pending, 1);
  const auto& all = test::sample_audio().samples;
  const std::vector<float> sample(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(all.size(), 15 * 16000)));
  StreamConfig sc;
  sc.stt = SttOptions{};
  constexpr int kStreams = 4;
  std::vector<std::vector<Transcribed>> got(kStreams);
  {
    std::vector<Stream> streams;
    for (int i = 0; i < kStreams; ++i) streams.push_back(engine.open_stream(sc));
    std::vector<std::thread> threads;
    for (int i = 0; i < kStreams; ++i) {
      threads.emplace_back([&, i] { got[static_cast<std::size_t>(i)] = transcripts_of(streams[static_cast<std::size_t>(i)], sample); });
    }
    for (auto& t : threads) t.join();
  }
  for (int i = 0; i < kStreams; ++i) EXPECT_GE(got[static_cast<std::size_t>(i)].size(), 2u) << "stream " << i;
  for (int i = 1; i < kStreams; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)].size(), got[0].size()) << "stream " << i;
}

TEST(EngineStt, ABeamWiderThanTheModelAllowsIsRefusedAtOpen) {
  Engine engine(stt_engine());
  StreamConfig sc;
  sc.stt = SttOptions{};
  sc.stt->decode.beam_size = 5;
  try {
    engine.open_stream(sc);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("max_width"), std::string::npos) << e.what();
  }
  for (const char* bad : {"0", "17", "2.5", "five"}) {
    EngineConfig c = stt_engine();
    c.model("stt").options["max_width"] = bad;
    try {
      Engine e(c);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("max_width"), std::string::npos) << e.what();
    }
  }
}

TEST(EngineStt, ADecoderSizedForBeamsKeepsItsLanesNearGreedys) {
  ModelSpec greedy = ModelSpec::whisper();
  greedy.size_whisper_decoder(1, 0);
  EXPECT_TRUE(greedy.options.empty());
  EXPECT_EQ(greedy.max_batch, 0);  // the family's
  ModelSpec beams = ModelSpec::whisper();
  beams.size_whisper_decoder(5, 446);
  EXPECT_EQ(beams.options.at("max_width"), "5");
  EXPECT_EQ(beams.options.at("prompt_tokens"), "446");
  EXPECT_EQ(beams.max_batch, 2);  // 8 / 5, at least 2: 10 lanes a worker against greedy's 8
  ModelSpec three = ModelSpec::whisper();
  three.size_whisper_decoder(3, 0);
  EXPECT_EQ(three.max_batch, 2);
  ModelSpec two = ModelSpec::whisper();
  two.size_whisper_decoder(2, 0);
  EXPECT_EQ(two.max_batch, 4);
  for (const auto& [width, prompt] : {std::pair{0, 0}, {17, 0}, {1, -1}, {1, 447}}) {
    ModelSpec bad = ModelSpec::whisper();
    EXPECT_THROW(bad.size_whisper_decoder(width, prompt), Error) << width << " " << prompt;
  }
}

TEST(EngineStt, ABadSttStageIsRefusedAtOpen) {
  EngineConfig no_stt;
  no_stt.model("vad").path = test::bundled_model("silero_vad_v5.onnx");
  Engine plain(no_stt);
  StreamConfig sc;
  sc.stt = SttOptions{};
  try {
    plain.open_stream(sc);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("no Whisper model named 'stt'"), std::string::npos) << e.what();
  }
  Engine engine(stt_engine());
  sc.stt->decode.language = "de";  // tiny.en knows English only
  EXPECT_THROW(engine.open_stream(sc), Error);
  try {
    EngineConfig missing = stt_engine();
    missing.model("stt").path = "/nonexistent/whisper";
    Engine e(missing);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/whisper"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace brisvox
