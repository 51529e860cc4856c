#include "server/audiosocket_front.h"

#include <fmt/format.h>

#include "brisvox/error.h"
#include "server/audiosocket_messages.h"
#include "server/call_handler.h"
#include "server/query_params.h"

namespace brisvox::server {
namespace {

class AudioSocketDialect final : public StreamDialect {
 public:
  TelephonyProvider provider() const override { return TelephonyProvider::kAudioSocket; }
  std::string_view name() const override { return "AudioSocket"; }
  // Never called: every message comes in the binary stream (framed_binary()).
  StreamMessage parse(std::string_view /*text*/) const override {
    StreamMessage m;
    m.error = "a text message (AudioSocket's frames come in binary messages)";
    return m;
  }
  bool framed_binary() const override { return true; }
  std::vector<StreamMessage> read_binary(std::span<const std::byte> chunk) override { return reader_.push(chunk); }
  std::string check_format(const StreamStart& /*start*/) const override { return {}; }  // slin at 8 kHz, always
  bool caller_track(std::string_view /*track*/) const override { return true; }
  std::string media(std::string_view /*stream_sid*/, std::string_view audio) const override {
    return audiosocket_audio_frame(audio);
  }
  // Never sent: AudioSocket has no marks (echoes_marks()) and no clear (Asterisk queues nothing).
  std::string mark(std::string_view /*stream_sid*/, std::string_view /*name*/) const override { return {}; }
  std::string clear(std::string_view /*stream_sid*/) const override { return {}; }
  // 20 ms frames, as Asterisk sends them and writes them to the channel.
  std::size_t min_media_bytes() const override { return kAudioSocketRateHz / 50 * 2; }
  bool exact_media() const override { return true; }
  bool binary_audio() const override { return true; }
  bool echoes_marks() const override { return false; }
  bool paced() const override { return true; }
  std::size_t media_bytes_per_s() const override { return kAudioSocketRateHz * 2; }
  std::string hangup() const override { return audiosocket_hangup_frame(); }
  // Asterisk hangs up by closing its socket: the relay closes the WebSocket normally.
  bool close_is_hangup() const override { return true; }
  std::string no_token() const override { return "no token: the upgrade must carry the server's --token"; }
  std::string wrong_token() const override { return "the upgrade's token is not this server's --token"; }
  std::string listen_only() const override { return "AudioSocket calls are never listen-only"; }
  std::string_view call_id_name() const override { return "uuid"; }
  std::string_view stream_id_name() const override { return "connection"; }

 private:
  AudioSocketReader reader_;
};

}  // namespace

std::unique_ptr<StreamDialect> make_audiosocket_dialect() { return std::make_unique<AudioSocketDialect>(); }

std::optional<Refusal> AudioSocketEndpoint::parse(const Request& upgrade) {
  try {
    for (const auto& [key, value] : parse_query_string(target_query(to_sv(upgrade.target())))) {
      if (key != "token") {
        return Refusal{400, "bad_request",
                       fmt::format("unknown key \"{}\": /v1/telephony/audiosocket takes only token (AudioSocket's "
                                   "audio is 16-bit PCM at 8 kHz)",
                                   key)};
      }
    }
  } catch (const Error& e) {
    return Refusal{400, "bad_request", e.what()};
  }
  return telephony_call_request(
      ctx_, fmt::format("sample_rate={}&encoding=pcm_s16le&playout_lead_ms={}", kAudioSocketRateHz, kPlayoutLeadMs),
      request_);
}

std::variant<std::unique_ptr<WsHandler>, Refusal> AudioSocketEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                            std::function<void()> on_events) {
  // The upgrade carried the server's token (check_access, before parse): the call is authorized.
  return open_call_handler(ctx_, strand, std::move(request_), std::move(on_events),
                           std::make_unique<MediaStreamFront>(ctx_, strand, make_audiosocket_dialect(),
                                                              /*listen_only=*/false, /*authorized=*/true));
}

}  // namespace brisvox::server
