// How an engine is set up (a registry of named models) and what a stream asks of it (a pipeline of
// stages). Plain structs with defaults and units in the names; validate() throws
// Error(kInvalidArgument) naming the field.
//
//   EngineConfig config;                                  // one model: "vad", Silero v6
//   config.models.push_back(ModelSpec::smart_turn("v3.2"));  // "turn", the bundled v3.2
//   StreamConfig stream;
//   stream.turn = TurnOptions{};                            // vad -> turn
//
// Models. Each registry entry is one model file served by its own pool of worker threads (which
// share one ONNX Runtime session), batching the work of every stream that uses it. Streams refer
// to a model by its name. Two kinds of work exist, and one pool implementation serves both
// (src/engine/pool/batch_pool.h): frame-synchronous recurrent models (Silero: per-stream state, one
// frame per stream per run) and request models (Smart Turn: a clip in, a verdict out).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "brisvox/models/stt/whisper_fallback.h"
#include "brisvox/models/stt/whisper_features.h"
#include "brisvox/models/stt/whisper_search.h"
#include "brisvox/models/turn/turn_detector.h"
#include "brisvox/models/vad/segmenter_params.h"
#include "brisvox/runtime/session_config.h"

namespace brisvox {

enum class ModelFamily {
  kSileroVad,  // frame-synchronous: Silero VAD v5/v6 (resolve_vad_model aliases or a path)
  kSmartTurn,  // requests: Smart Turn v3.x end-of-turn analyses (resolve_turn_model: "v3.2" or a path)
  kWhisper,    // requests of several steps: Whisper speech-to-text (an encoder run, then decoder
               // steps batched across every segment being decoded)
  kPiperTts,   // requests of several steps: Piper text-to-speech, one sentence per step (speech.h)
};

std::string_view to_string(ModelFamily family) noexcept;  // "silero_vad", "smart_turn", "whisper", "piper_tts"

struct ModelSpec {
  std::string name;  // how streams refer to it (StreamConfig stages); unique in the registry
  ModelFamily family = ModelFamily::kSileroVad;
  std::string path;  // model file, or an alias the family knows (Silero: v5, v6, ...)
  // Worker threads of this model. They run one ONNX Runtime session (session.share, on by default
  // here): one copy of the weights however many workers. 0: the family's default (Silero: one
  // per core; Smart Turn: 1).
  int num_workers = 0;
  // Items per model run (frames, analyses). 0: the family's default (Silero 32, Smart Turn 4).
  int max_batch = 0;
  // How long a worker waits for a fuller batch (it never waits for more items than could come).
  // -1: the family's default (Silero 2000 us; Smart Turn 0).
  int max_gather_wait_us = -1;
  // Request models: requests in flight across all streams (each holds its input, e.g. 8 s of
  // audio for Smart Turn); a stream whose request finds none free waits for one. 0: the family's
  // default (Smart Turn 16; Whisper: num_workers x max_batch, its decoder lanes). Ignored by
  // frame-synchronous models. Piper: speech sessions open at once (each holds its payload
  // channel); default 256.
  int max_pending = 0;
  // Threads, execution providers. share is on: the workers of one model run one ONNX Runtime
  // session, the weights once per process (docs/PERFORMANCE.md, "One session for a model's workers").
  SessionConfig session = [] {
    SessionConfig c;
    c.share = true;
    return c;
  }();
  // The deadline of one of this model's runs (see EngineConfig::run_timeout_ms). -1: the
  // engine's run_timeout_ms (Whisper: at least 60000, a batch of full-window encoder runs takes
  // seconds; Piper: at least 20000, a sentence of 2048 phoneme ids takes about 5 s of one core);
  // 0: no deadline for this model; else 10 to 600000.
  int run_timeout_ms = -1;
  // The family's own settings of this model, by name (docs/MODELS.md). Piper: "config" (the voice's
  // JSON, VOICE.onnx.json beside the model by default), and the session defaults "noise_scale",
  // "length_scale", "noise_w_scale", "speaker_id" (the voice's own unless given; a session's
  // SpeechConfig::voice_options override them). Whisper: "max_width", the most sequences a segment
  // may be decoded as (a stream's beam_size or best_of; 1 to 16, default 1): each worker's decoder
  // then has max_batch x max_width lanes; "prompt_tokens", the longest prompt plus hotwords a
  // stream may give, in tokens (0 to 446, default 0: none): each lane then holds that many more
  // positions (a decoder step reads them all: ~15 % more per step at 223). Other families take none. Checked when the engine
  // starts (Error(kInvalidArgument) naming the option).
  std::map<std::string, std::string, std::less<>> options;

  // The registry entries brisvox knows how to build.
  static ModelSpec silero_vad(std::string path = "v6", std::string name = "vad");
  // A Smart Turn v3.x file or an alias (resolve_turn_model: "v3.2" is the bundled one).
  static ModelSpec smart_turn(std::string path = "v3.2", std::string name = "turn");
  // A Whisper model folder (brisvox's, sherpa-onnx's or Optimum's layout) or an alias
  // (resolve_stt_model: "tiny.en" is the bundled one).
  static ModelSpec whisper(std::string path = "tiny.en", std::string name = "stt");
  // This Whisper entry's decoder sized for decodes up to `max_width` sequences wide (1: greedy only)
  // and prompts plus hotwords up to `prompt_tokens` tokens (0: none): the options above, and, wider
  // than greedy, fewer segments per run (max_batch: the family's divided by max_width, at least 2),
  // so that a worker's lanes and their memory stay near greedy's. What `brisvox transcribe` and the
  // C API's engine do; Error(kInvalidArgument) outside 1 to 16 and 0 to 446.
  void size_whisper_decoder(int max_width, int prompt_tokens);
  // A Piper voice: VOICE.onnx (VOICE.onnx.json beside it) or an installed voice's name
  // (piper_voices.h). One worker per core, one sentence per run, ONNX Runtime's arena on.
  static ModelSpec piper_tts(std::string path, std::string name = "tts");

  // A family's defaults for max_batch, max_gather_wait_us and max_pending (num_workers: 0 still).
  static ModelSpec family_defaults(ModelFamily family);
  // The defaults above filled in (num_workers from `cores`, run_timeout_ms from the engine's
  // `engine_run_timeout_ms`) and the path resolved (Silero aliases: resolve_vad_model, Smart Turn:
  // resolve_turn_model, Whisper: resolve_stt_model; Error(kIo) when the file is missing).
  ModelSpec resolved(int cores, int engine_run_timeout_ms) const;
  void validate() const;
};

struct EngineConfig {
  std::vector<ModelSpec> models = {ModelSpec::silero_vad()};
  int max_streams = 4096;        // open streams at once; open_stream() refuses beyond
  int latency_budget_ms = 100;   // queue delay of a frame that counts as overload
  // When a frame model's recent queue delay (p99 over the last second) exceeds the latency
  // budget, refuse new streams rather than degrade the open ones.
  bool admission_control = true;
  // Deadline of one model run, for every model (unless its ModelSpec says otherwise). A run still
  // in flight after it is cancelled
  // through ONNX Runtime's terminate flag: its items get kError events with
  // ErrorCode::kInferenceTimeout (a VAD frame counts as silence) and the worker goes on. A normal
  // run takes well under 10 ms (VAD) or 200 ms (Smart Turn), so only a stuck machine or a
  // pathological model reaches the default. 0: off (no watchdog thread); else 10 to 600000.
  // Costs one thread per engine.
  int run_timeout_ms = 2000;

  // The entry named `name`; Error(kInvalidArgument) listing the names when there is none.
  ModelSpec& model(std::string_view name);
  const ModelSpec& model(std::string_view name) const;
  const ModelSpec* find_model(std::string_view name) const noexcept;
  void validate() const;  // Error(kInvalidArgument) naming the field
};

// --- a stream's pipeline ---------------------------------------------------------------------

// Voice activity detection: the first stage of every stream, and its clock (the stages after it
// see its frames and probabilities).
struct VadOptions {
  std::string model = "vad";   // a kSileroVad entry of EngineConfig::models
  SegmenterParams params;      // silero-vad's get_speech_timestamps parameters
  int model_rate_hz = 0;       // 0: 16000 (8 kHz input upsampled); 8000 runs the 8 kHz model (vad_model_rate_hz)
  bool emit_probabilities = false;  // a kVadProbability event per model frame
  // Each finished speech segment's audio (model rate, float32) as the payload of its kSpeechEnd
  // event (Stream::read_payload), for a speech-to-text of your own. Keeps up to
  // max_segment_audio_s of audio per stream; a longer segment is delivered as its last
  // max_segment_audio_s and the event says so (Event::payload_truncated).
  bool segment_audio = false;
  double max_segment_audio_s = 30.0;
};

// End-of-turn detection (Smart Turn v3) after the VAD: kTurnEnd / kTurnIncomplete events. Keeps
// the last 9.5 s of audio for the stream (about 600 KiB at 16 kHz).
struct TurnOptions {
  std::string model = "turn";  // a kSmartTurn entry of EngineConfig::models
  TurnParams params;
  // Offline use (files, tests): hold the stream's frames while an analysis is pending, so that the
  // result does not depend on how fast the analysis runs. Live streams leave it off: speech that
  // resumes while an analysis runs cancels it, as in Pipecat.
  bool wait_for_verdict = false;
};

// Speech-to-text (Whisper) after the VAD: each speech segment is transcribed when it ends, and
// its transcript comes as a kTranscript event with the text as payload (Stream::read_transcript).
// Segments are at most the model's window long: with this stage the VAD's max_speech_s is capped
// at 30 s, so that longer speech is split at the VAD's own split points, never truncated. Keeps
// the last ~30 s of audio for the stream (about 2 MB at 16 kHz).
struct SttOptions {
  std::string model = "stt";  // a kWhisper entry of EngineConfig::models
  // kFull: the 30 s window Whisper was trained on (faster-whisper's results exactly). kFit: the
  // window cut to the segment (at least 10 s), cheaper; measured 1.35 WER points worse on real
  // speech (docs/MODELS.md), so kFull is the default, live and offline.
  WhisperWindow window = WhisperWindow::kFull;
  // kFit: a segment whose decoding ends at the token limit (Whisper repeating itself) is decoded
  // again in the full window.
  bool fit_fallback = true;
  // Language, task, suppression, token limit, no-speech thresholds, beam_size / best_of (each
  // segment then holds that many of the model's decoder lanes: its "max_width" option bounds them).
  WhisperDecodeOptions decode;
  // The temperature fallback (none by default; use_faster_whisper_decoding sets faster-whisper's).
  WhisperFallbackOptions fallback;
  // Without decode.language on a multilingual model: the language detected on the stream's first
  // segment is kept for the rest (kFirst; segments already in the decoder then detect their
  // own), or each segment detects its own (kEach).
  WhisperLanguageDetection language_detection = WhisperLanguageDetection::kFirst;
  // Word timestamps (whisper_words.h): after its text, each segment's tokens are fed through the
  // decoder once more (an alignment pass, one step per token), and the transcript carries its
  // words. Needs a model converted with alignment heads (tools/whisper/convert_ct2.py).
  bool word_timestamps = false;
  // Partial transcripts: while a speech segment is open, its audio so far is decoded again every
  // this many ms of stream audio (greedy, in the fit window when the model has one; one decode in
  // flight per stream; a partial takes a request slot only while more than half are free, and is
  // skipped otherwise: the rest are kept for final transcripts), and each decode
  // gives a kTranscriptPartial: the text two consecutive decodes agree on (LocalAgreement, at
  // word boundaries, never taken back within the segment) and the latest's rest. 0: none;
  // otherwise 200 to 10000.
  int partial_interval_ms = 0;
};

struct StreamConfig {
  // The resampler's buffers grow with the rate ratio (16000 / 1 Hz would be hundreds of MB per
  // stream), so a stream's rate is bounded below as well as above.
  static constexpr int kMinSampleRateHz = 1000;
  static constexpr int kMaxSampleRateHz = 768000;

  int sample_rate_hz = 16000;  // rate of the pushed samples: 1000 to 768000; 16000 as is, 8000 upsampled 2x, others resampled
  // Audio a stream may hold before push() refuses samples: how late the workers may fall behind
  // before the caller must hold audio back (above latency_budget_ms, when the stream already gets
  // an overload event). 128 ms is 8 KiB at 16 kHz, most of a stream's memory.
  int buffer_ms = 128;
  // Bytes of payloads (segment audio, later transcripts and synthesized audio) a stream holds for
  // its reader; a payload that does not fit is dropped, counted, and its event says so. Allocated
  // only when a stage produces payloads. 0: enough for one max-length payload of each stage.
  int payload_buffer_bytes = 0;

  // The pipeline, in order: vad (always), then turn and stt when set.
  VadOptions vad;
  std::optional<TurnOptions> turn;
  std::optional<SttOptions> stt;

  // Called on a worker thread whenever new events are ready to poll(): once per processed frame
  // at most, and for other events. Must be quick and must not call into the engine (post a
  // notification to your own loop). May be empty.
  std::function<void()> on_events;
  void validate() const;
};

// The rate Silero runs at for a stream: `requested` (8000 or 16000) when given, else 8000 for
// 8 kHz input and 16000 for everything else (resampled). The one place this rule lives.
int vad_model_rate_hz(int input_rate_hz, int requested_model_rate_hz = 0);

}  // namespace brisvox
