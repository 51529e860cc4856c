#include "server/tts_http.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/write.hpp>
#include <cstring>

#include "brisvox/audio/pcm.h"
#include "brisvox/audio/wav_writer.h"
#include "brisvox/error.h"
#include "server/base64.h"
#include "server/hangup_watch.h"
#include "server/query_params.h"
#include "server/request_tag.h"
#include "server/server_log.h"
#include "server/tts_admission.h"
#include "server/tts_params.h"

namespace brisvox::server {

namespace {

// OpenAI's speech events (stream_format "sse"): the audio base64 in speech.audio.delta, then
// speech.audio.done. Its usage counts tokens; Piper has none: zeros.
std::string speech_delta_event(std::string_view audio) {
  return "data: {\"type\":\"speech.audio.delta\",\"audio\":\"" + base64_encode(audio) + "\"}\n\n";
}

std::string speech_done_event() {
  return "data: {\"type\":\"speech.audio.done\",\"usage\":{\"input_tokens\":0,\"output_tokens\":0,"
         "\"total_tokens\":0}}\n\n";
}

}  // namespace

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

TtsHttpExchange::TtsHttpExchange(beast::tcp_stream& stream, ServerContext& ctx, Request request, Finish finish)
    : stream_(stream), ctx_(ctx), request_(std::move(request)), finish_(std::move(finish)) {}

TtsHttpExchange::~TtsHttpExchange() {
  if (wakeup_) wakeup_->detach();
  speech_.close();
  if (registered_) ctx_.sessions.remove(id_);
  if (counted_) ctx_.jobs_in_flight.fetch_sub(1);
}

Response TtsHttpExchange::json_error(int status, std::string_view code, std::string_view message) {
  ctx_.metrics.count_error(code);
  Response res = error_response(request_, static_cast<http::status>(status), code, message);
  add_cors_headers(ctx_, request_, res);
  return res;
}

void TtsHttpExchange::start() {
  self_ = shared_from_this();
  try {
    check_tts_post_query(target_query(to_sv(request_.target())));
    params_ = parse_tts_body(request_.body());
  } catch (const Error& e) {
    answer(json_error(400, "bad_request", e.what()), true);
    return;
  }
  wakeup_ = std::make_shared<EngineWakeup>(stream_.get_executor(), ctx_.gate);
  TtsAdmission a = open_tts_speech(ctx_, params_.options, wakeup_->callback());
  if (a.refusal) {
    answer(json_error(a.refusal->status, a.refusal->code, a.refusal->message), true);
    return;
  }
  speech_ = std::move(a.speech);
  wakeup_->attach(std::weak_ptr<EngineListener>(self_));
  try {
    if (!params_.options.raw) check_container_rate(params_.options.container, speech_.sample_rate_hz());
    utterance_ = speech_.speak(params_.text);
  } catch (const Error& e) {
    const Refusal r = tts_refusal(e);
    answer(json_error(r.status, r.code, r.message), true);
    return;
  }
  accepted_ = std::chrono::steady_clock::now();
  ctx_.tts_metrics.http_requests.fetch_add(1, std::memory_order_relaxed);
  // HTTP/1.0 has no chunked encoding: raw audio is then sent whole, as a WAV is.
  streaming_ = params_.options.raw && request_.version() >= 11;
  id_ = ctx_.next_session_id.fetch_add(1);
  ctx_.sessions.add(id_, weak_from_this());
  registered_ = true;
  ctx_.jobs_in_flight.fetch_add(1);
  counted_ = true;
  // A client that leaves before its answer stops the synthesis (a WAV of 20 000 characters would
  // otherwise keep a worker for minutes, for nobody).
  hangup_ = HangupWatch::start(stream_.socket(), [weak = weak_from_this()] {
    if (auto self = weak.lock(); self && !self->done_) {
      log_server("tts request {}: the client went away before its answer: the synthesis stops ({:.2f} s of audio made)",
                 self->id_, static_cast<double>(self->samples_) / self->speech_.sample_rate_hz());
      self->ctx_.metrics.count_error("client_gone");
      self->answer(std::nullopt, false);
    }
  });
  pump();
}

void TtsHttpExchange::on_engine_events() { pump(); }

void TtsHttpExchange::abort() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->done_) return;
    log_server("tts request {}: aborted: the drain deadline passed", self->id_);
    self->answer(std::nullopt, false);
  });
}

void TtsHttpExchange::pump() {
  Event e;
  while (!done_ && !writing_ && speech_.poll(std::span(&e, 1)) == 1) handle(e);
}

void TtsHttpExchange::record_first_audio() {
  if (first_audio_recorded_) return;
  first_audio_recorded_ = true;
  ctx_.tts_metrics.first_audio.record(
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - accepted_).count());
}

void TtsHttpExchange::handle(const Event& e) {
  const int rate = speech_.sample_rate_hz();
  switch (e.type) {
    case EventType::kTtsAudio: {
      const std::vector<float> samples = speech_.read_audio_payload(e);
      std::vector<std::int16_t> pcm(samples.size());
      std::ranges::transform(samples, pcm.begin(), float_to_s16);  // as piper-tts writes its audio
      samples_ += pcm.size();
      sentences_ = e.speech.sentence_count;
      ctx_.tts_metrics.add_audio(pcm.size(), rate);
      if (!streaming_) {
        whole_.insert(whole_.end(), pcm.begin(), pcm.end());
        return;
      }
      std::string bytes(reinterpret_cast<const char*>(pcm.data()), pcm.size() * sizeof(std::int16_t));
      pieces_.push_back(params_.options.sse ? speech_delta_event(bytes) : std::move(bytes));
      write_next();
      return;
    }
    case EventType::kTtsEnd: {
      ctx_.tts_metrics.utterances_done.fetch_add(1, std::memory_order_relaxed);
      if (streaming_) {
        if (params_.options.sse) pieces_.push_back(speech_done_event());
        last_queued_ = true;
        write_next();
        return;
      }
      record_first_audio();
      Response res{http::status::ok, request_.version()};
      res.set(http::field::server, "brisvox/" BRISVOX_VERSION);
      res.set(http::field::cache_control, "no-store");
      res.set("X-Brisvox-Sample-Rate", std::to_string(rate));
      res.set("X-Brisvox-Sentences", std::to_string(sentences_));
      res.keep_alive(request_.keep_alive());
      if (params_.options.raw) {  // HTTP/1.0
        res.set(http::field::content_type, "application/octet-stream");
        res.set("X-Brisvox-Encoding", "pcm_s16le");
        res.body().assign(reinterpret_cast<const char*>(whole_.data()), whole_.size() * sizeof(std::int16_t));
      }
      if (!params_.options.raw) {
        const AudioContainer container = params_.options.container;
        std::vector<std::byte> file;
        try {
          file = encode_audio(whole_, rate, container);
        } catch (const Error& failure) {  // the rate was checked at the start: libsndfile failed
          const Refusal r = tts_refusal(failure);
          answer(json_error(r.status, r.code, r.message), true);
          return;
        }
        res.set(http::field::content_type, std::string(content_type(container)));
        res.body().assign(reinterpret_cast<const char*>(file.data()), file.size());
      }
      if (params_.options.sse) {  // the whole answer as one delta, then the end
        res.set(http::field::content_type, "text/event-stream");
        res.body() = speech_delta_event(res.body()) + speech_done_event();
      }
      res.prepare_payload();
      add_cors_headers(ctx_, request_, res);
      answer(std::move(res), request_.keep_alive());
      return;
    }
    case EventType::kError:
    case EventType::kTtsCancelled: {
      ctx_.tts_metrics.utterances_failed.fetch_add(1, std::memory_order_relaxed);
      const std::string why = e.type == EventType::kError ? speech_.last_error() : "the synthesis was cancelled";
      const ErrorCode code = e.type == EventType::kError ? e.error_code : ErrorCode::kClosed;
      if (!header_sent_) {
        const Refusal r = tts_refusal(Error(code, why));
        answer(json_error(r.status, r.code, r.message), true);
        return;
      }
      // The status line is gone: end the connection without the last chunk (a truncated answer).
      ctx_.metrics.count_error(to_string(code));
      log_server("tts request {}: failed after {:.2f} s of audio was sent: {}", id_,
                 static_cast<double>(samples_) / rate, why);
      answer(std::nullopt, false);
      return;
    }
    default:
      return;
  }
}

void TtsHttpExchange::write_next() {
  if (writing_ || done_) return;
  stream_.expires_after(std::chrono::seconds(ctx_.config.limits.http_timeout_s));
  auto handler = [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_written(ec); };
  if (!header_sent_) {
    header_ = http::response<http::empty_body>{http::status::ok, request_.version()};
    header_.set(http::field::server, "brisvox/" BRISVOX_VERSION);
    header_.set(http::field::content_type, params_.options.sse ? "text/event-stream" : "application/octet-stream");
    header_.set(http::field::cache_control, "no-store");
    header_.set("X-Brisvox-Sample-Rate", std::to_string(speech_.sample_rate_hz()));
    header_.set("X-Brisvox-Encoding", "pcm_s16le");
    header_.keep_alive(request_.keep_alive());
    header_.chunked(true);
    // The client's ?tag=, as HttpSession::send() adds it to every answer it writes itself.
    if (const std::string tag = tag_of_target(to_sv(request_.target())); !tag.empty()) {
      header_.set(boost::beast::string_view(kTagHeader.data(), kTagHeader.size()), tag);
    }
    Response cors;  // the CORS headers, copied onto the chunked header
    add_cors_headers(ctx_, request_, cors);
    for (const auto& field : cors) header_.set(field.name_string(), field.value());
    serializer_.emplace(header_);
    header_sent_ = true;
    writing_ = true;
    http::async_write_header(stream_, *serializer_, std::move(handler));
    return;
  }
  if (!pieces_.empty()) {
    writing_piece_ = std::move(pieces_.front());
    pieces_.pop_front();
    record_first_audio();
    writing_ = true;
    net::async_write(stream_,
                     http::make_chunk(net::buffer(writing_piece_.data(), writing_piece_.size())),
                     std::move(handler));
    return;
  }
  if (last_queued_) {
    last_queued_ = false;
    writing_ = true;
    net::async_write(stream_, http::make_chunk_last(), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->writing_ = false;
      if (ec) {
        self->answer(std::nullopt, false);
        return;
      }
      self->answer(std::nullopt, self->request_.keep_alive());
    });
  }
}

void TtsHttpExchange::on_written(beast::error_code ec) {
  writing_ = false;
  if (ec) {
    log_server("tts request {}: the client went away: {}", id_, ec.message());
    answer(std::nullopt, false);
    return;
  }
  write_next();
  pump();  // room again: take the next events
}

void TtsHttpExchange::answer(std::optional<Response> response, bool keep_alive) {
  if (done_) return;
  done_ = true;
  if (hangup_) hangup_->stop();  // no write is pending here: the answer is still to be written
  if (wakeup_) wakeup_->detach();
  speech_.close();
  Finish finish = std::move(finish_);
  auto keep = std::move(self_);  // freed when this returns (and the last handler has run)
  if (finish) finish(std::move(response), keep_alive);
}

}  // namespace brisvox::server
