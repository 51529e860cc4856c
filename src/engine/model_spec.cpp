// The defaults a ModelSpec leaves to its family, filled in when the engine starts, and the sizing
// of a Whisper entry's decoder from them.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "brisvox/engine/engine_config.h"
#include "brisvox/error.h"
#include "brisvox/models/model_paths.h"
#include "brisvox/models/tts/piper_voices.h"

namespace brisvox {

ModelSpec ModelSpec::family_defaults(ModelFamily family) {
  ModelSpec d;
  d.family = family;
  switch (family) {
    case ModelFamily::kSileroVad:
      // docs/PERFORMANCE.md chooses max_batch 32 and a 2 ms gather wait: above 32 the gain is small
      // and the latency cost large.
      d.max_batch = 32;
      d.max_gather_wait_us = 2000;
      break;
    case ModelFamily::kSmartTurn:
      // No gather wait: analyses are rare and their latency counts. 16 requests of 8 s in flight.
      d.max_batch = 4;
      d.max_gather_wait_us = 0;
      d.max_pending = 16;
      break;
    case ModelFamily::kWhisper:
      // max_batch is the decoder's slots per worker: segments decoded together, each holding its
      // caches (21.5 MB for tiny.en at a full window). A decoder step costs nearly the same at
      // batch 1 and 8 (docs/PERFORMANCE.md): batching segments of many streams is where the gain
      // is. No gather wait: a step always takes every sequence being decoded.
      d.max_batch = 8;
      d.max_gather_wait_us = 0;
      break;
    case ModelFamily::kPiperTts:
      // One sentence per run (batching does not pay on CPU), no gather wait: a request waits for
      // nothing but a free worker. 256 speech sessions open at once.
      d.max_batch = 1;
      d.max_gather_wait_us = 0;
      d.max_pending = 256;
      break;
  }
  return d;
}

ModelSpec ModelSpec::resolved(int cores, int engine_run_timeout_ms) const {
  const ModelSpec d = family_defaults(family);
  ModelSpec r = *this;
  if (r.run_timeout_ms < 0) {
    r.run_timeout_ms = engine_run_timeout_ms;
    // A full-window encoder run is ~0.6 s per segment on one core, a batch of 8 several seconds.
    if (family == ModelFamily::kWhisper && engine_run_timeout_ms > 0) r.run_timeout_ms = std::max(engine_run_timeout_ms, 60'000);
    // A sentence is one run, 100 ms to 5 s of one core by its length (2048 ids at most): the
    // engine's 2 s would cancel long sentences on a busy machine.
    if (family == ModelFamily::kPiperTts && engine_run_timeout_ms > 0) r.run_timeout_ms = std::max(engine_run_timeout_ms, 20'000);
  }
  if (r.max_batch == 0) r.max_batch = d.max_batch;
  if (r.max_gather_wait_us < 0) r.max_gather_wait_us = d.max_gather_wait_us;
  if (r.max_pending == 0) r.max_pending = d.max_pending;
  switch (family) {
    case ModelFamily::kSileroVad:
      // One worker per core: VAD frames are many and small, and batching makes each run cheap.
      if (r.num_workers == 0) r.num_workers = std::max(1, cores);
      r.path = resolve_vad_model(path);
      break;
    case ModelFamily::kSmartTurn:
      // One worker: an analysis is ~100 ms, and more threads only oversubscribe a small machine
      // (docs/PERFORMANCE.md, end-of-turn).
      if (r.num_workers == 0) r.num_workers = 1;
      r.path = resolve_turn_model(path);
      break;
    case ModelFamily::kWhisper:
      // One worker: the VAD needs the other core (a second worker shares the ~320 MB of sessions).
      if (r.num_workers == 0) r.num_workers = 1;
      // Every request owns a decoder lane while it is decoded: as many as the slots.
      if (max_pending == 0) r.max_pending = r.num_workers * r.max_batch;
      r.path = resolve_stt_model(path);
      break;
    case ModelFamily::kPiperTts:
      // One worker per core: a sentence is 100 ms to 1 s of one core, and concurrent requests
      // interleave sentence by sentence on the workers (docs/PERFORMANCE.md, text-to-speech).
      if (r.num_workers == 0) r.num_workers = std::max(1, cores);
      r.path = resolve_piper_voice(path);
      break;
  }
  return r;
}

void ModelSpec::size_whisper_decoder(int max_width, int prompt_tokens) {
  if (max_width < 1 || max_width > 16) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("model '{}': a decoder is 1 to 16 sequences wide, got {}", name, max_width));
  }
  if (prompt_tokens < 0 || prompt_tokens > 446) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("model '{}': a prompt takes 0 to 446 tokens, got {}", name, prompt_tokens));
  }
  if (max_width > 1) {
    options["max_width"] = std::to_string(max_width);
    max_batch = std::max(2, family_defaults(ModelFamily::kWhisper).max_batch / max_width);
  }
  if (prompt_tokens > 0) options["prompt_tokens"] = std::to_string(prompt_tokens);
}

}  // namespace brisvox
