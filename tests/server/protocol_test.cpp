// Unit tests of the server's pure pieces: query parsing, control messages, the access policy,
// the rate limiter, the metrics text and the static-file route (the send queue:
// send_queue_test.cpp). The whole server
// is tested end to end by test_server.py.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "brisvox/error.h"
#include "server/access_policy.h"
#include "server/connection_limits.h"
#include "server/control_message.h"
#include "server/messages.h"
#include "server/metrics.h"
#include "server/query_params.h"
#include "server/rate_limiter.h"
#include "server/request_tag.h"
#include "server/static_files.h"

namespace brisvox::server {
namespace {

std::string error_of(std::string_view query, AudioEndpoint endpoint = AudioEndpoint::kStream) {
  try {
    parse_audio_request(query, endpoint);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(QueryParams, DecodingKeysRefineTheDecodingWhateverTheirOrder) {
  const AudioRequest r = parse_audio_request(
      "events=transcript&beam_size=3&decoding=faster-whisper&temperatures=0,0.5&prompt=Brisvox%20calls&hotwords=Zendesk",
      AudioEndpoint::kStream);
  ASSERT_TRUE(r.stream.stt.has_value());
  EXPECT_EQ(r.stream.stt->decode.beam_size, 3);  // refined, though given before decoding=
  EXPECT_EQ(r.stream.stt->decode.best_of, 5);    // faster-whisper's
  EXPECT_EQ(r.stream.stt->fallback.temperatures, (std::vector<float>{0.0f, 0.5f}));
  EXPECT_EQ(r.stream.stt->decode.prompt, "Brisvox calls");
  EXPECT_EQ(r.stream.stt->decode.hotwords, "Zendesk");
}

TEST(QueryParams, DefaultsAndEveryKey) {
  AudioRequest d = parse_audio_request("", AudioEndpoint::kStream);
  EXPECT_EQ(d.stream.sample_rate_hz, 16000);
  EXPECT_EQ(d.encoding, SampleEncoding::kPcmS16le);
  EXPECT_FALSE(d.stream.vad.emit_probabilities);
  EXPECT_FALSE(d.stream.turn.has_value());

  AudioRequest r = parse_audio_request(
      "sample_rate=44100&encoding=pcm_f32le&model_rate=8000&events=vad&threshold=0.6&neg_threshold=0.3"
      "&min_speech_ms=100&max_speech_s=15.5&min_silence_ms=300&speech_pad_ms=10"
      "&min_silence_at_max_speech_ms=50&use_max_poss_sil_at_max_speech=false&token=x",
      AudioEndpoint::kStream);
  EXPECT_EQ(r.stream.sample_rate_hz, 44100);
  EXPECT_EQ(r.encoding, SampleEncoding::kPcmF32le);
  EXPECT_EQ(r.stream.vad.model_rate_hz, 8000);
  EXPECT_TRUE(r.stream.vad.emit_probabilities);
  EXPECT_DOUBLE_EQ(r.stream.vad.params.threshold, 0.6);
  EXPECT_DOUBLE_EQ(r.stream.vad.params.neg_threshold, 0.3);
  EXPECT_EQ(r.stream.vad.params.min_speech_ms, 100);
  EXPECT_DOUBLE_EQ(r.stream.vad.params.max_speech_s, 15.5);
  EXPECT_EQ(r.stream.vad.params.min_silence_ms, 300);
  EXPECT_EQ(r.stream.vad.params.speech_pad_ms, 10);
  EXPECT_EQ(r.stream.vad.params.min_silence_at_max_speech_ms, 50);
  EXPECT_FALSE(r.stream.vad.params.use_max_poss_sil_at_max_speech);
}

TEST(QueryParams, G711DefaultsTo8kHz) {
  EXPECT_EQ(parse_audio_request("encoding=mulaw", AudioEndpoint::kStream).stream.sample_rate_hz, 8000);
  EXPECT_EQ(parse_audio_request("encoding=alaw&sample_rate=16000", AudioEndpoint::kStream).stream.sample_rate_hz,
            16000);
}

TEST(QueryParams, PercentDecoding) {
  const auto q = parse_query_string("name=my%20call+1.wav&a=%41");
  EXPECT_EQ(q.at("name"), "my call 1.wav");
  EXPECT_EQ(q.at("a"), "A");
  EXPECT_EQ(parse_audio_request("name=a%2Fb", AudioEndpoint::kVad).name, "a/b");
}

TEST(QueryParams, ErrorsNameTheKey) {
  EXPECT_NE(error_of("encoding=mp3").find("mp3"), std::string::npos);
  EXPECT_NE(error_of("sample_rate=-5").find("sample_rate"), std::string::npos);
  EXPECT_NE(error_of("sample_rate=16k").find("sample_rate"), std::string::npos);
  // Below 1000 Hz the resampler's buffers would grow without bound (16000 / rate).
  EXPECT_NE(error_of("sample_rate=999").find("must be 1000 to 768000, got 999"), std::string::npos);
  EXPECT_EQ(parse_audio_request("sample_rate=1000", AudioEndpoint::kStream).stream.sample_rate_hz, 1000);
  EXPECT_NE(error_of("threshold=7").find("threshold"), std::string::npos);
  EXPECT_NE(error_of("threshold=nan").find("threshold"), std::string::npos);
  EXPECT_NE(error_of("model_rate=22050").find("model_rate"), std::string::npos);
  EXPECT_NE(error_of("events=vad,words").find("words"), std::string::npos);
  EXPECT_NE(error_of("treshold=0.5").find("treshold"), std::string::npos);
  EXPECT_NE(error_of("threshold=0.5&threshold=0.6").find("twice"), std::string::npos);
  EXPECT_NE(error_of("use_max_poss_sil_at_max_speech=maybe").find("use_max_poss"), std::string::npos);
  EXPECT_NE(error_of("name=x").find("name"), std::string::npos);  // only POST /v1/vad has a name
  EXPECT_NE(error_of("events=transcript&decoding=best").find("greedy or faster-whisper"), std::string::npos);
  EXPECT_NE(error_of("events=transcript&beam_size=17").find("beam_size"), std::string::npos);
  EXPECT_NE(error_of("events=transcript&temperatures=0,hot").find("temperatures"), std::string::npos);
  EXPECT_NE(error_of("events=transcript&temperatures=").find("temperatures"), std::string::npos);
  EXPECT_NE(error_of("a=%4").find("escape"), std::string::npos);
  EXPECT_NE(error_of("encoding=pcm_s16le", AudioEndpoint::kVad).find("sample_rate"), std::string::npos);
}

TEST(QueryParams, Tag) {
  EXPECT_EQ(parse_audio_request("tag=call-42.a_b:C", AudioEndpoint::kStream).tag, "call-42.a_b:C");
  EXPECT_EQ(parse_audio_request("tag=job-7", AudioEndpoint::kVad).tag, "job-7");
  EXPECT_EQ(parse_audio_request("", AudioEndpoint::kStream).tag, "");
  EXPECT_EQ(parse_audio_request("tag=" + std::string(64, 'x'), AudioEndpoint::kStream).tag, std::string(64, 'x'));
  EXPECT_NE(error_of("tag=" + std::string(65, 'x')).find("'tag' must be 1 to 64 characters"), std::string::npos);
  EXPECT_NE(error_of("tag=").find("'tag'"), std::string::npos);
  EXPECT_NE(error_of("tag=a%20b").find("character 2 is byte 0x20"), std::string::npos);
  EXPECT_NE(error_of("tag=%22").find("byte 0x22"), std::string::npos);
  EXPECT_NE(error_of("tag=a%0Ab").find("byte 0x0a"), std::string::npos);
  EXPECT_NE(error_of("tag=%C3%A9").find("byte 0xc3"), std::string::npos);
  // For log lines: the valid tag of a target, "" for none or a bad one (that request gets a 400).
  EXPECT_EQ(tag_of_target("/v1/vad?sample_rate=8000&tag=x-1"), "x-1");
  EXPECT_EQ(tag_of_target("/v1/vad?tag=a%20b"), "");
  EXPECT_EQ(tag_of_target("/v1/vad?tag=%zz"), "");
  EXPECT_EQ(tag_of_target("/healthz"), "");
}

TEST(QueryParams, TargetSplit) {
  EXPECT_EQ(target_path("/v1/stream?a=1"), "/v1/stream");
  EXPECT_EQ(target_query("/v1/stream?a=1"), "a=1");
  EXPECT_EQ(target_query("/v1/stream"), "");
}

TEST(ControlMessage, Types) {
  EXPECT_EQ(parse_control_message(R"({"type":"flush"})").type, ControlType::kFlush);
  EXPECT_EQ(parse_control_message(R"({"type":"reset","id":7})").type, ControlType::kReset);
  const auto close = parse_control_message(R"( {"type":"close"} )");
  EXPECT_TRUE(close.ok);
  EXPECT_EQ(close.type, ControlType::kClose);
}

TEST(ControlMessage, MalformedIsAnErrorNotAThrow) {
  for (const char* bad : {"", "{", "not json", "[]", "42", R"({"type":5})", R"({"kind":"flush"})",
                          R"({"type":"FLUSH"})", R"({"type":"bogus"})"}) {
    const auto m = parse_control_message(bad);
    EXPECT_FALSE(m.ok) << bad;
    EXPECT_FALSE(m.error.empty()) << bad;
  }
  // A long unknown type is cut in the message, even in the middle of a UTF-8 character.
  const auto m = parse_control_message(R"({"type":")" + std::string(63, 'x') + "\xc3\xa9" + R"("})");
  EXPECT_FALSE(m.ok);
  EXPECT_LT(m.error.size(), 200u);
}

TEST(AccessPolicy, Token) {
  EXPECT_TRUE(token_ok("", "", ""));
  EXPECT_TRUE(token_ok("t0k", "Bearer t0k", ""));
  EXPECT_TRUE(token_ok("t0k", "bearer t0k", ""));
  EXPECT_TRUE(token_ok("t0k", "", "sample_rate=8000&token=t0k"));
  EXPECT_FALSE(token_ok("t0k", "", ""));
  EXPECT_FALSE(token_ok("t0k", "Bearer t0", ""));
  EXPECT_FALSE(token_ok("t0k", "Basic t0k", ""));
  EXPECT_FALSE(token_ok("t0k", "", "token=t0k&token=t0k"));  // malformed: no token
  EXPECT_TRUE(token_ok("t0k", "  Bearer t0k \t", ""));         // optional whitespace only
}

// Asterisk's websocket_client.conf sends its username and password as HTTP Basic authentication:
// the password is the token, the username anything.
TEST(AccessPolicy, BasicPasswordIsTheToken) {
  EXPECT_TRUE(basic_password_ok("", ""));
  EXPECT_TRUE(basic_password_ok("t0k", "Basic YXN0ZXJpc2s6dDBr"));      // asterisk:t0k
  EXPECT_TRUE(basic_password_ok("t0k", "basic  YXN0ZXJpc2s6dDBr "));    // scheme in any case
  EXPECT_TRUE(basic_password_ok("a:b", "Basic dTphOmI="));              // u:a:b: the password holds a colon
  EXPECT_FALSE(basic_password_ok("t0k", "Basic YXN0ZXJpc2s6dDA="));     // asterisk:t0
  EXPECT_FALSE(basic_password_ok("t0k", "Basic dDBr"));                 // t0k: no colon
  EXPECT_FALSE(basic_password_ok("t0k", "Basic not*base64"));
  EXPECT_FALSE(basic_password_ok("t0k", "Bearer t0k"));
  EXPECT_FALSE(basic_password_ok("t0k", ""));
}

// Issue 13, defect 7: trailing slashes were stripped from the Authorization header, so that
// "Bearer s3cret///" passed for --token s3cret and a token ending in '/' could not be sent.
TEST(AccessPolicy, TokenKeepsTrailingSlashes) {
  EXPECT_FALSE(token_ok("s3cret", "Bearer s3cret///", ""));
  EXPECT_FALSE(token_ok("s3cret", "Bearer s3cret/", ""));
  EXPECT_TRUE(token_ok("s3cret/", "Bearer s3cret/", ""));
  EXPECT_FALSE(token_ok("s3cret/", "Bearer s3cret", ""));
  EXPECT_TRUE(token_ok("a/b/", "", "token=a%2Fb%2F"));
}

TEST(AccessPolicy, Origin) {
  EXPECT_TRUE(origin_ok({}, "", "127.0.0.1:8700"));                       // not a browser
  EXPECT_TRUE(origin_ok({}, "http://127.0.0.1:8700", "127.0.0.1:8700"));  // same host
  EXPECT_TRUE(origin_ok({}, "https://Example.com", "example.com"));
  EXPECT_FALSE(origin_ok({}, "http://evil.example", "127.0.0.1:8700"));
  EXPECT_FALSE(origin_ok({}, "http://127.0.0.1:9999", "127.0.0.1:8700"));
  EXPECT_FALSE(origin_ok({}, "null", "127.0.0.1:8700"));
  EXPECT_TRUE(origin_ok({"https://app.example.com"}, "https://app.example.com", "x:1"));
  EXPECT_TRUE(origin_ok({"https://app.example.com"}, "http://x:1", "x:1"));  // same host still
  EXPECT_FALSE(origin_ok({"https://app.example.com"}, "https://other.example.com", "x:1"));
  EXPECT_TRUE(origin_ok({"*"}, "https://anything.example", "x:1"));
  EXPECT_TRUE(origin_ok({"https://app.example.com/"}, "https://app.example.com", "x:1"));  // as typed
}

// Issue 13, defect 6: the same-host rule ignored the scheme ("ftp://127.0.0.1:P" passed).
TEST(AccessPolicy, OriginSchemeMustBeHttp) {
  EXPECT_FALSE(origin_ok({}, "ftp://127.0.0.1:8700", "127.0.0.1:8700"));
  EXPECT_FALSE(origin_ok({}, "file://127.0.0.1:8700", "127.0.0.1:8700"));
  EXPECT_TRUE(origin_ok({}, "HTTPS://127.0.0.1:8700", "127.0.0.1:8700"));
}

// Issue 13, defect 6: DNS rebinding. Host names are checked against IP literals, localhost, --host
// and --allow-host.
TEST(AccessPolicy, HostAllowList) {
  EXPECT_EQ(host_name("[::1]:8700"), "::1");
  EXPECT_EQ(host_name("Example.com:80"), "Example.com");
  EXPECT_EQ(host_name("localhost."), "localhost");
  EXPECT_EQ(host_name("::1"), "::1");
  EXPECT_TRUE(host_ok({}, "", "127.0.0.1"));  // HTTP/1.0 without Host
  EXPECT_TRUE(host_ok({}, "127.0.0.1:8700", "127.0.0.1"));
  EXPECT_TRUE(host_ok({}, "10.1.2.3", "0.0.0.0"));
  EXPECT_TRUE(host_ok({}, "[::1]:8700", "127.0.0.1"));
  EXPECT_TRUE(host_ok({}, "LocalHost:8700", "127.0.0.1"));
  EXPECT_TRUE(host_ok({}, "app.localhost:8700", "127.0.0.1"));
  EXPECT_TRUE(host_ok({}, "box.lan:8700", "box.lan"));  // --host box.lan
  EXPECT_FALSE(host_ok({}, "evil.example:8700", "127.0.0.1"));
  EXPECT_FALSE(host_ok({}, "127.0.0.1.evil.example", "127.0.0.1"));
  EXPECT_FALSE(host_ok({}, "localhost.evil.example", "127.0.0.1"));
  EXPECT_FALSE(host_ok({}, "0x7f.1", "127.0.0.1"));  // not a dotted quad: a name
  EXPECT_TRUE(host_ok({"app.example.com"}, "APP.example.com:443", "127.0.0.1"));
  EXPECT_FALSE(host_ok({"app.example.com"}, "other.example.com", "127.0.0.1"));
  EXPECT_TRUE(host_ok({"*"}, "anything.example", "127.0.0.1"));
}

// Issue 13, defect 4: connections in all and per client address, slots given back.
TEST(ConnectionLimits, TotalAndPerClient) {
  ConnectionLimiter limiter(3, 2);
  auto a1 = limiter.acquire("a");
  auto a2 = limiter.acquire("a");
  auto a3 = limiter.acquire("a");
  EXPECT_TRUE(a1.held() && a2.held());
  EXPECT_EQ(a3.refused(), ConnectionLimiter::Refusal::kPerClient);
  EXPECT_FALSE(a3.held());
  auto b1 = limiter.acquire("b");
  auto b2 = limiter.acquire("b");
  EXPECT_TRUE(b1.held());
  EXPECT_EQ(b2.refused(), ConnectionLimiter::Refusal::kTotal);
  EXPECT_EQ(limiter.open(), 3);
  a1.release();
  a1.release();  // once only
  EXPECT_EQ(limiter.open(), 2);
  EXPECT_EQ(limiter.open_from("a"), 1);
  {
    auto moved = std::move(a2);
    EXPECT_FALSE(a2.held());
  }
  EXPECT_EQ(limiter.open_from("a"), 0);
  EXPECT_EQ(limiter.open(), 1);
}

// Issue 13, defect 5: uploads in progress.
TEST(ConnectionLimits, Uploads) {
  UploadLimiter uploads(2);
  auto u1 = uploads.try_acquire();
  auto u2 = uploads.try_acquire();
  EXPECT_TRUE(u1 && u2);
  EXPECT_FALSE(uploads.try_acquire());
  u1.reset();
  EXPECT_EQ(uploads.in_progress(), 1);
  EXPECT_TRUE(uploads.try_acquire());
  EXPECT_EQ(uploads.in_progress(), 1);  // the temporary went at once
}

TEST(RateLimiter, BurstThenRate) {
  using namespace std::chrono;
  const auto t0 = RateLimiter::Clock::time_point{};
  RateLimiter r(4.0, 2.0, t0);
  r.consume(2.0, t0);  // the whole burst
  EXPECT_EQ(r.wait_time(t0).count(), 0);
  r.consume(1.0, t0);  // one second beyond: 0.25 s at 4x
  EXPECT_NEAR(static_cast<double>(r.wait_time(t0).count()), 250000, 1);
  EXPECT_EQ(r.wait_time(t0 + milliseconds(250)).count(), 0);
  // Idle time refills up to the burst, never beyond.
  r.consume(0.0, t0 + seconds(100));
  r.consume(2.0, t0 + seconds(100));
  EXPECT_EQ(r.wait_time(t0 + seconds(100)).count(), 0);
  r.consume(0.4, t0 + seconds(100));
  EXPECT_NEAR(static_cast<double>(r.wait_time(t0 + seconds(100)).count()), 100000, 1);
}

TEST(Metrics, PrometheusText) {
  EngineStats st;
  st.active_streams = 3;
  ModelStats vad;
  vad.name = "vad";
  vad.family = ModelFamily::kSileroVad;
  vad.num_workers = 2;
  vad.items = 100;
  vad.batch_size_counts = {0, 10, 5, 0, 1};  // max_batch 4
  for (double us : {5.0, 495.0, 500.0, 1000.0}) vad.queue_delay.record(us);  // 1 <= 10 us, 3 <= 1 ms, sum 2 ms
  vad.run_errors = 5;
  vad.run_timeouts = 2;
  ModelStats turn;
  turn.name = "turn";
  turn.family = ModelFamily::kSmartTurn;
  turn.num_workers = 1;
  turn.run_timeouts = 1;
  ModelStats tts;
  tts.name = "tts";
  tts.family = ModelFamily::kPiperTts;
  tts.num_workers = 2;
  tts.jobs_moved = 7;
  st.models = {vad, turn, tts};
  ServerMetrics m;
  m.count_error("bad_control");
  m.count_error("bad_control");
  m.count_error("we\"ird");
  const std::string text = render_prometheus(st, m, 123456789);
  for (const char* line :
       {"brisvox_active_streams 3\n", "brisvox_workers 5\n", "brisvox_frames_processed_total 100\n",
        "brisvox_model_workers{model=\"vad\",family=\"silero_vad\"} 2\n",
        "brisvox_model_workers{model=\"turn\",family=\"smart_turn\"} 1\n",
        "brisvox_model_inputs_total{model=\"vad\"} 100\n",
        "brisvox_batch_size_bucket{model=\"vad\",le=\"1\"} 10\n", "brisvox_batch_size_bucket{model=\"vad\",le=\"2\"} 15\n",
        "brisvox_batch_size_bucket{model=\"vad\",le=\"4\"} 16\n",
        "brisvox_batch_size_bucket{model=\"vad\",le=\"+Inf\"} 16\n", "brisvox_batch_size_sum{model=\"vad\"} 24\n",
        "brisvox_queue_delay_seconds_bucket{model=\"vad\",le=\"1e-05\"} 1\n",
        "brisvox_queue_delay_seconds_bucket{model=\"vad\",le=\"0.001\"} 3\n",
        "brisvox_queue_delay_seconds_bucket{model=\"vad\",le=\"+Inf\"} 4\n",
        "brisvox_queue_delay_seconds_sum{model=\"vad\"} 0.002\n", "brisvox_queue_delay_seconds_count{model=\"vad\"} 4\n",
        "brisvox_errors_total{code=\"bad_control\"} 2\n",
        "brisvox_errors_total{code=\"we\\\"ird\"} 1\n", "brisvox_process_resident_memory_bytes 123456789\n",
        "brisvox_run_errors_total{model=\"vad\"} 5\n", "brisvox_run_timeouts_total{model=\"vad\"} 2\n",
        "brisvox_run_timeouts_total{model=\"turn\"} 1\n", "brisvox_jobs_moved_total{model=\"tts\"} 7\n",
        "brisvox_jobs_moved_total{model=\"vad\"} 0\n", "# TYPE brisvox_queue_delay_seconds histogram\n",
        "brisvox_added_latency_seconds_count 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

TEST(Metrics, AudioAccountingHasEveryReason) {
  EngineStats st;
  st.samples_analysed = 1000;
  st.samples_discarded = 7;
  st.samples_failed = 3;
  ServerMetrics m;
  m.audio_samples_received = 1500;
  m.count_loss(AudioLoss::kReset, 200);
  m.count_loss(AudioLoss::kDisconnected, 250);
  m.count_loss(AudioLoss::kDisconnected, 40);
  const std::string text = render_prometheus(st, m, 0);
  for (const char* line :
       {"brisvox_audio_samples_received_total 1500\n", "brisvox_audio_samples_processed_total 1000\n",
        "brisvox_audio_samples_rejected_total{reason=\"reset\"} 200\n",
        "brisvox_audio_samples_rejected_total{reason=\"disconnected\"} 290\n",
        "brisvox_audio_samples_rejected_total{reason=\"error\"} 0\n",
        "brisvox_audio_samples_rejected_total{reason=\"shutdown\"} 0\n",
        "brisvox_audio_samples_rejected_total{reason=\"request_failed\"} 0\n",
        "brisvox_audio_samples_rejected_total{reason=\"stream_closed\"} 7\n",
        "brisvox_audio_samples_rejected_total{reason=\"model_error\"} 3\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

TEST(Messages, Shapes) {
  EXPECT_EQ(speech_end_message(0.322, 6.91), R"({"type":"speech_end","start":0.322,"end":6.91})");
  EXPECT_EQ(vad_message(0.032, 0.5f), R"({"type":"vad","t":0.032,"p":0.5})");
  EXPECT_EQ(error_message("bad_control", "say \"flush\""),
            R"({"type":"error","code":"bad_control","message":"say \"flush\""})");
  EXPECT_EQ(http_error_body("bad_request", "x"), "{\"error\":{\"code\":\"bad_request\",\"message\":\"x\"}}\n");
}

TEST(StaticFiles, ServesInsideWebDirOnly) {
  const auto dir = std::filesystem::temp_directory_path() / "brisvox-static-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "js");
  std::ofstream(dir / "index.html") << "<h1>hi</h1>";
  std::ofstream(dir / "js" / "app.js") << "1";
  std::ofstream(dir / ".secret") << "no";
  EXPECT_EQ(serve_static_file(dir.string(), "/").body, "<h1>hi</h1>");
  EXPECT_EQ(serve_static_file(dir.string(), "/").content_type, "text/html; charset=utf-8");
  EXPECT_EQ(serve_static_file(dir.string(), "/js/app.js?v=2").body, "1");
  EXPECT_EQ(serve_static_file(dir.string(), "/../etc/passwd").status, 403);
  EXPECT_EQ(serve_static_file(dir.string(), "/js/../../x").status, 403);
  EXPECT_EQ(serve_static_file(dir.string(), "/%2e%2e/x").status, 403);
  EXPECT_EQ(serve_static_file(dir.string(), "/.secret").status, 403);
  EXPECT_EQ(serve_static_file(dir.string(), "/missing.js").status, 404);
  std::filesystem::remove(dir / "index.html");
  const StaticFile missing = serve_static_file(dir.string(), "/");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("index.html"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace brisvox::server
