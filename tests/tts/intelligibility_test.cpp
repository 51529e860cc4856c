// Intelligibility of the synthesised speech: voice-agent replies spoken by the engine (the real
// Piper voice, the voice's own noise scales, resampled to 16 kHz by the engine as a speech session
// asks) and transcribed by brisvox's own speech-to-text (WhisperTranscriber, Whisper tiny.en,
// greedy). The corpus word error rate must be at most 5 %.
//
// Normaliser (tests/stt/stt_test_util.h, the one of the Whisper parity figures): lower case; "-"
// and "/" become spaces; other characters that are not letters, digits, apostrophes or spaces are
// dropped; numbers 0-999999 are spelled out; "mr", "mrs", "dr" expanded; whitespace collapsed.
// The replies avoid what that normaliser cannot reconcile (currency, clock times, decimals), so
// that a difference is a word the listener would get wrong, not a spelling.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/models/stt/whisper_model.h"
#include "brisvox/models/stt/whisper_transcriber.h"
#include "stt/stt_test_util.h"
#include "test_paths.h"

namespace brisvox {
namespace {

const std::vector<std::string> kReplies = {
    "Sure, I can help with that. Your appointment is confirmed for Monday afternoon.",
    "Thank you for calling. How can I help you today?",
    "I have found your order. It will arrive on Thursday.",
    "Could you please repeat your account number?",
    "Your balance is 250 dollars. Would you like to make a payment?",
    "I am sorry, that seat is no longer available. Would you like a window seat instead?",
    "The store opens at nine in the morning and closes at six in the evening.",
    "Please hold while I transfer you to a specialist.",
    "Your package was delivered to the front door this morning.",
    "I can book a table for four people on Friday evening.",
    "The weather tomorrow will be sunny with a light breeze.",
    "Your password has been reset. Please check your email for the link.",
    "There are 3 flights to Chicago tomorrow. The first one leaves early in the morning.",
    "I understand. Let me check what options we have for you.",
    "Your prescription is ready for pickup at the pharmacy.",
    "We received your payment. Thank you very much.",
    "Would you like me to send you a confirmation by text message?",
    "The doctor can see you next Tuesday or Wednesday.",
    "Is there anything else I can help you with today?",
    "Great. Your reservation is complete. Have a wonderful day!",
};

// The engine's audio for one reply (16 kHz, all sentences in order).
std::vector<float> speak(Speech& s, const std::string& text) {
  const std::uint32_t id = s.speak(text);
  std::vector<float> audio;
  Event events[16];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    s.wait_events(std::chrono::milliseconds(50));
    for (std::size_t i = 0, n = s.poll(events); i < n; ++i) {
      const Event& e = events[i];
      if (e.speech.utterance_id != id) continue;
      if (e.type == EventType::kTtsAudio) {
        const std::vector<float> piece = s.read_audio_payload(e);
        audio.insert(audio.end(), piece.begin(), piece.end());
      } else if (e.type == EventType::kTtsEnd) {
        return audio;
      } else if (e.type == EventType::kError || e.type == EventType::kTtsCancelled) {
        ADD_FAILURE() << "utterance failed: " << s.last_error();
        return audio;
      }
    }
  }
  ADD_FAILURE() << "no end for '" << text << "'";
  return audio;
}

TEST(TtsIntelligibility, WhisperUnderstandsTheEnginesSpeech) {
  EngineConfig ec;
  ec.models = {ModelSpec::piper_tts(test::third_party("models/piper/en_US-joe-medium.onnx"))};
  ec.models[0].num_workers = 1;
  Engine engine(ec);
  SpeechConfig sc;
  sc.sample_rate_hz = 16000;  // Whisper's rate: the engine resamples each sentence (libsoxr)
  Speech speech = engine.open_speech(sc);
  ASSERT_EQ(speech.sample_rate_hz(), 16000);

  const WhisperModel model = WhisperModel::load(test::whisper_tiny_en());
  WhisperTranscriber transcriber(model);
  test::WordErrorRate wer;
  double audio_s = 0;
  for (const std::string& reply : kReplies) {
    const std::vector<float> audio = speak(speech, reply);
    ASSERT_GT(audio.size(), 8000u) << reply;
    audio_s += static_cast<double>(audio.size()) / 16000.0;
    const std::string heard = transcriber.transcribe(audio, 16000).text();
    test::WordErrorRate one;
    one.add(reply, heard);
    wer.add(reply, heard);
    if (one.edits > 0) std::printf("  %zu edit(s): '%s'\n       heard: '%s'\n", one.edits, reply.c_str(), heard.c_str());
  }
  std::printf("intelligibility: %zu replies, %.1f s of speech, %zu words, WER %.2f %% (Whisper tiny.en, greedy)\n",
              kReplies.size(), audio_s, wer.words, wer.percent());
  RecordProperty("wer_percent", std::to_string(wer.percent()));
  EXPECT_LE(wer.percent(), 5.0);
}

}  // namespace
}  // namespace brisvox
