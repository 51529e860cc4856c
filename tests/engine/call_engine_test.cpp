// Calls on the engine (Engine::open_call, call.h) with the real models: a real recording as the
// caller, the Piper voice as the reply. Barge-in stops the reply in the frame that confirms the
// caller's speech and nothing of it comes out after; a backchannel shorter than the minimum does
// not interrupt (the same audio with a lower minimum does: it is heard as speech); marks come out
// when the playout clock reaches them, and the speech is handed out at most the lead ahead of it;
// a cancel ends the reply and the call goes on; bad configurations are refused with the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/error.h"
#include "engine/engine_test_util.h"
#include "test_paths.h"

namespace brisvox {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kLongReply = [] {
  std::string t;
  for (int n = 1; n <= 12; ++n) t += "This is sentence number " + std::to_string(n) + " of a long reply. ";
  return t;
}();

Engine& call_engine() {
  static Engine engine([] {
    EngineConfig ec;
    ec.model("vad").path = test::bundled_model("silero_vad_v5.onnx");
    ec.model("vad").num_workers = 1;
    ModelSpec voice = ModelSpec::piper_tts(test::third_party("models/piper/en_US-joe-medium.onnx"));
    voice.num_workers = 1;
    voice.options = {{"noise_scale", "0"}, {"noise_w_scale", "0"}};  // deterministic: the model's defaults
    ec.models.push_back(voice);
    ec.models.push_back(ModelSpec::smart_turn(test::generated_model("smart_turn_tiny.onnx")));
    return ec;
  }());
  return engine;
}

// The sample recording's samples in [begin_s, end_s) (16 kHz).
std::vector<float> clip(double begin_s, double end_s) {
  const auto& a = test::sample_audio().samples;
  const auto b = static_cast<std::size_t>(begin_s * 16000);
  const auto e = std::min(a.size(), static_cast<std::size_t>(end_s * 16000));
  return {a.begin() + static_cast<std::ptrdiff_t>(b), a.begin() + static_cast<std::ptrdiff_t>(e)};
}

struct Heard {
  std::vector<Event> events;
  std::map<std::uint32_t, double> audio_s;      // speech handed out, per utterance
  std::vector<Clock::time_point> audio_at;      // when each kTtsAudio came out
  std::vector<double> audio_end_s;              // its audio's total so far, seconds
  Clock::time_point first_audio{};
  double total_audio_s = 0;

  bool has(EventType t) const {
    return std::any_of(events.begin(), events.end(), [t](const Event& e) { return e.type == t; });
  }
  const Event* first(EventType t) const {
    for (const Event& e : events) {
      if (e.type == t) return &e;
    }
    return nullptr;
  }
};

void drain(Call& call, Heard& h) {
  Event buf[16];
  for (std::size_t n; (n = call.poll(buf)) > 0;) {
    for (std::size_t i = 0; i < n; ++i) {
      const Event& e = buf[i];
      h.events.push_back(e);
      if (e.type == EventType::kTtsAudio) {
        const std::vector<float> pcm = call.read_audio_payload(e);
        EXPECT_FALSE(pcm.empty());
        const double s = static_cast<double>(pcm.size()) / call.speech_sample_rate_hz();
        h.audio_s[e.speech.utterance_id] += s;
        if (h.total_audio_s == 0) h.first_audio = Clock::now();
        h.total_audio_s += s;
        h.audio_at.push_back(Clock::now());
        h.audio_end_s.push_back(h.total_audio_s);
      }
    }
  }
}

// Polls until `done` holds or the timeout.
template <typename Done>
bool listen(Call& call, Heard& h, Done&& done, std::chrono::seconds timeout = 30s) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    drain(call, h);
    if (done(h)) return true;
    call.wait_events(20ms);
  }
  drain(call, h);
  return done(h);
}

// Pushes `audio` a block at a time, `pace` x real time, collecting events meanwhile.
void push_audio(Call& call, Heard& h, const std::vector<float>& audio, double pace) {
  constexpr std::size_t kBlock = 320;  // 20 ms at 16 kHz
  const auto start = Clock::now();
  for (std::size_t pos = 0; pos < audio.size();) {
    const std::size_t n = std::min({kBlock, audio.size() - pos, call.writable()});
    if (n > 0) pos += call.push(std::span(audio).subspan(pos, n));
    drain(call, h);
    const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(static_cast<double>(pos) / 16000.0 / pace));
    if (pos < audio.size()) {
      if (n == 0) call.wait_writable(kBlock, 5ms);
      std::this_thread::sleep_until(due);
    }
  }
}

CallConfig call_config() {
  CallConfig cc;
  cc.listen.sample_rate_hz = 16000;
  cc.speak.sample_rate_hz = 16000;
  return cc;
}

TEST(CallEngine, BargeInStopsTheReplyAtOnceAndNothingOfItComesOutAfter) {
  CallConfig cc = call_config();
  cc.barge_in.min_speech_ms = 300;
  Call call = call_engine().open_call(cc);
  Heard h;
  const std::uint32_t id = call.speak(kLongReply);
  ASSERT_TRUE(listen(call, h, [](const Heard& x) { return x.has(EventType::kTtsAudio); }));
  // The caller: a little silence, then the second segment of the recording (2.6 s of speech), in
  // real time.
  push_audio(call, h, clip(7.2, 11.6), 1.0);
  ASSERT_TRUE(listen(call, h, [&](const Heard& x) {
    return std::any_of(x.events.begin(), x.events.end(), [&](const Event& e) {
      return e.type == EventType::kTtsInterrupted && e.speech.utterance_id == id;
    });
  }));
  const Event* barge = h.first(EventType::kBargeIn);
  ASSERT_NE(barge, nullptr);
  EXPECT_EQ(barge->speech.utterance_id, id) << "the reply was being heard";
  // Confirmed 300 ms of voiced frames after the speech started (at 8.83 s of the recording: 1.63 s
  // into the clip), and before the segment ended.
  EXPECT_GT(barge->end_s, barge->start_s + 0.3 - 1e-9);
  EXPECT_LT(barge->end_s, barge->start_s + 1.2);
  const auto at = std::find_if(h.events.begin(), h.events.end(), [](const Event& e) { return e.type == EventType::kBargeIn; });
  for (auto it = at; it != h.events.end(); ++it) {
    EXPECT_FALSE(it->type == EventType::kTtsAudio && it->speech.utterance_id <= id) << "audio after the barge-in";
  }
  EXPECT_FALSE(h.has(EventType::kTtsEnd)) << "the reply was not finished";
  EXPECT_LT(h.audio_s[id], 20.0) << "12 sentences are ~25 s of speech";
  // The call goes on: the next reply is spoken whole.
  const std::uint32_t next = call.speak("Sorry, go ahead.");
  ASSERT_TRUE(listen(call, h, [&](const Heard& x) {
    return std::any_of(x.events.begin(), x.events.end(),
                       [&](const Event& e) { return e.type == EventType::kTtsEnd && e.speech.utterance_id == next; });
  }));
  EXPECT_GT(h.audio_s[next], 0.5);
}

// A short reply is made whole long before it has played: stopped while playing, it ends with
// kTtsInterrupted and the audio that came out, not with kTtsEnd.
TEST(CallEngine, AReplyMadeWholeButStoppedWhilePlayingEndsInterrupted) {
  CallConfig cc = call_config();
  cc.barge_in.min_speech_ms = 300;
  Call call = call_engine().open_call(cc);
  Heard h;
  const std::uint32_t id = call.speak("Your table for four is booked for Monday at seven in the evening. We look forward to it!");
  ASSERT_TRUE(listen(call, h, [](const Heard& x) { return x.has(EventType::kTtsAudio); }));
  push_audio(call, h, clip(8.4, 10.0), 1.0);
  ASSERT_TRUE(listen(call, h, [&](const Heard& x) {
    return std::any_of(x.events.begin(), x.events.end(), [&](const Event& e) {
      return (e.type == EventType::kTtsInterrupted || e.type == EventType::kTtsEnd) && e.speech.utterance_id == id;
    });
  }));
  ASSERT_TRUE(h.has(EventType::kBargeIn));
  EXPECT_FALSE(h.has(EventType::kTtsEnd)) << "stopped before all of it came out";
  const Event* end = h.first(EventType::kTtsInterrupted);
  ASSERT_NE(end, nullptr);
  EXPECT_NEAR(end->end_s, h.audio_s[id], 1e-3) << "the audio that came out";
  EXPECT_LT(end->end_s, 4.0);
}

// The same short burst of speech (a backchannel, ~0.3 s) interrupts with a low minimum (so it is
// heard as speech) and not with the default.
TEST(CallEngine, ABackchannelShorterThanTheMinimumDoesNotInterrupt) {
  // 0.35 s from the start of the third segment, then 0.8 s of the silence after the first.
  std::vector<float> burst = clip(12.2, 12.55);
  const std::vector<float> quiet = clip(7.0, 7.8);
  burst.insert(burst.end(), quiet.begin(), quiet.end());
  for (const int min_ms : {100, 400}) {
    SCOPED_TRACE(min_ms);
    CallConfig cc = call_config();
    cc.barge_in.min_speech_ms = min_ms;
    Call call = call_engine().open_call(cc);
    Heard h;
    call.speak(kLongReply);
    ASSERT_TRUE(listen(call, h, [](const Heard& x) { return x.has(EventType::kTtsAudio); }));
    push_audio(call, h, quiet, 4.0);
    push_audio(call, h, burst, 1.0);
    listen(call, h, [](const Heard&) { return false; }, 1s);
    if (min_ms == 100) {
      EXPECT_TRUE(h.has(EventType::kBargeIn)) << "the burst is speech";
    } else {
      EXPECT_FALSE(h.has(EventType::kBargeIn)) << "a backchannel shorter than the minimum";
      EXPECT_FALSE(h.has(EventType::kTtsInterrupted));
    }
  }
}

TEST(CallEngine, SpeechOutsidePlaybackDoesNotInterrupt) {
  CallConfig cc = call_config();
  Call call = call_engine().open_call(cc);
  Heard h;
  push_audio(call, h, clip(8.5, 11.6), 8.0);
  call.flush();
  ASSERT_TRUE(listen(call, h, [](const Heard& x) { return x.has(EventType::kEndOfStream); }));
  EXPECT_TRUE(h.has(EventType::kSpeechEnd));
  EXPECT_FALSE(h.has(EventType::kBargeIn)) << "nothing was being said";
}

TEST(CallEngine, SpeechIsHandedOutWithinTheLeadAndMarksWhenPlaybackReachesThem) {
  CallConfig cc = call_config();
  cc.playout_lead_ms = 300;
  Call call = call_engine().open_call(cc);
  Heard h;
  const std::uint32_t reply = call.speak("Your table is booked for Monday at seven. See you then!");
  const std::uint32_t mark = call.mark();
  EXPECT_EQ(mark, reply + 1) << "marks share the utterances' sequence";
  ASSERT_TRUE(listen(call, h, [&](const Heard& x) { return x.has(EventType::kTtsMark); }));
  const auto mark_at = Clock::now();
  ASSERT_FALSE(h.audio_at.empty());
  const double total = h.total_audio_s;
  ASSERT_GT(total, 2.0);
  // Each piece came out no earlier than the lead before the audio before it would have played.
  for (std::size_t i = 1; i < h.audio_at.size(); ++i) {
    const double played = std::chrono::duration<double>(h.audio_at[i] - h.first_audio).count();
    const double ahead = h.audio_end_s[i - 1] - played;
    EXPECT_LE(ahead, 0.3 + 0.05) << "piece " << i;
  }
  // The mark: once all of it has played (within a poll's slack).
  const double mark_after = std::chrono::duration<double>(mark_at - h.first_audio).count();
  EXPECT_GE(mark_after, total - 0.05);
  EXPECT_LE(mark_after, total + 0.5);
  const Event* end = h.first(EventType::kTtsEnd);
  ASSERT_NE(end, nullptr);
  EXPECT_EQ(end->speech.utterance_id, reply);
}

TEST(CallEngine, CancelEndsTheReplyAndTheCallGoesOn) {
  CallConfig cc = call_config();
  cc.playout_lead_ms = 0;
  Call call = call_engine().open_call(cc);
  Heard h;
  const std::uint32_t id = call.speak(kLongReply);
  ASSERT_TRUE(listen(call, h, [](const Heard& x) { return x.has(EventType::kTtsAudio); }));
  EXPECT_EQ(call.cancel(), id);
  ASSERT_TRUE(listen(call, h, [](const Heard& x) { return x.has(EventType::kTtsCancelled); }));
  EXPECT_FALSE(h.has(EventType::kBargeIn));
  const std::uint32_t next = call.speak("Fine.");
  ASSERT_TRUE(listen(call, h, [&](const Heard& x) {
    return std::any_of(x.events.begin(), x.events.end(),
                       [&](const Event& e) { return e.type == EventType::kTtsEnd && e.speech.utterance_id == next; });
  }));
}

TEST(CallEngine, TelephonyCallsHearAndSpeakAt8kHz) {
  CallConfig cc;
  cc.listen.sample_rate_hz = 8000;
  Call call = call_engine().open_call(cc);
  EXPECT_EQ(call.speech_sample_rate_hz(), 8000) << "the call speaks at its own rate";
  EXPECT_EQ(call.model_rate_hz(), 16000) << "8 kHz callers reach the 16 kHz VAD (upsampled)";
  Heard h;
  call.speak("Hello.");
  ASSERT_TRUE(listen(call, h, [](const Heard& x) { return x.has(EventType::kTtsEnd); }));
  EXPECT_GT(h.total_audio_s, 0.3);
  const auto& a = test::sample_audio().samples;
  std::vector<float> at8k;
  for (std::size_t i = 0; i + 1 < 6 * 16000 && i + 1 < a.size(); i += 2) at8k.push_back(0.5f * (a[i] + a[i + 1]));
  for (std::size_t pos = 0; pos < at8k.size();) {
    const std::size_t n = std::min(at8k.size() - pos, call.writable());
    if (n > 0) pos += call.push(std::span(at8k).subspan(pos, n));
    drain(call, h);
    if (n == 0) call.wait_writable(256, 5ms);
  }
  call.flush();
  ASSERT_TRUE(listen(call, h, [](const Heard& x) { return x.has(EventType::kEndOfStream); }));
  EXPECT_TRUE(h.has(EventType::kSpeechStart));
}

TEST(CallEngine, BadCallsAreRefusedWithTheField) {
  Engine& engine = call_engine();
  auto refused = [&](const CallConfig& cc, const char* why) {
    try {
      engine.open_call(cc);
      ADD_FAILURE() << "opened; expected: " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  CallConfig cc = call_config();
  cc.barge_in.on_turn_end = true;
  refused(cc, "needs a turn stage");
  cc = call_config();
  cc.listen.on_events = [] {};
  refused(cc, "listen.on_events and speak.on_events must be empty");
  cc = call_config();
  cc.barge_in.min_speech_ms = 5;
  refused(cc, "min_speech_ms");
  cc = call_config();
  cc.playout_lead_ms = -1;
  refused(cc, "playout_lead_ms");
  cc = CallConfig{};
  cc.listen.sample_rate_hz = 44100;  // the voice cannot speak at the call's rate
  refused(cc, "44100");
  cc = call_config();
  cc.speak.model = "no-voice";
  refused(cc, "no-voice");
  // A turn stage makes on_turn_end valid.
  cc = call_config();
  cc.listen.turn = TurnOptions{};
  cc.barge_in.on_turn_end = true;
  Call call = engine.open_call(cc);
  EXPECT_TRUE(call);
  // Nothing leaks: closed calls give their stream and session back.
  call.close();
  const auto deadline = Clock::now() + 5s;
  while (engine.stats().active_streams != 0 && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine.stats().active_streams, 0u);
}

}  // namespace
}  // namespace brisvox
