#include "server/realtime_handler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "brisvox/error.h"
#include "brisvox/plural.h"
#include "server/engine_retry.h"
#include "server/openai_api.h"
#include "server/query_params.h"
#include "server/request_tag.h"

namespace brisvox::server {

namespace beast = boost::beast;

namespace {

// OpenAI refuses to commit less than this (input_audio_buffer_commit_empty).
constexpr double kMinCommitMs = 100.0;
// Client messages that may wait for an end: reading is paused while one is pending, so only a
// message already being read can come; more is a defect, not a client's doing.
constexpr std::size_t kMaxDeferred = 16;


// `continues`: the session's open stream, when this one replaces it. A session admitted once is
// not refused again for the engine's load when an update or a commit gives it a new stream.
Stream open_engine_stream(ServerContext& ctx, const RealtimeSession& session, std::function<void()> on_events,
                          const Stream& continues = Stream()) {
  StreamConfig config =
      realtime_stream_config(ctx.engine.config(), session, ctx.config.realtime_partial_ms, ctx.config.stt_window);
  config.buffer_ms = ctx.config.limits.engine_buffer_ms;
  config.on_events = std::move(on_events);
  return continues ? ctx.engine.open_stream(config, continues) : ctx.engine.open_stream(config);
}

// What the engine does with two sessions' audio, and how its events become items, is the same:
// only the name of the same model differs.
bool same_pipeline(const ServerContext& ctx, const RealtimeSession& a, const RealtimeSession& b) {
  const EngineConfig& engine = ctx.engine.config();
  // Who ends items (the VAD, Smart Turn, the client) changes how the stream's events are read.
  if (a.turn_detection.has_value() != b.turn_detection.has_value()) return false;
  if (a.turn_detection && a.turn_detection->type != b.turn_detection->type) return false;
  const StreamConfig x = realtime_stream_config(engine, a, ctx.config.realtime_partial_ms, ctx.config.stt_window);
  const StreamConfig y = realtime_stream_config(engine, b, ctx.config.realtime_partial_ms, ctx.config.stt_window);
  if (a.encoding != b.encoding || x.sample_rate_hz != y.sample_rate_hz) return false;
  if (x.vad.params.threshold != y.vad.params.threshold || x.vad.params.speech_pad_ms != y.vad.params.speech_pad_ms ||
      x.vad.params.min_silence_ms != y.vad.params.min_silence_ms) {
    return false;
  }
  if (x.turn.has_value() != y.turn.has_value() ||
      (x.turn && x.turn->params.max_silence_ms != y.turn->params.max_silence_ms)) {
    return false;
  }
  if (x.stt.has_value() != y.stt.has_value()) return false;
  return !x.stt || (x.stt->model == y.stt->model && x.stt->decode.language == y.stt->decode.language &&
                    x.stt->decode.prompt == y.stt->decode.prompt &&
                    x.stt->partial_interval_ms == y.stt->partial_interval_ms);
}

// The first configured model of a family (Whisper: a session's transcription model until the
// client names one).
std::optional<std::string> first_model(const EngineConfig& engine, ModelFamily family) {
  for (const ModelSpec& m : engine.models) {
    if (m.family == family) return m.name;
  }
  return std::nullopt;
}

std::optional<std::string> default_stt_model(const EngineConfig& engine) {
  return first_model(engine, ModelFamily::kWhisper);
}

std::string trimmed(std::string_view s) {
  const auto begin = s.find_first_not_of(" \t\n");
  if (begin == std::string_view::npos) return {};
  const auto end = s.find_last_not_of(" \t\n");
  return std::string(s.substr(begin, end - begin + 1));
}

// The error type OpenAI's clients see for a failure of the connection: the client's doing, or
// the server's.
std::string_view failure_type(std::string_view code) {
  if (code == "overloaded" || code == "internal" || code == "shutting_down") return "server_error";
  return "invalid_request_error";
}

}  // namespace

StreamConfig realtime_stream_config(const EngineConfig& engine, const RealtimeSession& session, int partial_ms,
                                    WhisperWindow window) {
  StreamConfig c;
  c.sample_rate_hz = session.sample_rate_hz;
  // With turn_detection null the client's commits end items, but the VAD still finds the speech
  // in them (Whisper is given speech, not silence), with OpenAI's default parameters.
  const RealtimeVad vad = session.turn_detection.value_or(RealtimeVad{});
  c.vad.params.threshold = vad.threshold;
  c.vad.params.speech_pad_ms = vad.prefix_padding_ms;
  c.vad.params.min_silence_ms = vad.silence_duration_ms;
  if (vad.type == RealtimeVad::Type::kSemanticVad) {
    const std::optional<std::string> turn_model = first_model(engine, ModelFamily::kSmartTurn);
    if (!turn_model) {
      throw Error(ErrorCode::kInvalidArgument,
                  "turn_detection semantic_vad needs Smart Turn: start the server with --turn-model v3.2");
    }
    TurnOptions turn;
    turn.model = *turn_model;
    turn.params.threshold = vad.threshold;
    // OpenAI's eagerness is the longest wait for the end of a turn Smart Turn calls incomplete.
    turn.params.max_silence_ms = vad.eagerness == "low" ? 8000 : vad.eagerness == "high" ? 2000 : 4000;
    c.turn = turn;
  }
  if (session.transcription) {
    const std::optional<std::string> model = map_model_name(engine, ModelFamily::kWhisper, session.transcription->model);
    if (!model) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("this server has no transcription model '{}': use whisper-1, gpt-4o-transcribe, "
                              "gpt-4o-mini-transcribe or a model GET /v1/models lists{}",
                              session.transcription->model,
                              default_stt_model(engine) ? "" : " (it was started without --stt-model)"));
    }
    SttOptions stt;
    stt.model = *model;
    stt.window = window;
    // Without a language a multilingual model detects it (on the session's first item).
    stt.decode.language = session.transcription->language;
    if (session.transcription->prompt.find_first_not_of(" \t\r\n") != std::string::npos) {
      if (!model_takes_prompt(engine, *model)) throw Error(ErrorCode::kInvalidArgument, std::string(kNoPromptRoom));
      stt.decode.prompt = session.transcription->prompt;
    }
    // OpenAI's whisper-1 sends an item's transcript as one delta; its other models send it as it
    // comes, which brisvox's partial transcripts give.
    if (session.transcription->model != "whisper-1") stt.partial_interval_ms = partial_ms;
    c.stt = std::move(stt);
  }
  c.validate();
  return c;
}

RealtimeHandler::RealtimeHandler(ServerContext& ctx, const boost::asio::any_io_executor& strand, std::string tag,
                                 RealtimeSession session, Stream stream, std::function<void()> on_events)
    : ctx_(ctx),
      tag_(std::move(tag)),
      session_(std::move(session)),
      stream_(std::move(stream)),
      on_events_(std::move(on_events)),
      ingress_(std::make_unique<AudioIngress>(ctx, session_.encoding, session_.sample_rate_hz)),
      retry_timer_(strand) {}

RealtimeHandler::~RealtimeHandler() {
  stream_.close();
  next_stream_.close();
  ingress_->discard(AudioLoss::kDisconnected);
}

WsSettings RealtimeHandler::settings() const {
  const ServerLimits& l = ctx_.config.limits;
  WsSettings s;
  s.kind = "realtime";
  s.tag = tag_;
  s.read_chunk_bytes = ingress_->read_chunk_bytes() * 2;  // base64: 4 characters per 3 bytes
  s.text = {l.max_message_bytes,
            fmt::format("a client event is larger than {} bytes (send the audio in smaller "
                        "input_audio_buffer.append events)",
                        l.max_message_bytes)};
  s.binary = {l.max_message_bytes, "the Realtime API has no binary messages"};
  s.pings_are_activity = false;
  return s;
}

std::string RealtimeHandler::error_report(std::string_view code, const std::string& message) {
  return realtime_error(next_event_id(), failure_type(code), RealtimeProblem{std::string(code), message, ""});
}

void RealtimeHandler::on_open() {
  WsConnection& c = connection();
  ctx_.metrics.websocket_sessions_active.fetch_add(1);
  ctx_.metrics.websocket_sessions_total.fetch_add(1);
  c.log("realtime {} open: {}, {} Hz {}, model {} Hz, transcription {}", c.id(), c.peer(), session_.sample_rate_hz,
        to_string(session_.encoding), stream_.model_rate_hz(),
        session_.transcription ? session_.transcription->model : std::string("off"));
  send(realtime_session_event("session.created", next_event_id(), session_, fmt::format("sess_{}", c.id())));
}

// --- the client's events --------------------------------------------------------------------------

void RealtimeHandler::on_text(std::string message) {
  if (end_ == End::kClose) return;
  if (end_ != End::kNone || has_backlog() || !deferred_.empty()) {
    // Reading is paused while one waits; only a message already being read can come.
    if (deferred_.size() >= kMaxDeferred) {
      connection().fail("internal", kCloseInternal, "too many client events arrived while reading was paused");
      return;
    }
    deferred_.push_back(std::move(message));
    advance();
    return;
  }
  handle_client(message);
  advance();
}

void RealtimeHandler::on_binary(std::span<const std::byte> /*chunk*/, bool last) {
  if (!last) return;
  send_error("invalid_request_error",
             RealtimeProblem{"invalid_value",
                             "The Realtime API takes JSON text messages only: send audio as input_audio_buffer.append "
                             "{\"audio\": BASE64}.",
                             ""});
}

void RealtimeHandler::handle_client(const std::string& text) {
  RealtimeClientEvent ev = parse_realtime_event(text, session_);
  if (ev.problem) {
    ctx_.metrics.count_error("bad_control");
    send_error("invalid_request_error", *ev.problem, ev.event_id);
    return;
  }
  switch (ev.type) {
    case RealtimeClientType::kAppend:
      // Given to the ingress a read chunk at a time (advance()), as /v1/stream's binary messages are.
      backlog_ = std::move(ev.audio);
      backlog_pos_ = 0;
      break;
    case RealtimeClientType::kCommit:
      commit(ev.event_id);
      break;
    case RealtimeClientType::kClear:
      clear();
      break;
    case RealtimeClientType::kSessionUpdate:
      update(ev.session, ev.event_id);
      break;
  }
}

void RealtimeHandler::commit(const std::string& client_event_id) {
  if (!speech_open() && buffer_ms() < kMinCommitMs) {
    send_error("invalid_request_error",
               RealtimeProblem{"input_audio_buffer_commit_empty",
                               fmt::format("Error committing input audio buffer: buffer too small. Expected at least "
                                           "100ms of audio, but buffer only has {:.2f}ms of audio.",
                                           buffer_ms()),
                               ""},
               client_event_id);
    return;
  }
  if (!session_.turn_detection) {
    // The buffer's item (segments so far, and the one the flush ends) is committed now and
    // completed when its last transcript is in.
    Item& item = uncommitted_item();
    send(realtime_committed(next_event_id(), item.id, last_committed_id_));
    last_committed_id_ = item.id;
  } else if (!speech_open()) {
    // Audio the VAD heard no speech in: an item of its own, with an empty transcript.
    Item& item = new_item();
    commit_item_id_ = item.id;
    send(realtime_committed(next_event_id(), item.id, last_committed_id_));
    last_committed_id_ = item.id;
  }
  // With speech in progress its end (the flush's) commits its item, as the VAD would have.
  buffer_start_samples_ = stream_samples_;
  end_ = End::kCommit;
}

void RealtimeHandler::clear() {
  // The audio not yet given to the engine goes; what it has is flushed, and the speech in
  // progress (or the uncommitted buffer's item) is dropped when it ends. Items already committed
  // keep their transcripts.
  ingress_->discard(AudioLoss::kReset);
  ingress_->reset_decoder();
  backlog_.clear();
  backlog_pos_ = 0;
  if (Item* item = find_item(speech_open() ? speaking_id_ : uncommitted_id_)) item->discarded = true;
  end_ = End::kClear;
}

void RealtimeHandler::update(const RealtimeSession& next, const std::string& client_event_id) {
  const std::string session_id = fmt::format("sess_{}", connection().id());
  if (next.transcription &&
      !map_model_name(ctx_.engine.config(), ModelFamily::kWhisper, next.transcription->model)) {
    send_error("invalid_request_error",
               RealtimeProblem{"model_not_found",
                               fmt::format("The transcription model '{}' does not exist on this server: use "
                                           "whisper-1, gpt-4o-transcribe, gpt-4o-mini-transcribe or a model "
                                           "GET /v1/models lists.",
                                           next.transcription->model),
                               "session.audio.input.transcription.model"},
               client_event_id);
    return;
  }
  try {
    if (same_pipeline(ctx_, session_, next)) {
      session_ = next;
      send(realtime_session_event("session.updated", next_event_id(), session_, session_id));
      return;
    }
  } catch (const Error& e) {
    send_error("invalid_request_error", RealtimeProblem{"invalid_value", e.what(), "session"}, client_event_id);
    return;
  }
  Stream opened;
  try {
    opened = open_engine_stream(ctx_, next, on_events_, stream_);
  } catch (const Error& e) {
    send_error(engine_busy(e) ? "server_error" : "invalid_request_error",
               RealtimeProblem{std::string(to_string(e.code())), e.what(), "session"}, client_event_id);
    return;
  }
  const bool untouched = stream_samples_ == 0 && segments_.empty() && !speech_open() && uncommitted_id_.empty();
  next_session_ = next;
  next_stream_ = std::move(opened);
  end_ = End::kUpdate;
  // Nothing was heard in this stream: the new one simply replaces it.
  if (untouched) finish_end();
}

// --- the engine side ------------------------------------------------------------------------------

void RealtimeHandler::advance() {
  WsConnection& c = connection();
  while (c.is_open()) {
    switch (ingress_->feed(stream_, c)) {
      case AudioIngress::Flow::kFailed:
        return;
      case AudioIngress::Flow::kHeld:
        arm_retry(kEngineRetryInterval);
        return;
      case AudioIngress::Flow::kClear:
        break;
    }
    if (has_backlog()) {
      const std::size_t n = std::min(ingress_->read_chunk_bytes(), backlog_.size() - backlog_pos_);
      const std::uint64_t before = ingress_->samples();
      if (auto failure = ingress_->receive(std::as_bytes(std::span(backlog_.data() + backlog_pos_, n)))) {
        c.fail(failure->code, failure->close_code, failure->message);
        return;
      }
      stream_samples_ += ingress_->samples() - before;
      backlog_pos_ += n;
      if (!has_backlog()) {
        backlog_.clear();
        backlog_pos_ = 0;
      }
      continue;
    }
    if (end_ != End::kNone || deferred_.empty()) break;
    std::string message = std::move(deferred_.front());
    deferred_.pop_front();
    handle_client(message);
  }
  if (!c.is_open()) return;
  if (end_ != End::kNone) {
    c.pause_reading();
    if (!flush_called_) {
      if (!stream_.can_flush()) {
        arm_retry(kEngineRetryInterval);
        return;
      }
      flush_called_ = true;
      stream_.flush();
    }
    return;
  }
  if (const auto wait = ingress_->pace(); wait.count() > 0) {
    c.pause_reading();
    arm_retry(wait);
    return;
  }
  c.resume_reading();
}

void RealtimeHandler::on_engine_events() {
  WsConnection& c = connection();
  if (!c.is_open()) return;
  Event events[32];
  for (std::size_t n; c.is_open() && (n = stream_.poll(events)) > 0;) {
    for (std::size_t i = 0; i < n && c.is_open(); ++i) handle_event(events[i]);
  }
  advance();
}

void RealtimeHandler::handle_event(const Event& e) {
  switch (e.type) {
    case EventType::kSpeechStart:
      if (session_.turn_detection && !speech_open()) {
        Item& item = new_item();
        speaking_id_ = item.id;
        send(realtime_speech_started(next_event_id(), timeline_ms(e.start_s), item.id));
      }
      segment_item_id_ = speaking_id_;
      break;
    case EventType::kTurnEnd:
      on_turn_end(e);
      break;
    case EventType::kSpeechEnd:
      on_segment_end(e);
      break;
    case EventType::kTranscript:
      on_segment_result(e, stream_.read_transcript(e));
      break;
    case EventType::kTranscriptPartial:
      on_partial(stream_.read_transcript(e));
      break;
    case EventType::kError:
      on_segment_result(e, std::nullopt);
      break;
    case EventType::kEndOfStream:
      on_end_of_stream();
      break;
    case EventType::kOverload:  // the ingress holds audio back; the Realtime API has no such event
    case EventType::kVadProbability:
    case EventType::kTurnIncomplete:  // Smart Turn waits on (up to the eagerness's timeout)
    case EventType::kTtsAudio:
    case EventType::kTtsEnd:
    case EventType::kTtsCancelled:
    case EventType::kTtsInterrupted:
    case EventType::kTtsMark:
    case EventType::kBargeIn:
      break;
  }
}

void RealtimeHandler::on_turn_end(const Event& e) {
  Item* item = find_item(speaking_id_);
  if (item == nullptr) return;  // a turn end with no item open: nothing was said
  speaking_id_.clear();
  if (!item->discarded) {
    send(realtime_speech_stopped(next_event_id(), timeline_ms(e.end_s), item->id));
    send(realtime_committed(next_event_id(), item->id, last_committed_id_));
    last_committed_id_ = item->id;
  }
  item->turn_over = true;
  // The turn's last segment may still be open (the VAD ends it after its own silence).
  if (segment_item_id_ != item->id) item->closed = true;
  const auto end_sample = static_cast<std::uint64_t>(std::llround(e.end_s * session_.sample_rate_hz));
  buffer_start_samples_ = std::max(buffer_start_samples_, std::min(end_sample, stream_samples_));
  complete_items();
}

void RealtimeHandler::on_segment_end(const Event& e) {
  Item* item = nullptr;
  const bool semantic = session_.turn_detection && session_.turn_detection->type == RealtimeVad::Type::kSemanticVad;
  if (semantic) {
    // Segments are parts of the turn they began in; the turn's end (Smart Turn's) ends the item.
    item = find_item(segment_item_id_);
    if (item == nullptr) item = &new_item();  // an end without its start: cannot happen, but stays whole
    if (item->turn_over) item->closed = true;
  } else if (session_.turn_detection) {
    item = find_item(speaking_id_);
    if (item == nullptr) item = &new_item();  // an end without its start: cannot happen, but stays whole
    speaking_id_.clear();
    if (!item->discarded) {
      send(realtime_speech_stopped(next_event_id(), timeline_ms(e.end_s), item->id));
      send(realtime_committed(next_event_id(), item->id, last_committed_id_));
      last_committed_id_ = item->id;
    }
    item->closed = true;
    // The buffer empties at the end of speech; what came after it stays in it.
    const auto end_sample = static_cast<std::uint64_t>(std::llround(e.end_s * session_.sample_rate_hz));
    buffer_start_samples_ = std::max(buffer_start_samples_, std::min(end_sample, stream_samples_));
  } else {
    item = &uncommitted_item();
  }
  segment_item_id_.clear();
  item->seconds += e.end_s - e.start_s;
  if (stream_.config().stt) {
    ++item->segments_due;
    segments_.push_back(Segment{e.start_s, e.end_s, item->id});
  }
  complete_items();
}

void RealtimeHandler::on_segment_result(const Event& e, const std::optional<Transcript>& transcript) {
  const bool matches = !segments_.empty() && segments_.front().start_s == e.start_s && segments_.front().end_s == e.end_s;
  if (!matches) {
    if (e.type == EventType::kError) {
      // A failed VAD run: the frame counted as silence and the session goes on.
      const std::string_view code = to_string(e.error_code);
      ctx_.metrics.count_error(code);
      send_error("server_error", RealtimeProblem{std::string(code), stream_.last_error(), ""});
    }
    return;
  }
  const Segment segment = segments_.front();
  segments_.pop_front();
  Item* item = find_item(segment.item_id);
  if (item == nullptr) return;
  --item->segments_due;
  if (e.type == EventType::kTranscript && transcript) {
    const std::string text = trimmed(transcript->text);
    if (!text.empty()) item->text += item->text.empty() ? text : " " + text;
  } else {
    item->failed = true;
    item->error_code = e.type == EventType::kError ? std::string(to_string(e.error_code)) : "internal";
    item->error_message = e.type == EventType::kError
                              ? stream_.last_error()
                              : "the transcript was dropped: the session fell behind reading its events";
    ctx_.metrics.count_error(item->error_code);
  }
  complete_items();
}

void RealtimeHandler::on_partial(const std::optional<Transcript>& partial) {
  // The open segment's item: the speech (server_vad) or turn (semantic_vad) in progress, or the
  // buffer's (turn_detection null).
  Item* item = session_.turn_detection ? find_item(segment_item_id_) : &uncommitted_item();
  // An item's earlier segments' transcripts come first: until they have, its text so far is unknown.
  if (item == nullptr || item->discarded || item->segments_due > 0 || !partial) return;
  const std::string agreed = trimmed(partial->text);
  if (agreed.empty()) return;
  const std::string text = item->text.empty() ? agreed : item->text + " " + agreed;
  // Deltas only add: the agreed text grows within a segment, and a decode that contradicts it shows
  // it alone (docs/MODELS.md, "Partial transcripts").
  if (text.size() <= item->sent.size() || !text.starts_with(item->sent)) return;
  send(realtime_transcription_delta(next_event_id(), item->id, text.substr(item->sent.size())));
  item->sent = text;
}

void RealtimeHandler::complete_items() {
  const bool transcribing = stream_.config().stt.has_value();
  while (!items_.empty() && items_.front().closed && items_.front().segments_due == 0) {
    const Item& item = items_.front();
    if (!item.discarded && transcribing) {
      if (item.failed) {
        send(realtime_transcription_failed(next_event_id(), item.id, item.error_code, item.error_message));
      } else {
        // What the deltas have not said yet. Without partials (whisper-1) that is the whole text, the
        // one delta OpenAI's whisper-1 sends. Deltas that said words the final decode changed cannot
        // be taken back: completed's transcript is the one that counts.
        if (item.text.size() > item.sent.size() && item.text.starts_with(item.sent)) {
          send(realtime_transcription_delta(next_event_id(), item.id, item.text.substr(item.sent.size())));
        } else if (item.text != item.sent) {
          ctx_.metrics.realtime_deltas_revised.fetch_add(1, std::memory_order_relaxed);
        }
        send(realtime_transcription_completed(next_event_id(), item.id, item.text, item.seconds));
      }
      ++num_completed_;
    }
    items_.pop_front();
  }
}

void RealtimeHandler::on_end_of_stream() {
  finish_end();
  advance();
}

void RealtimeHandler::finish_end() {
  flush_called_ = false;
  offset_s_ = timeline_s(static_cast<double>(stream_samples_) / session_.sample_rate_hz);
  stream_samples_ = 0;
  buffer_start_samples_ = 0;
  segments_.clear();  // every transcript came before the end (none is due; defensive)
  if (Item* item = find_item(speaking_id_)) {
    // A turn Smart Turn had not ended when the stream did: the end of the stream ends it.
    if (!item->discarded) {
      send(realtime_speech_stopped(next_event_id(), timeline_ms(static_cast<double>(stream_samples_) /
                                                                session_.sample_rate_hz),
                                   item->id));
      send(realtime_committed(next_event_id(), item->id, last_committed_id_));
      last_committed_id_ = item->id;
    }
    item->closed = true;
  }
  if (Item* item = find_item(segment_item_id_)) item->closed = true;
  speaking_id_.clear();
  segment_item_id_.clear();
  const End done = end_;
  end_ = End::kNone;
  switch (done) {
    case End::kClose:
      connection().close(close_code_, close_reason_);
      return;
    case End::kCommit:
      if (Item* item = find_item(session_.turn_detection ? commit_item_id_ : uncommitted_id_)) item->closed = true;
      commit_item_id_.clear();
      uncommitted_id_.clear();
      break;
    case End::kClear:
      if (Item* item = find_item(uncommitted_id_)) {
        item->discarded = true;
        item->closed = true;
      }
      uncommitted_id_.clear();
      send(realtime_cleared(next_event_id()));
      break;
    case End::kUpdate:
      if (Item* item = find_item(uncommitted_id_); item != nullptr && next_session_->turn_detection) {
        // Its segments were heard without turn detection; with it, they are an item of their own.
        send(realtime_committed(next_event_id(), item->id, last_committed_id_));
        last_committed_id_ = item->id;
        item->closed = true;
        uncommitted_id_.clear();
      }
      break;
    case End::kNone:
      break;
  }
  complete_items();
  if (done == End::kUpdate) {
    stream_.close();
    stream_ = std::move(next_stream_);
    if (next_session_->encoding != session_.encoding || next_session_->sample_rate_hz != session_.sample_rate_hz) {
      ingress_->discard(AudioLoss::kReset);  // nothing is held after a flush; a partial sample at most
      ingress_ = std::make_unique<AudioIngress>(ctx_, next_session_->encoding, next_session_->sample_rate_hz);
    }
    session_ = *next_session_;
    next_session_.reset();
    send(realtime_session_event("session.updated", next_event_id(), session_,
                                fmt::format("sess_{}", connection().id())));
  } else {
    try {
      Stream next = open_engine_stream(ctx_, session_, on_events_, stream_);
      stream_.close();
      stream_ = std::move(next);
    } catch (const Error& e) {
      stream_.close();
      connection().fail(to_string(e.code()), engine_busy(e) ? kCloseTryLater : kCloseInternal, e.what());
    }
  }
}

void RealtimeHandler::arm_retry(std::chrono::microseconds delay) {
  if (retry_armed_) return;
  retry_armed_ = true;
  retry_timer_.expires_after(delay);
  retry_timer_.async_wait([self = connection().shared_from_this(), this](beast::error_code ec) {
    retry_armed_ = false;
    if (ec) return;
    on_engine_events();
  });
}

// --- items and the timeline -----------------------------------------------------------------------

RealtimeHandler::Item& RealtimeHandler::new_item() {
  Item& item = items_.emplace_back();
  item.id = fmt::format("item_{}_{}", connection().id(), ++num_items_);
  return item;
}

RealtimeHandler::Item* RealtimeHandler::find_item(const std::string& id) {
  if (id.empty()) return nullptr;
  const auto it = std::find_if(items_.begin(), items_.end(), [&](const Item& i) { return i.id == id; });
  return it == items_.end() ? nullptr : &*it;
}

RealtimeHandler::Item& RealtimeHandler::uncommitted_item() {
  if (Item* item = find_item(uncommitted_id_)) return *item;
  Item& item = new_item();
  uncommitted_id_ = item.id;
  return item;
}

std::string RealtimeHandler::next_event_id() { return fmt::format("event_{}", ++num_events_); }

void RealtimeHandler::send(std::string message) { connection().send(std::move(message)); }

void RealtimeHandler::send_error(std::string_view type, const RealtimeProblem& problem,
                                 const std::string& client_event_id) {
  send(realtime_error(next_event_id(), type, problem, client_event_id));
}

double RealtimeHandler::timeline_s(double stream_s) const { return std::round((offset_s_ + stream_s) * 1e7) / 1e7; }

long long RealtimeHandler::timeline_ms(double stream_s) const { return std::llround(timeline_s(stream_s) * 1000.0); }

double RealtimeHandler::buffer_ms() const {
  return static_cast<double>(stream_samples_ - buffer_start_samples_) * 1000.0 / session_.sample_rate_hz;
}

// --- ending ---------------------------------------------------------------------------------------

void RealtimeHandler::on_going_away() {
  // Audio already read is transcribed and its items completed; nothing more is read.
  deferred_.clear();
  if (end_ == End::kUpdate) next_stream_.close();
  end_ = End::kClose;
  close_code_ = kCloseGoingAway;
  close_reason_ = "going away";
  advance();
}

void RealtimeHandler::on_closing() { retry_timer_.cancel(); }

void RealtimeHandler::on_closed(std::string_view why, bool opened) {
  retry_timer_.cancel();
  stream_.close();
  next_stream_.close();
  ingress_->discard(connection().ending());
  if (!opened) return;
  ctx_.metrics.websocket_sessions_active.fetch_sub(1);
  const WsConnection& c = connection();
  c.log("realtime {} closed: {}, {:.2f} s of audio, {}", c.id(),
        why.empty() ? fmt::format("code {}{}{}", c.close_code(), c.close_reason().empty() ? "" : " ", c.close_reason())
                    : std::string(why),
        offset_s_ + static_cast<double>(stream_samples_) / session_.sample_rate_hz,
        count_of(num_completed_, "transcript"));
}

// --- admission ------------------------------------------------------------------------------------

std::optional<Refusal> RealtimeEndpoint::parse(const Request& upgrade) {
  try {
    const QueryParams params = parse_query_string(target_query(to_sv(upgrade.target())));
    std::string intent;
    for (const auto& [key, value] : params) {
      if (key == "intent") {
        intent = value;
      } else if (key == "tag") {
        tag_ = parse_tag(value);
      } else if (key != "model" && key != "token") {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("unknown query key '{}' (expected intent, model, tag, token)", key));
      }
    }
    if (intent != "transcription") {
      return Refusal{400, "bad_request",
                     "brisvox serves Realtime transcription sessions: connect with ?intent=transcription "
                     "(conversation sessions, which answer with a model's speech, are not offered)"};
    }
  } catch (const Error& e) {
    return Refusal{400, "bad_request", e.what()};
  }
  if (const auto model = default_stt_model(ctx_.engine.config())) session_.transcription = RealtimeTranscription{*model, "", ""};
  return std::nullopt;
}

std::variant<std::unique_ptr<WsHandler>, Refusal> RealtimeEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                         std::function<void()> on_events) {
  Stream stream;
  try {
    stream = open_engine_stream(ctx_, session_, on_events);
  } catch (const Error& e) {
    if (engine_busy(e)) return Refusal{503, std::string(to_string(e.code())), e.what()};
    return Refusal{500, "internal", e.what()};
  }
  return std::make_unique<RealtimeHandler>(ctx_, strand, std::move(tag_), std::move(session_), std::move(stream),
                                           std::move(on_events));
}

}  // namespace brisvox::server
