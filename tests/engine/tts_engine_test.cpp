// Text-to-speech on the engine (Engine::open_speech, speech.h) with the real Piper voice: the audio
// equals the model layer's, concurrent utterances interleave sentence by sentence, cancel stops
// within one sentence, a slow reader loses nothing, bad input is refused at speak() with nothing
// queued, and espeak-ng dying fails that utterance only.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/error.h"
#include "brisvox/models/tts/piper_tts.h"
#include "test_paths.h"

namespace brisvox {
namespace {

using namespace std::chrono_literals;

std::string voice_path() { return test::third_party("models/piper/en_US-joe-medium.onnx"); }

const char* kThreeSentences = "Sure, I can help with that. Your table is booked. See you on Monday!";

EngineConfig tts_engine_config(int workers, int max_pending = 0) {
  EngineConfig ec;
  ec.models = {ModelSpec::piper_tts(voice_path())};
  ec.models[0].num_workers = workers;
  ec.models[0].max_pending = max_pending;
  return ec;
}

// One engine with one TTS worker for the tests that need nothing special (loading the voice takes
// about a second).
Engine& shared_engine() {
  static Engine engine(tts_engine_config(1));
  return engine;
}

SpeechConfig deterministic() {
  SpeechConfig c;
  c.voice_options = {{"noise_scale", 0.0}, {"noise_w_scale", 0.0}};
  return c;
}

// The model layer's audio for `text`, chunk by chunk (with fast_start, SpeechConfig's default,
// the first sentence's first clause is a chunk of its own).
std::vector<std::vector<float>> reference_audio(const std::string& text, int rate_hz = 0, bool fast_start = true) {
  static PiperTts tts([] {
    PiperTtsConfig c;
    c.model_path = voice_path();
    return c;
  }());
  PiperRequest r;
  r.text = text;
  r.noise_scale = 0.0f;
  r.noise_w_scale = 0.0f;
  r.output_rate_hz = rate_hz;
  r.fast_start = fast_start;
  PiperSynthesis s = tts.start(r);
  std::vector<std::vector<float>> out;
  PiperChunk c;
  while (tts.next(s, c)) out.push_back(c.samples);
  return out;
}

// What a reader saw of one speech session.
struct Heard {
  std::vector<Event> events;
  std::map<std::uint32_t, std::vector<std::vector<float>>> audio;  // utterance -> sentence -> samples
  std::map<std::uint32_t, Event> terminal;                          // kTtsEnd / kTtsCancelled / kError
  std::size_t audio_events = 0;
  std::size_t unreadable = 0;  // kTtsAudio whose payload could not be read

  void take(Speech& s, const Event& e) {
    events.push_back(e);
    if (e.type == EventType::kTtsAudio) {
      ++audio_events;
      std::vector<float> piece = s.read_audio_payload(e);
      if (piece.size() * sizeof(float) != e.payload_bytes) ++unreadable;
      auto& sentences = audio[e.speech.utterance_id];
      if (sentences.size() <= e.speech.sentence_index) sentences.resize(e.speech.sentence_index + 1u);
      auto& dst = sentences[e.speech.sentence_index];
      dst.insert(dst.end(), piece.begin(), piece.end());
    } else if (e.type == EventType::kTtsEnd || e.type == EventType::kTtsCancelled || e.type == EventType::kError) {
      EXPECT_EQ(terminal.count(e.speech.utterance_id), 0u) << "two terminal events for one utterance";
      terminal[e.speech.utterance_id] = e;
    }
  }
  bool ended(std::uint32_t utterance) const { return terminal.count(utterance) > 0; }
};

// Polls until `done(heard)` or the timeout; `per_event` runs after each event (a slow reader).
template <typename Done, typename PerEvent>
bool listen(Speech& s, Heard& h, Done&& done, PerEvent&& per_event, std::chrono::seconds timeout = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Event buf[8];
  while (!done(h)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    s.wait_events(20ms);
    for (std::size_t i = 0, n = s.poll(buf); i < n; ++i) {
      h.take(s, buf[i]);
      per_event(h);
    }
  }
  return true;
}
template <typename Done>
bool listen(Speech& s, Heard& h, Done&& done, std::chrono::seconds timeout = 60s) {
  return listen(s, h, std::forward<Done>(done), [](Heard&) {}, timeout);
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0.0f;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

void expect_same_audio(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << "sentence " << i;
    // The same model file, session settings and thread count as the model layer: the same floats.
    EXPECT_LE(max_abs_diff(got[i], want[i]), 1e-6f) << "sentence " << i;
  }
}

template <typename F>
void expect_error(F&& f, ErrorCode code, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// The espeak-ng processes this test process started (children whose command is espeak-ng).
std::vector<pid_t> espeak_children() {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string comm = line.substr(open + 1, close - open - 1);
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (comm == "espeak-ng" && ppid == ::getpid()) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// --- the audio ------------------------------------------------------------------------------------

TEST(TtsEngine, AudioEqualsTheModelLayerSentenceBySentence) {
  Speech s = shared_engine().open_speech(deterministic());
  EXPECT_EQ(s.sample_rate_hz(), 22050);
  const std::uint32_t id = s.speak(kThreeSentences);
  EXPECT_EQ(id, 1u);
  Heard h;
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(id); }));
  ASSERT_EQ(h.terminal[id].type, EventType::kTtsEnd) << s.last_error();
  EXPECT_EQ(h.unreadable, 0u);
  const auto want = reference_audio(kThreeSentences);
  expect_same_audio(h.audio[id], want);

  // The events describe the audio: consecutive pieces, chunk indices and counts (the first
  // sentence's first clause, "Sure,", is a chunk of its own), the length.
  std::size_t total = 0;
  double at_s = 0.0;
  for (const Event& e : h.events) {
    if (e.type != EventType::kTtsAudio) continue;
    EXPECT_EQ(e.payload, PayloadStatus::kAttached);
    EXPECT_EQ(e.speech.utterance_id, id);
    EXPECT_EQ(e.speech.sentence_count, 4u);
    EXPECT_NEAR(e.start_s, at_s, 1e-9);
    at_s = e.end_s;
    total += e.payload_bytes / sizeof(float);
  }
  std::size_t want_total = 0;
  for (const auto& w : want) want_total += w.size();
  EXPECT_EQ(total, want_total);
  const Event& end = h.terminal[id];
  EXPECT_EQ(end.speech.sentence_index, 4u);
  EXPECT_EQ(end.speech.sentence_count, 4u);
  EXPECT_NEAR(end.end_s, static_cast<double>(want_total) / 22050.0, 1e-9);
}

TEST(TtsEngine, WithoutFastStartEveryChunkIsASentence) {
  SpeechConfig c = deterministic();
  c.fast_start = false;
  Speech s = shared_engine().open_speech(c);
  const std::uint32_t id = s.speak(kThreeSentences);
  Heard h;
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(id); }));
  ASSERT_EQ(h.terminal[id].type, EventType::kTtsEnd) << s.last_error();
  expect_same_audio(h.audio[id], reference_audio(kThreeSentences, 0, false));
  EXPECT_EQ(h.terminal[id].speech.sentence_count, 3u);
}

TEST(TtsEngine, ResampledAudioEqualsTheModelLayersAtThatRate) {
  SpeechConfig c = deterministic();
  c.sample_rate_hz = 16000;
  Speech s = shared_engine().open_speech(c);
  EXPECT_EQ(s.sample_rate_hz(), 16000);
  const std::string text = "Your appointment is confirmed for Monday at two in the afternoon.";
  const std::uint32_t id = s.speak(text);
  Heard h;
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(id); }));
  ASSERT_EQ(h.terminal[id].type, EventType::kTtsEnd) << s.last_error();
  expect_same_audio(h.audio[id], reference_audio(text, 16000));
}

TEST(TtsEngine, UtterancesOfOneSessionComeInOrder) {
  Speech s = shared_engine().open_speech(deterministic());
  const std::uint32_t a = s.speak("First reply.");
  const std::uint32_t b = s.speak("...");  // nothing to say: an end without audio
  const std::uint32_t c = s.speak("Second reply. It has two sentences.");
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(b, 2u);
  EXPECT_EQ(c, 3u);
  Heard h;
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(c); }));
  std::uint32_t last = 0;
  for (const Event& e : h.events) {
    EXPECT_GE(e.speech.utterance_id, last);
    last = e.speech.utterance_id;
  }
  EXPECT_EQ(h.terminal[a].type, EventType::kTtsEnd);
  EXPECT_EQ(h.terminal[b].type, EventType::kTtsEnd);
  EXPECT_EQ(h.terminal[b].speech.sentence_count, 0u);
  EXPECT_EQ(h.audio.count(b), 0u);
  EXPECT_EQ(h.terminal[c].speech.sentence_count, 2u);
  expect_same_audio(h.audio[c], reference_audio("Second reply. It has two sentences."));
}

// --- scheduling ---------------------------------------------------------------------------------------

TEST(TtsEngine, ConcurrentUtterancesInterleaveSentenceBySentence) {
  // One worker, three sessions speaking at once: each session's first sentence is delivered before
  // any session's second one (a whole reply at a time would give A A A B B B C C C).
  Engine engine(tts_engine_config(1));
  std::mutex mu;
  std::vector<int> deliveries;  // the session of each delivery, in order (on_events: one per step)
  std::vector<Speech> sessions;
  for (int i = 0; i < 3; ++i) {
    SpeechConfig c = deterministic();
    c.on_events = [&mu, &deliveries, i] {
      std::lock_guard lock(mu);
      deliveries.push_back(i);
    };
    sessions.push_back(engine.open_speech(c));
  }
  for (auto& s : sessions) s.speak("One. Two. Three.");
  std::vector<Heard> heard(3);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  Event buf[8];
  auto all_ended = [&] {
    for (auto& h : heard) {
      if (!h.ended(1)) return false;
    }
    return true;
  };
  while (!all_ended() && std::chrono::steady_clock::now() < deadline) {
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t k = 0, n = sessions[i].poll(buf); k < n; ++k) heard[i].take(sessions[i], buf[k]);
    }
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(all_ended());
  std::lock_guard lock(mu);
  ASSERT_GE(deliveries.size(), 9u);
  std::vector<int> first(deliveries.begin(), deliveries.begin() + 3);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<int>{0, 1, 2})) << "the first three sentences delivered were not one per session";
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(heard[static_cast<std::size_t>(i)].terminal[1].type, EventType::kTtsEnd);
    expect_same_audio(heard[static_cast<std::size_t>(i)].audio[1], reference_audio("One. Two. Three."));
  }
  const ModelStats st = engine.stats().model("tts");
  EXPECT_EQ(st.family, ModelFamily::kPiperTts);
  EXPECT_EQ(st.runs, 9u);  // one sentence per run
  EXPECT_EQ(st.items, 9u);
  EXPECT_EQ(st.run_errors, 0u);
  EXPECT_EQ(st.max_batch, 1);
}

TEST(TtsEngine, AFirstSentenceGoesBeforeOtherRepliesLaterSentences) {
  // One worker, three sessions in the middle of long replies (their later sentences queued one
  // behind another), then a fourth session speaks: its first sentence is synthesised after the
  // run in flight, not behind the three queued continuations (served in turn, it would wait for
  // all three). The continuations may wait: each client has the audio made so far to play
  // (about 3 s here) less twice its next run (about 0.4 s), and three runs take about 0.7 s.
  Engine engine(tts_engine_config(1));
  std::mutex mu;
  std::vector<int> deliveries;  // the session of each delivery in order; -1: the fourth's speak()
  std::vector<Speech> sessions;
  for (int i = 0; i < 4; ++i) {
    SpeechConfig c = deterministic();
    c.on_events = [&mu, &deliveries, i] {
      std::lock_guard lock(mu);
      deliveries.push_back(i);
    };
    sessions.push_back(engine.open_speech(c));
  }
  const std::string reply =
      "The quick brown fox jumps over the lazy dog near the bank of the river. "
      "A second long sentence follows it, so that the reply takes a while to say. "
      "Then a third one comes, and it is quite long as well, to keep the worker busy. "
      "And a fourth sentence closes the reply.";
  for (int i = 0; i < 3; ++i) sessions[static_cast<std::size_t>(i)].speak(reply);
  std::vector<Heard> heard(4);
  Event buf[8];
  auto drain_all = [&] {
    for (std::size_t i = 0; i < 4; ++i) {
      for (std::size_t k = 0, n = sessions[i].poll(buf); k < n; ++k) heard[i].take(sessions[i], buf[k]);
    }
  };
  auto first_sentences_heard = [&] {
    for (std::size_t i = 0; i < 3; ++i) {
      if (heard[i].audio.empty()) return false;
    }
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!first_sentences_heard() && std::chrono::steady_clock::now() < deadline) {
    drain_all();
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(first_sentences_heard());
  // The mark goes in once speak() has queued the first sentence (it phonemizes first, meanwhile
  // the worker may finish a run and start the next continuation: that one is then in flight).
  sessions[3].speak("Hello there.");
  {
    std::lock_guard lock(mu);
    deliveries.push_back(-1);
  }
  while (!(heard[3].ended(1) && heard[0].ended(1) && heard[1].ended(1) && heard[2].ended(1)) &&
         std::chrono::steady_clock::now() < deadline) {
    drain_all();
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(heard[3].ended(1));
  std::lock_guard lock(mu);
  const auto mark = std::find(deliveries.begin(), deliveries.end(), -1);
  const auto fourth = std::find(deliveries.begin(), deliveries.end(), 3);
  ASSERT_NE(fourth, deliveries.end());
  // (Delivered before the mark was written: nothing ran before it.)
  const auto others_before =
      fourth < mark ? 0 : std::count_if(mark + 1, fourth, [](int i) { return i >= 0 && i < 3; });
  EXPECT_LE(others_before, 1) << "continuations ran before the new reply's first sentence (at most the run in flight may)";
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(heard[static_cast<std::size_t>(i)].terminal[1].type, EventType::kTtsEnd);
    EXPECT_EQ(heard[static_cast<std::size_t>(i)].audio[1].size(), 4u) << "every sentence still delivered";
  }
}

// The children started since `before` was taken (other engines of this process have theirs).
std::vector<pid_t> new_espeak_children(const std::vector<pid_t>& before) {
  std::vector<pid_t> out;
  for (pid_t p : espeak_children()) {
    if (std::find(before.begin(), before.end(), p) == before.end()) out.push_back(p);
  }
  return out;
}

TEST(TtsEngine, SessionsSpreadOverTheWorkers) {
  const auto before = espeak_children();
  Engine engine(tts_engine_config(2));
  EXPECT_EQ(engine.num_workers(), 2);
  Speech a = engine.open_speech(deterministic());
  Speech b = engine.open_speech(deterministic());
  a.speak("Left worker.");
  b.speak("Right worker.");
  Heard ha, hb;
  ASSERT_TRUE(listen(a, ha, [](const Heard& x) { return x.ended(1); }));
  ASSERT_TRUE(listen(b, hb, [](const Heard& x) { return x.ended(1); }));
  EXPECT_EQ(ha.terminal[1].type, EventType::kTtsEnd);
  EXPECT_EQ(hb.terminal[1].type, EventType::kTtsEnd);
  // Two espeak-ng children per worker, each worker with its own phonemizer.
  EXPECT_EQ(new_espeak_children(before).size(), 4u);
}

TEST(TtsEngine, AWorkerOutOfWorkTakesSessionsFromABusyOneBetweenSentences) {
  // Sessions a and c open on worker 0, b on worker 1 (least loaded at open); only a and c speak.
  // Worker 1, out of work, takes a waiting session from worker 0 between its sentences, and the
  // audio is the same as if it had stayed (a session's synthesis is all in the session).
  Engine engine(tts_engine_config(2));
  Speech a = engine.open_speech(deterministic());
  Speech b = engine.open_speech(deterministic());
  Speech c = engine.open_speech(deterministic());
  const std::string text = "One. Two. Three. Four. Five. Six.";
  a.speak(text);
  c.speak(text);
  Heard ha, hc;
  ASSERT_TRUE(listen(a, ha, [](const Heard& x) { return x.ended(1); }));
  ASSERT_TRUE(listen(c, hc, [](const Heard& x) { return x.ended(1); }));
  const auto want = reference_audio(text);
  expect_same_audio(ha.audio[1], want);
  expect_same_audio(hc.audio[1], want);
  const ModelStats st = engine.stats().model("tts");
  EXPECT_EQ(st.runs, 2 * want.size());
  EXPECT_GT(st.jobs_moved, 0u) << "worker 1 idled while worker 0 had a session waiting";
  // b, untouched, still works wherever it is now.
  b.speak("Still here.");
  Heard hb;
  ASSERT_TRUE(listen(b, hb, [](const Heard& x) { return x.ended(1); }));
  EXPECT_EQ(hb.terminal[1].type, EventType::kTtsEnd);
}

// --- cancel ---------------------------------------------------------------------------------------------

TEST(TtsEngine, CancelStopsWithinOneSentenceAndTheSessionGoesOn) {
  Engine engine(tts_engine_config(1));
  Speech s = engine.open_speech(deterministic());
  const std::string six = "One sentence here. Two sentences here. Three sentences here. Four sentences here. Five "
                          "sentences here. Six sentences here.";
  const std::uint32_t id = s.speak(six);
  Heard h;
  ASSERT_TRUE(listen(s, h, [](const Heard& x) { return x.audio_events > 0; }));
  const std::uint64_t runs_at_cancel = engine.stats().model("tts").runs;
  EXPECT_EQ(s.cancel(), id);
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(id); }));
  const Event& end = h.terminal[id];
  ASSERT_EQ(end.type, EventType::kTtsCancelled);
  // At most the sentence in its model run when cancel() came was synthesised after it, and it was
  // not delivered.
  EXPECT_LE(engine.stats().model("tts").runs, runs_at_cancel + 1);
  EXPECT_EQ(end.speech.sentence_count, 6u);
  EXPECT_LT(h.audio[id].size(), 3u);
  EXPECT_EQ(end.speech.sentence_index, h.audio[id].size());
  double delivered_s = 0;
  for (const auto& sentence : h.audio[id]) delivered_s += static_cast<double>(sentence.size()) / 22050.0;
  EXPECT_NEAR(end.end_s, delivered_s, 1e-9);
  // No audio of the cancelled utterance follows its kTtsCancelled.
  bool after = false;
  for (const Event& e : h.events) {
    if (after) {
      EXPECT_NE(e.type, EventType::kTtsAudio);
    }
    if (e.type == EventType::kTtsCancelled) after = true;
  }
  // The worker is free and the session speaks on.
  const std::uint32_t next = s.speak("Back again.");
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(next); }));
  EXPECT_EQ(h.terminal[next].type, EventType::kTtsEnd);
  expect_same_audio(h.audio[next], reference_audio("Back again."));
}

TEST(TtsEngine, CancelDropsQueuedUtterancesEachWithItsEvent) {
  Speech s = shared_engine().open_speech(deterministic());
  const std::uint32_t a = s.speak("The first one is long enough to be running. It has two sentences.");
  const std::uint32_t b = s.speak("Queued.");
  const std::uint32_t c = s.speak("Also queued.");
  EXPECT_EQ(s.cancel(), c);
  Heard h;
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(a) && x.ended(b) && x.ended(c); }));
  EXPECT_EQ(h.terminal[b].type, EventType::kTtsCancelled);
  EXPECT_EQ(h.terminal[c].type, EventType::kTtsCancelled);
  EXPECT_EQ(h.audio.count(b) + h.audio.count(c), 0u);
  // The first may have delivered its first sentence before the cancel reached the worker.
  EXPECT_EQ(h.terminal[a].type, EventType::kTtsCancelled);
  EXPECT_EQ(s.cancel(), c);  // nothing new: cancelling again changes nothing
}

// --- flow control ---------------------------------------------------------------------------------------

TEST(TtsEngine, ASlowReaderLosesNothingAndHoldsTheSynthesisBack) {
  Engine engine(tts_engine_config(1));
  SpeechConfig c = deterministic();
  c.payload_buffer_bytes = 16384;  // 2048-sample pieces, a few of them in the channel at once
  Speech s = engine.open_speech(c);
  const std::uint32_t id = s.speak(kThreeSentences);
  Heard h;
  // Stop reading after the first piece for a while: the synthesis must wait, not drop audio.
  ASSERT_TRUE(listen(s, h, [](const Heard& x) { return x.audio_events > 0; }));
  const std::uint64_t runs_before = engine.stats().model("tts").runs;
  std::this_thread::sleep_for(700ms);
  const std::uint64_t runs_after = engine.stats().model("tts").runs;
  EXPECT_LE(runs_after, runs_before + 1) << "the worker synthesised on while the reader did not read";
  // Then read slowly, one event at a time.
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(id); },
                     [](Heard&) { std::this_thread::sleep_for(std::chrono::microseconds(300)); }));
  ASSERT_EQ(h.terminal[id].type, EventType::kTtsEnd) << s.last_error();
  EXPECT_EQ(h.unreadable, 0u);
  EXPECT_EQ(s.payloads_skipped(), 0u);
  EXPECT_GT(h.audio_events, 20u);  // pieces of 2048 samples
  expect_same_audio(h.audio[id], reference_audio(kThreeSentences));
}

TEST(TtsEngine, AReaderThatSkipsPayloadsFreesTheChannelToo) {
  SpeechConfig c = deterministic();
  c.payload_buffer_bytes = 16384;
  Speech s = shared_engine().open_speech(c);
  // The channel holds two 8 KiB pieces: reading every second piece skips the one before it, and
  // the skipped one's room must wake the synthesis as a read does.
  const std::uint32_t id = s.speak("Every second piece is read. Then the next one.");
  Heard h;
  std::vector<Event> audio_events;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  Event buf[8];
  bool ended = false;
  while (!ended && std::chrono::steady_clock::now() < deadline) {
    s.wait_events(20ms);
    for (std::size_t i = 0, n = s.poll(buf); i < n; ++i) {
      if (buf[i].type == EventType::kTtsAudio) audio_events.push_back(buf[i]);
      if (buf[i].type == EventType::kTtsEnd) ended = true;
      if (audio_events.size() % 2 == 0 && buf[i].type == EventType::kTtsAudio) {
        EXPECT_FALSE(s.read_audio_payload(buf[i]).empty());
      }
    }
  }
  ASSERT_TRUE(ended);
  EXPECT_GE(s.payloads_skipped(), audio_events.size() / 2 - 1);
  (void)id;
}

// --- bad input --------------------------------------------------------------------------------------------

TEST(TtsEngine, BadTextIsRefusedAtSpeakWithNothingQueued) {
  Speech s = shared_engine().open_speech(deterministic());
  expect_error([&] { s.speak(""); }, ErrorCode::kInvalidArgument, "empty");
  expect_error([&] { s.speak(" \n\t "); }, ErrorCode::kInvalidArgument, "empty");
  expect_error([&] { s.speak(std::string(s.max_text_bytes() + 1, 'a')); }, ErrorCode::kInvalidArgument,
               "limit of 20000 bytes");
  expect_error([&] { s.speak("bad \xff byte"); }, ErrorCode::kInvalidArgument, "not valid UTF-8");
  expect_error([&] { s.speak("Hello\x01world."); }, ErrorCode::kInvalidArgument, "U+0001");
  expect_error([&] { s.speak(std::string("Nul\0byte.", 9)); }, ErrorCode::kInvalidArgument, "U+0000");
  // Nothing was queued: the first good text is utterance 1, and it is all that is heard.
  const std::uint32_t id = s.speak("Fine.");
  EXPECT_EQ(id, 1u);
  Heard h;
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(id); }));
  EXPECT_EQ(h.terminal.size(), 1u);
  EXPECT_EQ(h.terminal[id].type, EventType::kTtsEnd);
}

TEST(TtsEngine, BadSessionsAreRefusedAtOpen) {
  Engine& engine = shared_engine();
  SpeechConfig c;
  c.model = "no-such-voice";
  expect_error([&] { engine.open_speech(c); }, ErrorCode::kInvalidArgument, "tts (piper_tts)");
  c = SpeechConfig{};
  c.sample_rate_hz = 44100;
  expect_error([&] { engine.open_speech(c); }, ErrorCode::kInvalidArgument, "44100");
  c = SpeechConfig{};
  c.voice_options["length_scale"] = 0.0;
  expect_error([&] { engine.open_speech(c); }, ErrorCode::kInvalidArgument, "length_scale");
  c = SpeechConfig{};
  c.payload_buffer_bytes = 100;
  expect_error([&] { engine.open_speech(c); }, ErrorCode::kInvalidArgument, "payload_buffer_bytes");
  c = SpeechConfig{};
  c.voice_options["speaker_id"] = 3;
  expect_error([&] { engine.open_speech(c); }, ErrorCode::kInvalidArgument, "speaker_id 3");
  c = SpeechConfig{};
  c.voice_options["pitch"] = 1.0;
  expect_error([&] { engine.open_speech(c); }, ErrorCode::kInvalidArgument, "no setting 'pitch'");
  c = SpeechConfig{};
  c.voice_options["speaker_id"] = 0.5;
  expect_error([&] { engine.open_speech(c); }, ErrorCode::kInvalidArgument, "whole number");

  Engine vad_only(EngineConfig{});
  expect_error([&] { vad_only.open_speech(SpeechConfig{}); }, ErrorCode::kInvalidArgument, "no Piper voice");
  expect_error([] { ModelSpec::piper_tts("no-such-voice-name").resolved(1, 2000); }, ErrorCode::kIo, "en_US-joe-medium");
  // A sentence takes seconds: Piper's deadline is at least 20 s unless the voice's spec says otherwise.
  const ModelSpec voice = tts_engine_config(1).models[0];
  EXPECT_EQ(voice.resolved(1, 2000).run_timeout_ms, 20000);
  EXPECT_EQ(voice.resolved(1, 0).run_timeout_ms, 0) << "an engine without deadlines";
  EngineConfig batched = tts_engine_config(1);
  batched.models[0].max_batch = 2;
  expect_error([&] { batched.validate(); }, ErrorCode::kInvalidArgument, "max_batch");
}

TEST(TtsEngine, QueueAndSessionLimitsRefuseWithOverloaded) {
  Engine engine(tts_engine_config(1, /*max_pending=*/2));
  SpeechConfig c = deterministic();
  c.max_queued = 2;
  Speech a = engine.open_speech(c);
  Speech b = engine.open_speech(c);
  expect_error([&] { engine.open_speech(c); }, ErrorCode::kOverloaded, "max_pending");
  // max_queued utterances may wait (besides the one being spoken); one more is refused.
  a.speak("One. Two. Three. Four.");
  std::this_thread::sleep_for(50ms);  // let the worker take it (it stays the current one for a while)
  a.speak("Waiting one.");
  a.speak("Waiting two.");
  int refused = 0;
  for (int i = 0; i < 2; ++i) {
    try {
      a.speak("Too many.");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kOverloaded);
      ++refused;
    }
  }
  EXPECT_GE(refused, 1);
  // Closing a session mid-synthesis frees it: a new one can be opened.
  a.close();
  bool opened = false;
  for (int i = 0; i < 500 && !opened; ++i) {
    try {
      Speech d = engine.open_speech(c);
      opened = true;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kOverloaded);
      std::this_thread::sleep_for(10ms);
    }
  }
  EXPECT_TRUE(opened);
  // And the worker serves the other session.
  const std::uint32_t id = b.speak("Still here.");
  Heard h;
  ASSERT_TRUE(listen(b, h, [&](const Heard& x) { return x.ended(id); }));
  EXPECT_EQ(h.terminal[id].type, EventType::kTtsEnd);
}

TEST(TtsEngine, ASentenceLongerThanOneRunFailsItsUtteranceOnly) {
  Speech s = shared_engine().open_speech(deterministic());
  // Raw phonemes (Piper's [[ ]]) are one sentence however long: 1500 of them are over 3000 ids.
  std::string endless = "Fine start. [[";
  for (int i = 0; i < 1500; ++i) endless += "a";
  endless += "]]";
  const std::uint32_t bad = s.speak(endless);
  const std::uint32_t good = s.speak("Short and fine.");
  Heard h;
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(good); }));
  ASSERT_EQ(h.terminal[bad].type, EventType::kError);
  EXPECT_EQ(h.terminal[bad].error_code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(h.audio.count(bad), 0u);  // nothing half-done
  EXPECT_EQ(h.terminal[good].type, EventType::kTtsEnd);
  EXPECT_NE(s.last_error().find("phoneme ids"), std::string::npos) << s.last_error();
}

TEST(TtsEngine, ASentencePastTheVoicesDeadlineFailsItsUtteranceAndTheSessionGoesOn) {
  // The voice's own deadline (ModelSpec::run_timeout_ms; the engine's stays 2 s): 10 ms, which
  // every VITS run passes. Each utterance fails with kInferenceTimeout, nothing else breaks.
  EngineConfig ec = tts_engine_config(1);
  ec.models[0].run_timeout_ms = 10;
  Engine engine(ec);
  Speech s = engine.open_speech(deterministic());
  const std::uint32_t a = s.speak("This sentence takes longer than ten milliseconds.");
  const std::uint32_t b = s.speak("So does this one.");
  Heard h;
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(b); }));
  for (std::uint32_t id : {a, b}) {
    ASSERT_EQ(h.terminal[id].type, EventType::kError);
    EXPECT_EQ(h.terminal[id].error_code, ErrorCode::kInferenceTimeout);
    EXPECT_EQ(h.audio.count(id), 0u);
  }
  EXPECT_NE(s.last_error().find("run_timeout_ms (10 ms)"), std::string::npos) << s.last_error();
  const ModelStats st = engine.stats().model("tts");
  EXPECT_EQ(st.run_timeouts, 2u);
  EXPECT_EQ(st.run_errors, 2u);
}

// --- espeak-ng failures ---------------------------------------------------------------------------------

TEST(TtsEngine, KilledEspeakNgFailsTheNextUtteranceOnlyAndThenWorksAgain) {
  const auto before = espeak_children();
  Engine engine(tts_engine_config(1));
  Speech s = engine.open_speech(deterministic());
  const std::uint32_t running = s.speak("This one is already phonemized. It goes on to the end.");
  Heard h;
  ASSERT_TRUE(listen(s, h, [](const Heard& x) { return x.audio_events > 0; }));
  const auto children = new_espeak_children(before);
  ASSERT_EQ(children.size(), 2u);
  for (pid_t pid : children) ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const std::uint32_t during = s.speak("This one meets the dead children.");
  const std::uint32_t after = s.speak("This one gets new children.");
  ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(after); }));
  EXPECT_EQ(h.terminal[running].type, EventType::kTtsEnd);
  ASSERT_EQ(h.terminal[during].type, EventType::kError);
  EXPECT_EQ(h.terminal[during].error_code, ErrorCode::kRuntime);
  EXPECT_EQ(h.audio.count(during), 0u);
  EXPECT_EQ(h.terminal[after].type, EventType::kTtsEnd);
  const auto now = new_espeak_children(before);  // before reference_audio() starts its own
  EXPECT_EQ(now.size(), 2u);  // started again, not the killed ones
  for (pid_t p : now) EXPECT_EQ(std::find(children.begin(), children.end(), p), children.end());
  expect_same_audio(h.audio[after], reference_audio("This one gets new children."));
}

TEST(TtsEngine, EspeakNgDyingInTheMiddleOfARequestFailsThatRequestOnly) {
  // A wrapper in a folder laid out like third_party/espeak-ng (BRISVOX_ESPEAK_NG_DIR): it passes
  // lines to the real espeak-ng until one holds a marker, then exits in the middle of that request.
  namespace fs = std::filesystem;
  const fs::path real = test::third_party("espeak-ng");
  ASSERT_TRUE(fs::exists(real / "usr/bin/espeak-ng"));
  const fs::path dir = fs::path(::testing::TempDir()) / "brisvox_dying_espeak_engine";
  fs::remove_all(dir);
  fs::create_directories(dir / "usr/bin");
  fs::create_directories(dir / "usr/lib");
  fs::create_directory_symlink(fs::canonical(real / "usr/lib/x86_64-linux-gnu"), dir / "usr/lib/x86_64-linux-gnu");
  const fs::path wrapper = dir / "usr/bin/espeak-ng";
  std::ofstream(wrapper) << "#!/bin/sh\nwhile IFS= read -r line; do case \"$line\" in *brisvox-die-now*) exit 3;; esac; "
                            "printf '%s\\n' \"$line\"; done | '"
                         << (real / "usr/bin/espeak-ng").string() << "' \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  ::setenv("BRISVOX_ESPEAK_NG_DIR", dir.c_str(), 1);
  {
    Engine engine(tts_engine_config(1));
    ::unsetenv("BRISVOX_ESPEAK_NG_DIR");
    Speech s = engine.open_speech(deterministic());
    const std::uint32_t bad = s.speak("First sentence. Then brisvox-die-now here.");
    const std::uint32_t good = s.speak("This works again.");
    Heard h;
    ASSERT_TRUE(listen(s, h, [&](const Heard& x) { return x.ended(good); }));
    ASSERT_EQ(h.terminal[bad].type, EventType::kError);
    EXPECT_EQ(h.terminal[bad].error_code, ErrorCode::kRuntime);
    EXPECT_EQ(h.audio.count(bad), 0u);
    EXPECT_EQ(h.terminal[good].type, EventType::kTtsEnd);
    EXPECT_FALSE(h.audio[good].empty());
  }
  ::unsetenv("BRISVOX_ESPEAK_NG_DIR");
  fs::remove_all(dir);
}

// --- lifecycle --------------------------------------------------------------------------------------------

TEST(TtsEngine, ClosingAndDrainingStopSpeech) {
  Engine engine(tts_engine_config(1));
  Speech s = engine.open_speech(deterministic());
  s.speak("A long reply that will not be finished. It has more sentences. And another one.");
  Speech moved = std::move(s);
  EXPECT_FALSE(s);
  expect_error([&] { s.speak("x."); }, ErrorCode::kClosed, "closed");
  Heard h;
  ASSERT_TRUE(listen(moved, h, [](const Heard& x) { return x.audio_events > 0; }));
  engine.drain();
  expect_error([&] { moved.speak("After the drain."); }, ErrorCode::kClosed, "shutting down");
  expect_error([&] { engine.open_speech(SpeechConfig{}); }, ErrorCode::kClosed, "shutting down");
  moved.close();
  EXPECT_FALSE(moved);
  // ~Engine abandons what was not synthesised (it does not wait for the whole reply).
}

}  // namespace
}  // namespace brisvox
