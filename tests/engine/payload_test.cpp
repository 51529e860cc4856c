// The payload channel beside the event ring: variable-size results travel whole, in order,
// bounded, and a payload that does not fit is reported, never lost silently. First the channel
// alone, then through the engine with VadOptions::segment_audio (a segment's audio as the payload of
// its speech_end event), on the bundled speech recording.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <thread>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/models/vad/silero_vad.h"
#include "engine/engine_test_util.h"
#include "engine/output/payload_channel.h"
#include "test_paths.h"

namespace brisvox {
namespace {

using engine::PayloadChannel;

std::vector<std::byte> bytes_of(std::size_t n, std::uint8_t seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((seed + i * 31) & 0xff);
  return v;
}

TEST(PayloadChannel, PayloadsArriveWholeAndInOrderAcrossTheWrap) {
  PayloadChannel channel(1000);  // 1024 bytes of ring: the records below wrap many times
  std::uint64_t skipped = 0;
  std::vector<std::byte> out(1000);
  for (std::uint32_t id = 1; id <= 200; ++id) {
    const auto a = bytes_of(id % 300, static_cast<std::uint8_t>(id));
    const auto b = bytes_of(id % 7, static_cast<std::uint8_t>(id + 1));
    ASSERT_TRUE(channel.write(id, a, b)) << id;
    EXPECT_EQ(channel.waiting(), 1u);
    ASSERT_EQ(channel.size_of(id, skipped), a.size() + b.size());
    ASSERT_EQ(channel.read(id, out, skipped), a.size() + b.size()) << id;
    EXPECT_TRUE(std::equal(a.begin(), a.end(), out.begin())) << id;
    EXPECT_TRUE(std::equal(b.begin(), b.end(), out.begin() + static_cast<std::ptrdiff_t>(a.size()))) << id;
    EXPECT_EQ(channel.read(id, out, skipped), 0u) << "a payload is read once";
  }
  EXPECT_EQ(skipped, 0u);
  EXPECT_EQ(channel.waiting(), 0u);
}

TEST(PayloadChannel, AFullChannelRefusesAPayloadWholeAndKeepsTheOthers) {
  PayloadChannel channel(100);  // 128-byte ring: 120 bytes of payload at most
  EXPECT_EQ(channel.max_payload_bytes(), 120u);
  const auto big = bytes_of(121, 1);
  EXPECT_FALSE(channel.write(1, big)) << "larger than the channel can ever hold";
  const auto a = bytes_of(60, 2);
  ASSERT_TRUE(channel.write(2, a));
  EXPECT_FALSE(channel.write(3, a)) << "(8 + 60) * 2 > 128: does not fit now";
  std::uint64_t skipped = 0;
  std::vector<std::byte> out(200);
  ASSERT_EQ(channel.read(2, out, skipped), 60u);
  EXPECT_TRUE(channel.write(4, a)) << "fits again once the reader took its payload";
}

TEST(PayloadChannel, SkippedPayloadsAreCountedAndATooSmallBufferKeepsThePayload) {
  PayloadChannel channel(4096);
  for (std::uint32_t id = 1; id <= 4; ++id) ASSERT_TRUE(channel.write(id, bytes_of(100, 0)));
  std::uint64_t skipped = 0;
  std::vector<std::byte> small(99), out(100);
  EXPECT_EQ(channel.read(3, small, skipped), 0u) << "too small: nothing copied";
  EXPECT_EQ(skipped, 2u) << "payloads 1 and 2 are older than 3: skipped";
  EXPECT_EQ(channel.read(3, out, skipped), 100u) << "payload 3 stayed";
  EXPECT_EQ(channel.read(2, out, skipped), 0u) << "gone";
  EXPECT_EQ(channel.waiting(), 1u);
}

TEST(PayloadChannel, OneWriterAndOneReaderOnTwoThreads) {
  PayloadChannel channel(3000);
  constexpr std::uint32_t kPayloads = 20000;
  std::thread writer([&] {
    for (std::uint32_t id = 1; id <= kPayloads;) {
      const auto v = bytes_of(id % 97 + 4, static_cast<std::uint8_t>(id));
      if (channel.write(id, v)) ++id;
      else std::this_thread::yield();
    }
  });
  std::vector<std::byte> out(200);
  std::uint64_t skipped = 0;
  for (std::uint32_t id = 1; id <= kPayloads;) {
    const std::size_t n = channel.read(id, out, skipped);
    if (n == 0) {
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(n, id % 97 + 4u);
    const auto v = bytes_of(n, static_cast<std::uint8_t>(id));
    ASSERT_TRUE(std::equal(v.begin(), v.end(), out.begin())) << id;
    ++id;
  }
  writer.join();
  EXPECT_EQ(skipped, 0u);
}

// --- through the engine -------------------------------------------------------------------------

struct SegmentAudio {
  Event event;
  std::vector<float> samples;
};

// Feeds `audio` through a stream and reads every segment's payload right after its event.
std::vector<SegmentAudio> segments_with_audio(Stream& s, std::span<const float> audio) {
  std::vector<SegmentAudio> out;
  std::size_t pos = 0;
  bool flushed = false;
  bool ended = false;
  Event events[16];
  while (!ended) {
    if (pos < audio.size()) {
      pos += s.push(audio.subspan(pos, std::min(audio.size() - pos, s.writable())));
    } else if (!flushed) {
      s.flush();
      flushed = true;
    }
    const std::size_t n = s.poll(events);
    for (std::size_t i = 0; i < n; ++i) {
      if (events[i].type == EventType::kSpeechEnd) out.push_back({events[i], s.read_audio_payload(events[i])});
      ended |= events[i].type == EventType::kEndOfStream;
    }
    if (n == 0) s.wait_events(std::chrono::milliseconds(2));
  }
  return out;
}

EngineConfig one_worker() {
  EngineConfig c;
  c.model("vad").path = test::bundled_model("silero_vad_v5.onnx");
  c.model("vad").num_workers = 1;
  return c;
}

TEST(SegmentAudio, EachSpeechEndCarriesExactlyItsSegmentsSamples) {
  Engine engine(one_worker());
  const auto& audio = test::sample_audio().samples;  // 16 kHz: the model rate, no resampling
  StreamConfig sc;
  sc.vad.segment_audio = true;
  Stream s = engine.open_stream(sc);
  const auto segments = segments_with_audio(s, audio);
  ASSERT_EQ(segments.size(), 5u) << "the recording has five utterances";
  for (const SegmentAudio& seg : segments) {
    ASSERT_EQ(seg.event.payload, PayloadStatus::kAttached);
    const auto begin = static_cast<std::size_t>(std::llround(seg.event.start_s * 16000));
    const auto end = std::min(static_cast<std::size_t>(std::llround(seg.event.end_s * 16000)), audio.size());
    ASSERT_EQ(seg.samples.size(), end - begin) << seg.event.start_s;
    ASSERT_EQ(seg.event.payload_bytes, (end - begin) * sizeof(float));
    EXPECT_TRUE(std::equal(seg.samples.begin(), seg.samples.end(), audio.begin() + static_cast<std::ptrdiff_t>(begin)))
        << "segment at " << seg.event.start_s << " s: the payload is the input audio, sample for sample";
  }
  const EngineStats st = engine.stats();
  EXPECT_EQ(st.payloads_dropped, 0u);
  EXPECT_EQ(st.payloads_unread, 0u);
}

TEST(SegmentAudio, ASegmentLongerThanTheAudioKeptIsTruncatedAndSaysSo) {
  Engine engine(one_worker());
  const auto& audio = test::sample_audio().samples;
  StreamConfig sc;
  sc.vad.segment_audio = true;
  sc.vad.max_segment_audio_s = 1.0;  // the utterances are 2.6 to 6.6 s long
  Stream s = engine.open_stream(sc);
  const auto segments = segments_with_audio(s, audio);
  ASSERT_EQ(segments.size(), 5u);
  for (const SegmentAudio& seg : segments) {
    ASSERT_EQ(seg.event.payload, PayloadStatus::kTruncated) << seg.event.start_s;
    ASSERT_GE(seg.samples.size(), 16000u) << "at least the last second";
    // The payload is the segment's end: it stops where the segment stops.
    const auto end = std::min(static_cast<std::size_t>(std::llround(seg.event.end_s * 16000)), audio.size());
    const std::size_t begin = end - seg.samples.size();
    EXPECT_TRUE(std::equal(seg.samples.begin(), seg.samples.end(), audio.begin() + static_cast<std::ptrdiff_t>(begin)));
  }
}

TEST(SegmentAudio, AReaderThatNeverReadsPayloadsIsToldAndCounted) {
  Engine engine(one_worker());
  StreamConfig sc;
  sc.vad.segment_audio = true;
  sc.payload_buffer_bytes = 300'000;  // room for about one utterance (262 144 bytes: 4 s)
  Stream s = engine.open_stream(sc);
  const test::StreamResult r = test::feed_all(s, test::sample_audio().samples, 3);  // polls, never reads payloads
  ASSERT_TRUE(r.ended);
  int attached = 0, dropped = 0;
  for (const Event& e : r.events) {
    if (e.type != EventType::kSpeechEnd) continue;
    ASSERT_NE(e.payload, PayloadStatus::kNone);
    attached += e.payload == PayloadStatus::kAttached;
    dropped += e.payload == PayloadStatus::kDropped;
  }
  EXPECT_GE(attached, 1);
  EXPECT_GE(dropped, 1) << "the channel filled up: later payloads are dropped, and their events say so";
  EXPECT_EQ(attached + dropped, 5);
  s.close();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  EngineStats st = engine.stats();
  while (st.active_streams > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    st = engine.stats();
  }
  EXPECT_EQ(st.payloads_dropped, static_cast<std::uint64_t>(dropped));
  EXPECT_EQ(st.payloads_unread, static_cast<std::uint64_t>(attached)) << "left unread when the stream closed";
}

}  // namespace
}  // namespace brisvox
