// What brisvox needs to know about a Whisper model besides its graphs: dimensions, the ids of the
// special tokens, the languages and the suppress lists. Read from the model folder by
// WhisperModel::load (brisvox's whisper.json, sherpa-onnx's ONNX metadata, or Hugging Face's
// config.json / generation_config.json / tokenizer.json) and checked against the ONNX files'
// declared shapes when the sessions are made. Plain data: copyable, thread-safe to read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brisvox {

// openai/whisper's ModelDimensions. tiny: 80 mels, 1500 audio positions, width 384, 6 heads,
// 4 + 4 layers, 448 text positions; small: width 768, 12 heads, 12 + 12 layers.
struct WhisperDims {
  int n_mels = 0;
  int n_audio_ctx = 0;    // encoder positions of a full window (1500 = 30 s)
  int n_audio_state = 0;
  int n_audio_head = 0;
  int n_audio_layer = 0;
  int n_vocab = 0;        // decoder output size (51864 .en, 51865 multilingual)
  int n_text_ctx = 0;     // decoder positions (448)
  int n_text_state = 0;
  int n_text_head = 0;
  int n_text_layer = 0;

  int head_dim() const { return n_text_head > 0 ? n_text_state / n_text_head : 0; }
  // Mel frames of a full window: two per encoder position (conv2 has stride 2).
  int full_frames() const { return 2 * n_audio_ctx; }
};

struct WhisperSpecialTokens {
  int eot = -1;              // <|endoftext|>; every id below it is a text token
  int sot = -1;              // <|startoftranscript|>
  int translate = -1;
  int transcribe = -1;
  int sot_lm = -1;
  int sot_prev = -1;
  int no_speech = -1;        // <|nospeech|> (<|nocaptions|> in older vocabularies)
  int no_timestamps = -1;
  int timestamp_begin = -1;  // <|0.00|>; timestamp t is timestamp_begin + t / 0.02 s
  int blank = -1;            // " " (suppressed as the first token)
};

struct WhisperLanguage {
  std::string code;  // "en", "de", ...
  int token = -1;
};

struct WhisperConfig {
  WhisperDims dims;
  WhisperSpecialTokens tokens;
  bool multilingual = false;
  std::vector<WhisperLanguage> languages;  // in token order; .en models list them too, unused
  // faster-whisper's suppress_tokens=[-1] list: openai/whisper's non-speech symbols plus the
  // task and start tokens (transcribe, translate, sot, sot_prev, sot_lm, no_speech), sorted.
  std::vector<int> suppress_tokens;
  // Suppressed at the first sampled token when suppress_blank is on: " " and <|endoftext|>.
  std::vector<int> suppress_blank;

  // The language's token, or -1 if the model has no such language.
  int language_token(std::string_view code) const;
  // Every token id within [0, n_vocab), dims positive and consistent, the head count dividing
  // the width. Throws Error(kBadModel) naming `source` and the first problem.
  void validate(const std::string& source) const;
};

}  // namespace brisvox
