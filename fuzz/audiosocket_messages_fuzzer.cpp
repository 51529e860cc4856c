// Asterisk AudioSocket's reader (server/audiosocket_messages.h) on arbitrary bytes, pushed whole and
// in two pieces split where the input's first byte says. Invariants: never throws; ok exactly when
// there is no error text (bounded, valid UTF-8); after a frame it cannot read it reads nothing more;
// the split gives the same messages as the whole; a start carries a UUID's text, media whole
// samples, dtmf one key; an audio frame written back reads as the same audio.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "fuzz_stream_message.h"
#include "server/audiosocket_messages.h"

namespace server = brisvox::server;

namespace {

std::vector<server::StreamMessage> read_all(std::string_view input, std::size_t split) {
  server::AudioSocketReader reader;
  std::vector<server::StreamMessage> out;
  for (std::string_view part : {input.substr(0, split), input.substr(split)}) {
    for (auto& m : reader.push(std::as_bytes(std::span(part.data(), part.size())))) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<server::StreamMessage> whole, split;
  try {
    whole = read_all(input, input.size());
    split = read_all(input, size == 0 ? 0 : data[0] % (size + 1));
  } catch (...) {
    FUZZ_CHECK(false, "the AudioSocket reader threw");
  }
  FUZZ_CHECK(whole.size() == split.size(), "%zu messages whole, %zu split", whole.size(), split.size());
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const server::StreamMessage& m = whole[i];
    check_stream_error(m);
    FUZZ_CHECK(m.ok == split[i].ok && m.event == split[i].event && m.payload == split[i].payload,
               "message %zu differs when split", i);
    FUZZ_CHECK(m.ok || i + 1 == whole.size(), "a message after one that could not be read");
    if (!m.ok) continue;
    if (m.event == server::StreamEvent::kStart) {
      FUZZ_CHECK(m.start.call_sid.size() == 36 && m.start.sample_rate_hz == 8000, "start '%s'", m.start.call_sid.c_str());
    }
    if (m.event == server::StreamEvent::kMedia) FUZZ_CHECK(m.payload.size() % 2 == 0, "%zu bytes", m.payload.size());
    if (m.event == server::StreamEvent::kDtmf) FUZZ_CHECK(m.digit.size() == 1, "digit '%s'", m.digit.c_str());
  }
  // An audio frame brisvox writes reads back as the same audio.
  const std::string pcm(input.substr(0, std::min<std::size_t>(input.size() / 2 * 2, 0xfffe)));
  const std::string frame = server::audiosocket_audio_frame(pcm);
  server::AudioSocketReader reader;
  const auto back = reader.push(std::as_bytes(std::span(frame.data(), frame.size())));
  FUZZ_CHECK(back.size() == 1 && back[0].ok && back[0].event == server::StreamEvent::kMedia && back[0].payload == pcm,
             "an audio frame of %zu bytes did not read back", pcm.size());
  return 0;
}
