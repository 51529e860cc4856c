#include "loadtest/loadtest_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"

namespace brisvox::loadtest {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

static_assert(std::endian::native == std::endian::little, "the audio is sent as the host's int16: little-endian only");

constexpr std::size_t kRing = 1024;  // send times of the last 1024 frames (32.8 s) per stream
constexpr std::string_view kVadPrefix = R"({"type":"vad","t":)";
constexpr std::string_view kCloseMessage = R"({"type":"close"})";
// A reconnection refused (a replica at capacity or over its latency budget answers 503 with
// Retry-After: 1) is tried again after 250 ms, 500 ms, ... up to 2 s, 10 times in a row at most
// (about 13 s, what a telephony bridge might wait with the caller's audio buffered).
constexpr int kReconnectTries = 10;
constexpr auto kReconnectPause = std::chrono::milliseconds(250);
constexpr auto kReconnectPauseMax = std::chrono::milliseconds(2000);

// Concrete executor types: no polymorphic executor on the hot path.
using Executor = asio::io_context::executor_type;
using Socket = asio::basic_stream_socket<asio::ip::tcp, Executor>;
using Timer = asio::basic_waitable_timer<Clock, asio::wait_traits<Clock>, Executor>;

// Timers expire on a 1 ms grid (from t0): the streams' sends due in the same millisecond share one
// wake-up of the loop instead of one each (at 300 streams, 9375 wake-ups a second otherwise). The
// schedule itself, and the send lag, stay exact.
constexpr Clock::duration kTimerGrid = std::chrono::milliseconds(1);

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Shared, read-only during the run.
struct Plan {
  const LoadSpec& spec;
  const LoopedPcm& audio;
  Clock::time_point t0;
  Clock::time_point measure_from;  // t0 + ramp
  Clock::time_point window_end;    // t0 + seconds: every stream sends during [measure_from, window_end)
  Clock::time_point split;         // t0 + split_at_s (max() without a split)
  Clock::duration period;
  std::size_t chunk_samples = 0;
  std::size_t chunks_total = 0;
};

class StreamClient;

// One event loop (thread) and the streams it owns.
struct Loop {
  asio::io_context io{1};
  Timer deadline{io.get_executor()};
  // Event latency (frames sent after the ramp) and send lag of this loop's streams, microseconds.
  LatencyHistogram latency_us;
  LatencyHistogram send_lag_us;
  LatencyHistogram before_us, after_us;                       // with a split
  LatencyHistogram first_audio_us;                            // calls: turn_end -> first reply audio
  struct ReplicaLatency {
    LatencyHistogram all, before;  // before: frames sent before the split
  };
  std::map<std::string, ReplicaLatency> by_replica_us;  // with a replica header
  std::vector<StreamClient*> streams;
  int remaining = 0;
  // The last stream to end stops the loop: operations Beast may still hold (a handshake or
  // connect timer of a refused stream) must not keep the run going.
  void stream_ended() {
    if (--remaining == 0) {
      deadline.cancel();
      io.stop();
    }
  }
};

// How one connection of a stream ended (a stream has several when it reconnects).
enum class LegEnd { kCompleted, kGoingAway, kCutOff, kOther };

struct LegRecord {
  std::string replica;
  LegEnd end = LegEnd::kOther;
  bool final_events = false;  // every speech_start had its speech_end before the close
  std::uint64_t frames_sent = 0, frames_received = 0;
  bool reconnection = false;
};

using WsStream = websocket::stream<Socket>;

class StreamClient {
 public:
  StreamClient(Loop& loop, const Plan& plan, std::size_t index)
      : loop_(loop), plan_(plan), index_(index), timer_(loop.io.get_executor()), retry_timer_(loop.io.get_executor()) {
    const auto n = static_cast<std::size_t>(plan.spec.streams);
    offset_ = static_cast<std::size_t>(static_cast<double>(index) / static_cast<double>(n) *
                                       static_cast<double>(plan.audio.length)) % plan.audio.length;
    ring_.resize(kRing);
  }

  void start() {
    const auto n = static_cast<double>(plan_.spec.streams);
    const auto at = plan_.t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                   plan_.spec.ramp_s * static_cast<double>(index_) / n));
    timer_.expires_at(at);
    timer_.async_wait([this](error_code ec) {
      if (!ec && !ended_) connect();
    });
  }

  void abort() {
    if (ended_) return;
    aborted_ = true;
    fail("aborted at the deadline (still open after --seconds + --ramp-s + the grace period)");
  }

  // Results, read once the loops are done.
  bool opened_ = false, completed_ = false, aborted_ = false;
  std::string failure_;
  std::size_t written_ = 0;  // audio chunks handed to the socket (rewound by a reconnection)
  std::size_t messages_ = 0;  // audio messages sent, resent ones included
  std::uint64_t frames_sent_ = 0, received_ = 0, out_of_order_ = 0, unmeasured_ = 0, after_last_ = 0;  // this connection's
  std::uint64_t frames_sent_total_ = 0, received_total_ = 0, frames_resent_ = 0;
  std::vector<LegRecord> legs_;
  int reconnects_ = 0, reconnects_failed_ = 0;
  std::map<std::string, int> reconnect_failures_;  // by reason
  std::uint64_t speech_events_ = 0, overloads_ = 0, overload_dropped_ = 0, window_msgs_ = 0;
  std::uint64_t turns_ = 0, transcripts_ = 0, replies_started_ = 0, replies_done_ = 0, replies_interrupted_ = 0;
  std::map<std::string, std::uint64_t> errors_;
  Clock::time_point first_send_{}, last_send_{};

 private:
  // Each connection is its own stream object, kept until the run ends: handlers of an old one may
  // still be pending (they see a stale generation and return).
  WsStream& ws() { return *conns_.back(); }

  void connect() {
    conns_.push_back(std::make_unique<WsStream>(loop_.io.get_executor()));
    ++gen_;
    response_ = {};
    // Bounded by the run's deadline (a loopback connect is answered at once anyway).
    asio::async_connect(ws().next_layer(), plan_.spec.target.endpoints,
                        [this, g = gen_](error_code ec, const asio::ip::tcp::endpoint&) {
                          if (g == gen_) on_connect(ec);
                        });
  }

  void on_connect(error_code ec) {
    if (ended_) return;
    if (ec) return connect_failed("connect: " + ec.message());
    error_code ignored;
    ws().next_layer().set_option(asio::ip::tcp::no_delay(true), ignored);
    ws().set_option(websocket::stream_base::timeout{std::chrono::seconds(10), websocket::stream_base::none(), false});
    ws().set_option(websocket::stream_base::decorator([token = plan_.spec.token](websocket::request_type& req) {
      req.set(beast::http::field::user_agent, "brisvox-loadtest");
      if (!token.empty()) req.set(beast::http::field::authorization, "Bearer " + token);
    }));
    ws().async_handshake(response_, plan_.spec.target.host_header, plan_.spec.target.path, [this, g = gen_](error_code e) {
      if (g == gen_) on_handshake(e);
    });
  }

  void on_handshake(error_code ec) {
    if (ended_) return;
    if (ec == websocket::error::upgrade_declined) {
      std::string code;
      try {
        code = nlohmann::json::parse(response_.body()).at("error").at("code").get<std::string>();
      } catch (const std::exception&) {
      }
      return connect_failed(fmt::format("refused: HTTP {}{}", response_.result_int(), code.empty() ? "" : " " + code));
    }
    if (ec) return connect_failed("handshake: " + ec.message());
    opened_ = true;
    leg_open_ = true;
    leg_latency_ = nullptr;
    if (!plan_.spec.replica_header.empty()) {
      const auto it = response_.find(plan_.spec.replica_header);
      replica_ = it == response_.end() ? std::string() : std::string(it->value());
      leg_latency_ = &loop_.by_replica_us[replica_];
    }
    read_next();
    if (reconnecting_) {
      // The schedule goes on: the chunks due while reconnecting (and the resent ones) go now.
      reconnecting_ = false;
      failed_in_a_row_ = 0;
      ++reconnects_;
      leg_is_reconnection_ = true;
      return write_next();
    }
    // The first slot of this stream's schedule after now: phase index/S of the period.
    const auto phase = plan_.period * static_cast<long>(index_) / plan_.spec.streams;
    const auto base = plan_.t0 + phase;
    const auto now = Clock::now();
    long n0 = 0;
    if (now > base) n0 = static_cast<long>((now - base + plan_.period - Clock::duration(1)) / plan_.period);
    anchor_ = base + plan_.period * n0;
    arm_tick();
  }

  Clock::time_point slot(std::size_t j) const { return anchor_ + plan_.period * static_cast<long>(j); }

  void arm_tick() {
    // Rounded up to the grid: the timer never fires before the slot.
    const auto since_t0 = slot(due_) - plan_.t0;
    timer_.expires_at(plan_.t0 + (since_t0 + kTimerGrid - Clock::duration(1)) / kTimerGrid * kTimerGrid);
    timer_.async_wait([this](error_code ec) {
      if (ec || ended_) return;
      ++due_;
      if (due_ < plan_.chunks_total) arm_tick();
      write_next();
    });
  }

  void write_next() {
    if (writing_ || ended_ || !leg_open_) return;
    if (!texts_.empty() && !close_sent_) {  // a call's reply goes before more audio
      text_out_ = std::move(texts_.front());
      texts_.pop_front();
      writing_ = true;
      ws().text(true);
      ws().async_write(asio::buffer(text_out_), [this, g = gen_](error_code ec, std::size_t) {
        if (g == gen_) on_write(ec);
      });
      return;
    }
    if (written_ < due_) {
      const auto now = Clock::now();
      loop_.send_lag_us.record(ms(now - slot(written_)) * 1000.0);
      const std::size_t chunk = plan_.chunk_samples;
      const std::int16_t* data =
          plan_.audio.samples.data() + (offset_ + written_ * chunk) % plan_.audio.length;
      samples_sent_ += chunk;
      const std::uint64_t whole = samples_sent_ / kFrameSamples;
      const auto stamp = now.time_since_epoch().count();
      for (; frames_sent_ < whole; ++frames_sent_) ring_[frames_sent_ % kRing] = stamp;
      if (messages_ == 0) first_send_ = now;
      last_send_ = now;
      if (now >= plan_.measure_from && now < plan_.window_end) ++window_msgs_;
      ++written_;
      ++messages_;
      writing_ = true;
      ws().binary(true);
      ws().async_write(asio::buffer(data, chunk * sizeof(std::int16_t)), [this, g = gen_](error_code ec, std::size_t) {
        if (g == gen_) on_write(ec);
      });
    } else if (written_ == plan_.chunks_total && !close_sent_) {
      close_sent_ = true;
      writing_ = true;
      ws().text(true);
      ws().async_write(asio::buffer(kCloseMessage.data(), kCloseMessage.size()), [this, g = gen_](error_code ec, std::size_t) {
        if (g == gen_) on_write(ec);
      });
    }
  }

  void on_write(error_code ec) {
    writing_ = false;
    if (ended_) return;
    if (ec) {
      // A connection the server closed or lost: the pending read says how (close frame or not).
      if (plan_.spec.reconnect) return;
      return fail("write: " + ec.message());
    }
    write_next();
  }

  void read_next() {
    ws().async_read(buffer_, [this, g = gen_](error_code ec, std::size_t) {
      if (g == gen_) on_read(ec);
    });
  }

  void on_read(error_code ec) {
    const auto now = Clock::now();
    if (ended_) return;
    if (ec == websocket::error::closed) {
      const auto& reason = ws().reason();
      if (close_sent_ && reason.code == websocket::close_code::normal) {
        completed_ = true;
        leg_over(LegEnd::kCompleted);
        return end();
      }
      auto why = fmt::format("closed by the server: {}{}{}", static_cast<unsigned>(reason.code),
                             reason.reason.empty() ? "" : " ", std::string(reason.reason.c_str()));
      if (reason.code == websocket::close_code::going_away) return lost(LegEnd::kGoingAway, std::move(why));
      leg_over(LegEnd::kOther);
      return fail(std::move(why));
    }
    if (ec) return lost(LegEnd::kCutOff, "read: " + ec.message());
    if (ws().got_text()) {
      const auto bytes = buffer_.cdata();
      handle_text(std::string_view(static_cast<const char*>(bytes.data()), bytes.size()), now);
    } else if (awaiting_audio_) {  // a call's reply: its first audio
      awaiting_audio_ = false;
      loop_.first_audio_us.record(ms(now - turn_end_at_) * 1000.0);
    }
    buffer_.consume(buffer_.size());
    read_next();
  }

  void handle_text(std::string_view text, Clock::time_point now) {
    if (text.starts_with(kVadPrefix)) {  // the hot path: no JSON parser
      double t = 0;
      const auto [end, errc] = std::from_chars(text.data() + kVadPrefix.size(), text.data() + text.size(), t);
      if (errc == std::errc()) return on_vad(std::llround(t * kRateHz / kFrameSamples), now);
    }
    try {
      const auto j = nlohmann::json::parse(text);
      const std::string type = j.value("type", "");
      if (type == "vad") {
        on_vad(std::llround(j.at("t").get<double>() * kRateHz / kFrameSamples), now);
      } else if (type == "error") {
        ++errors_[j.value("code", "?")];
      } else if (type == "overload") {
        ++overloads_;
        overload_dropped_ += j.value("dropped_messages", std::uint64_t{0});
      } else if (type == "speech_start" || type == "speech_end") {
        ++speech_events_;
        ++(type == "speech_start" ? leg_speech_starts_ : leg_speech_ends_);
      } else if (type == "turn_end" && plan_.spec.calls) {
        ++turns_;
        on_turn_end(now);
      } else if (type == "transcript") {
        ++transcripts_;
      } else if (type == "speak_started") {
        ++replies_started_;
      } else if (type == "speak_done") {
        ++replies_done_;
      } else if (type == "interrupted") {
        ++replies_interrupted_;
      }
    } catch (const std::exception&) {
      ++errors_["(unparsable message from the server)"];
    }
  }

  // A call's turn ended: answer it, and time the answer's first audio from now (a reply still
  // waiting for its first audio is timed from its own turn_end).
  void on_turn_end(Clock::time_point now) {
    if (close_sent_) return;
    if (!awaiting_audio_) {
      awaiting_audio_ = true;
      turn_end_at_ = now;
    }
    texts_.push_back(nlohmann::json{{"type", "speak"}, {"text", plan_.spec.reply}}.dump());
    write_next();
  }

  void on_vad(long long k, Clock::time_point now) {
    if (k < 0 || static_cast<std::uint64_t>(k) >= frames_sent_) {
      ++after_last_;  // the zero-padded partial frame a close analyses
      return;
    }
    const auto frame = static_cast<std::uint64_t>(k);
    ++received_;
    if (frame != next_expected_) ++out_of_order_;
    next_expected_ = frame + 1;
    if (frames_sent_ - frame > kRing) {
      ++unmeasured_;
      return;
    }
    const Clock::time_point sent{Clock::duration(ring_[frame % kRing])};
    if (sent < plan_.measure_from) return;
    const double us = ms(now - sent) * 1000.0;
    loop_.latency_us.record(us);
    const bool split = plan_.split != Clock::time_point::max();
    if (split) (sent < plan_.split ? loop_.before_us : loop_.after_us).record(us);
    if (leg_latency_ != nullptr) {
      leg_latency_->all.record(us);
      if (split && sent < plan_.split) leg_latency_->before.record(us);
    }
  }

  // Keeps this connection's record (once) and closes its socket.
  void leg_over(LegEnd how) {
    if (!leg_open_) return;
    leg_open_ = false;
    LegRecord r;
    r.replica = replica_;
    r.end = how;
    r.final_events = leg_speech_starts_ == leg_speech_ends_;
    r.frames_sent = frames_sent_;
    r.frames_received = received_;
    r.reconnection = leg_is_reconnection_;
    legs_.push_back(std::move(r));
    frames_sent_total_ += frames_sent_;
    received_total_ += received_;
    error_code ignored;
    ws().next_layer().close(ignored);
  }

  // The connection closed 1001 or was cut off: reconnect and resume at the first frame without a
  // vad event (with spec.reconnect), or end here.
  void lost(LegEnd how, std::string why) {
    leg_over(how);
    if (!plan_.spec.reconnect) return fail(std::move(why));
    const std::uint64_t answered_samples = next_expected_ * kFrameSamples;
    const std::size_t resume = leg_first_chunk_ + static_cast<std::size_t>(answered_samples / plan_.chunk_samples);
    if (resume >= plan_.chunks_total) {  // everything was answered: the call is over
      completed_ = true;
      return end();
    }
    frames_resent_ += frames_sent_ - std::min<std::uint64_t>(frames_sent_, answered_samples / kFrameSamples);
    written_ = std::min(written_, resume);
    failure_ = std::move(why);
    reconnecting_ = true;
    start_leg();
  }

  // A connection (first or later) could not be opened.
  void connect_failed(std::string why) {
    if (!reconnecting_) return fail(std::move(why));
    error_code ignored;
    ws().next_layer().close(ignored);
    ++reconnects_failed_;
    ++reconnect_failures_[why];
    if (++failed_in_a_row_ >= kReconnectTries) return fail("reconnect: " + why);
    retry_timer_.expires_after(std::min<Clock::duration>(kReconnectPause * failed_in_a_row_, kReconnectPauseMax));
    retry_timer_.async_wait([this](error_code ec) {
      if (!ec && !ended_) start_leg();
    });
  }

  void start_leg() {
    leg_first_chunk_ = written_;
    frames_sent_ = received_ = 0;
    samples_sent_ = 0;
    next_expected_ = 0;
    leg_speech_starts_ = leg_speech_ends_ = 0;
    writing_ = close_sent_ = false;
    connect();
  }

  void fail(std::string why) {
    failure_ = std::move(why);
    end();
  }

  void end() {
    if (ended_) return;
    leg_over(LegEnd::kOther);  // aborted, or a write error: whatever connection is open ends here
    ended_ = true;
    error_code ignored;
    if (!conns_.empty()) ws().next_layer().close(ignored);  // a refused or half-open one too
    timer_.cancel();
    retry_timer_.cancel();
    loop_.stream_ended();
  }

  Loop& loop_;
  const Plan& plan_;
  const std::size_t index_;
  std::vector<std::unique_ptr<WsStream>> conns_;
  unsigned gen_ = 0;  // the current connection's number: handlers of older ones return at once
  websocket::response_type response_;
  Timer timer_;
  Timer retry_timer_;
  bool leg_open_ = false, reconnecting_ = false, leg_is_reconnection_ = false;
  int failed_in_a_row_ = 0;
  std::string replica_;
  Loop::ReplicaLatency* leg_latency_ = nullptr;  // in loop_.by_replica_us
  std::size_t leg_first_chunk_ = 0;          // the chunk this connection's frame 0 starts with
  std::uint64_t leg_speech_starts_ = 0, leg_speech_ends_ = 0;
  beast::flat_buffer buffer_;
  std::size_t offset_ = 0;
  Clock::time_point anchor_{};
  std::size_t due_ = 0;  // chunks whose slot has come
  std::uint64_t samples_sent_ = 0;
  std::uint64_t next_expected_ = 0;
  std::vector<Clock::rep> ring_;
  bool writing_ = false, close_sent_ = false, ended_ = false;
  // Calls: replies waiting to be written, the one being written, and the turn_end a reply's first
  // audio is timed from.
  std::deque<std::string> texts_;
  std::string text_out_;
  bool awaiting_audio_ = false;
  Clock::time_point turn_end_at_{};
};

}  // namespace

LoopedPcm LoopedPcm::load(const std::string& path, std::size_t tail_samples) {
  Audio audio = load_audio(path);
  std::vector<float> samples =
      audio.sample_rate_hz == kRateHz ? std::move(audio.samples) : resample(audio.samples, audio.sample_rate_hz, kRateHz);
  if (samples.empty()) throw Error(ErrorCode::kBadAudio, fmt::format("'{}' holds no audio", path));
  LoopedPcm out;
  out.source = path;
  out.length = samples.size();
  out.samples.reserve(out.length + tail_samples);
  for (std::size_t i = 0; i < out.length + tail_samples; ++i) {
    const float x = std::clamp(samples[i % out.length] * 32768.0f, -32768.0f, 32767.0f);
    out.samples.push_back(static_cast<std::int16_t>(std::lrint(x)));
  }
  return out;
}


LoadResult run_load(const LoadSpec& spec, const LoopedPcm& audio) {
  const int num_loops = std::clamp(spec.threads, 1, spec.streams);
  std::vector<std::unique_ptr<Loop>> loops;
  for (int i = 0; i < num_loops; ++i) loops.push_back(std::make_unique<Loop>());

  const auto t0 = Clock::now() + std::chrono::milliseconds(100);
  const auto secs = [](double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
  Plan plan{spec,
            audio,
            t0,
            t0 + secs(spec.ramp_s),
            t0 + secs(spec.seconds),
            spec.split_at_s > 0 ? t0 + secs(spec.split_at_s) : Clock::time_point::max(),
            std::chrono::milliseconds(spec.chunk_ms)};
  plan.chunk_samples = static_cast<std::size_t>(spec.chunk_ms) * kRateHz / 1000;
  plan.chunks_total = static_cast<std::size_t>(std::llround(spec.seconds * 1000.0 / spec.chunk_ms));

  std::vector<std::unique_ptr<StreamClient>> streams;
  for (int i = 0; i < spec.streams; ++i) {
    Loop& loop = *loops[static_cast<std::size_t>(i % num_loops)];
    streams.push_back(std::make_unique<StreamClient>(loop, plan, static_cast<std::size_t>(i)));
    loop.streams.push_back(streams.back().get());
    ++loop.remaining;
  }
  const auto deadline = t0 + secs(spec.ramp_s + spec.seconds + spec.grace_s);
  for (auto& loop : loops) {
    for (StreamClient* s : loop->streams) s->start();
    loop->deadline.expires_at(deadline);
    loop->deadline.async_wait([l = loop.get()](error_code ec) {
      if (ec) return;  // cancelled: every stream ended
      for (StreamClient* s : l->streams) s->abort();
    });
  }

  // The mid-run probe, skipped if the run ends first.
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::thread prober;
  if (spec.probe) {
    prober = std::thread([&] {
      std::unique_lock lock(mu);
      if (cv.wait_until(lock, t0 + secs(spec.probe_at_s), [&] { return finished; })) return;
      lock.unlock();
      spec.probe();
    });
  }

  std::vector<std::thread> threads;
  for (auto& loop : loops) threads.emplace_back([l = loop.get()] { l->io.run(); });
  for (auto& t : threads) t.join();
  const auto t_end = Clock::now();
  {
    std::lock_guard lock(mu);
    finished = true;
  }
  cv.notify_all();
  if (prober.joinable()) prober.join();

  LoadResult r;
  r.streams = spec.streams;
  r.wall_s = std::chrono::duration<double>(t_end - t0).count();
  r.target_msgs_per_s = spec.streams * 1000.0 / spec.chunk_ms;
  std::uint64_t window_msgs = 0;
  double factor_sum = 0;
  int factor_n = 0;
  r.realtime_factor_min = 0;
  Clock::time_point first_any = Clock::time_point::max(), last_any = Clock::time_point::min();
  for (auto& s : streams) {
    if (s->opened_) ++r.opened;
    if (s->completed_) {
      ++r.completed;
    } else {
      ++r.connection_failures;
      ++r.failure_reasons[s->failure_.empty() ? "unknown" : s->failure_];
    }
    if (s->aborted_) ++r.aborted;
    r.messages_sent += s->messages_;
    r.frames_sent += s->frames_sent_total_;
    r.frames_received += s->received_total_;
    if (s->frames_sent_total_ > s->received_total_) {
      r.frames_lost += s->frames_sent_total_ - s->received_total_;
      ++r.streams_with_loss;
    }
    r.frames_resent += s->frames_resent_;
    r.reconnects += s->reconnects_;
    r.reconnects_failed += s->reconnects_failed_;
    for (const auto& [why, n] : s->reconnect_failures_) r.reconnect_failure_reasons[why] += n;
    if (!spec.replica_header.empty()) {
      for (const LegRecord& leg : s->legs_) {
        ReplicaStats& rs = r.replicas[leg.replica];
        ++rs.connections;
        if (leg.reconnection) ++rs.reconnects_landed;
        rs.frames_sent += leg.frames_sent;
        rs.frames_unanswered += leg.frames_sent - std::min(leg.frames_sent, leg.frames_received);
        switch (leg.end) {
          case LegEnd::kCompleted: ++rs.completed; break;
          case LegEnd::kGoingAway:
            ++rs.going_away;
            if (leg.final_events) ++rs.going_away_final_events;
            break;
          case LegEnd::kCutOff: ++rs.cut_off; break;
          case LegEnd::kOther: ++rs.other; break;
        }
      }
    }
    r.frames_out_of_order += s->out_of_order_;
    r.frames_unmeasured += s->unmeasured_;
    r.vad_after_last_frame += s->after_last_;
    r.speech_events += s->speech_events_;
    r.overloads += s->overloads_;
    r.turns += s->turns_;
    r.transcripts += s->transcripts_;
    r.replies_started += s->replies_started_;
    r.replies_done += s->replies_done_;
    r.replies_interrupted += s->replies_interrupted_;
    r.overload_dropped_messages += s->overload_dropped_;
    for (const auto& [code, n] : s->errors_) r.errors[code] += n;
    window_msgs += s->window_msgs_;
    if (s->messages_ > 1) {
      const double audio_s = static_cast<double>(s->messages_) * spec.chunk_ms / 1000.0;
      const double wall = std::chrono::duration<double>(s->last_send_ - s->first_send_ + plan.period).count();
      const double factor = audio_s / wall;
      r.realtime_factor_min = factor_n == 0 ? factor : std::min(r.realtime_factor_min, factor);
      factor_sum += factor;
      ++factor_n;
      first_any = std::min(first_any, s->first_send_);
      last_any = std::max(last_any, s->last_send_);
    }
  }
  r.audio_sent_s = static_cast<double>(r.messages_sent) * spec.chunk_ms / 1000.0;
  r.realtime_factor_mean = factor_n > 0 ? factor_sum / factor_n : 0.0;
  if (spec.seconds > spec.ramp_s + 1.0) {
    r.send_rate_msgs_per_s = static_cast<double>(window_msgs) / (spec.seconds - spec.ramp_s);
  } else if (factor_n > 0) {
    r.send_rate_msgs_per_s =
        static_cast<double>(r.messages_sent) / std::chrono::duration<double>(last_any - first_any + plan.period).count();
  }
  for (const auto& loop : loops) {
    r.latency.merge(loop->latency_us);
    r.send_lag.merge(loop->send_lag_us);
    r.latency_before_split.merge(loop->before_us);
    r.latency_after_split.merge(loop->after_us);
    r.first_audio.merge(loop->first_audio_us);
    for (const auto& [name, h] : loop->by_replica_us) {
      r.replicas[name].latency.merge(h.all);
      r.replicas[name].latency_before_split.merge(h.before);
    }
  }
  return r;
}

}  // namespace brisvox::loadtest
