// What text-to-speech asks of a model family: a synthesizer, one per worker of the voice's pool,
// used by that worker alone (its own model session, its own text front end), that turns a session's
// text into audio one chunk (about a sentence) per model run, in the libpiper pattern:
//
//   S::Options o = synth.session_options(spec, config);  // a session's settings, checked once
//   S::Utterance u = synth.start(o, text);               // checks and prepares all of the text
//   while (synth.next(u, chunk)) deliver(chunk);         // one model run each
//
// Everything else (sessions, queues, cancel and barge-in, back-pressure, interleaving sessions
// chunk by chunk, marks, the clock that decides when a continuation is due) is the speech pool's
// (speech_pool.h), written once for every family. Piper is the first (piper_synthesizer.h).
#pragma once

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "brisvox/engine/engine_config.h"
#include "brisvox/engine/speech.h"

namespace brisvox::engine {

// One model run's audio.
struct SynthesisChunk {
  std::vector<float> samples;  // mono, in [-1, 1], at the session's rate
  std::size_t index = 0;       // 0-based, of its utterance
  std::size_t count = 0;       // chunks of its utterance
  bool last = false;           // no chunk of the utterance follows
  std::size_t cost = 0;        // what the run's time grew with (Piper: phoneme ids); 0: unknown
};

template <typename S>
concept Synthesizer =
    std::constructible_from<S, const ModelSpec&> &&
    requires(S& s, const S& cs, const ModelSpec& spec, const SpeechConfig& config, const typename S::Options& options,
             typename S::Utterance& u, const typename S::Utterance& cu, std::string text, SynthesisChunk& chunk) {
      // A session's settings: the model's options (ModelSpec::options) with the session's own
      // (SpeechConfig: voice_options, sample_rate_hz, volume, fast_start) over them.
      // Error(kInvalidArgument) naming a setting the voice refuses.
      { cs.session_options(spec, config) } -> std::same_as<typename S::Options>;
      { cs.sample_rate_hz(options) } -> std::same_as<int>;  // of the audio these options give
      // Error(kInvalidArgument) for a text the voice cannot take, before anything is queued.
      { cs.check_text(std::string_view{}) };
      { cs.max_text_bytes() } -> std::same_as<std::size_t>;
      // Everything that can fail on bad input, before any audio exists (Error kInvalidArgument, or
      // kRuntime when the family's front end died: the next start() recovers).
      { s.start(options, std::move(text)) } -> std::same_as<typename S::Utterance>;
      // The next chunk (one model run, under the run's deadline); false when none is left. Error
      // when the run fails or is cancelled (the utterance stays where it was).
      { s.next(u, chunk) } -> std::same_as<bool>;
      { cu.chunk_count() } -> std::same_as<std::size_t>;
      { cu.chunks_done() } -> std::same_as<std::size_t>;
      { cu.next_cost() } -> std::same_as<std::size_t>;  // the next run's cost (as SynthesisChunk::cost)
      { s.cancel_run() } noexcept;
      { s.clear_cancel() } noexcept;
      // What a user can do when a run passes its deadline (how long a chunk costs, how to shorten it).
      { cs.timeout_hint() } -> std::convertible_to<std::string>;
    };

}  // namespace brisvox::engine
