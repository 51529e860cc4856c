// A Whisper model folder: which layout it is in, its configuration, its vocabulary and the paths
// of its two ONNX files. Loading reads only small files (JSON, vocabulary, the ONNX files'
// headers); the ONNX Runtime sessions are made by WhisperEncoder and WhisperDecoder, which check
// the graphs' contracts against this configuration (naming the tensor on a mismatch).
//
// Layouts (detected by the files present, in this order):
//   kBrisvox     whisper.json + encoder.onnx + decoder.onnx + vocabulary.txt, written by
//                tools/whisper/convert_ct2.py from a faster-whisper (CTranslate2) model.
//                Batched decoder steps with per-sequence positions; full and fit windows.
//   kSherpaOnnx  <prefix>-encoder.onnx + <prefix>-decoder.onnx + <prefix>-tokens.txt, as
//                k2-fsa/sherpa-onnx's scripts/whisper/export-onnx.py writes them (the
//                configuration is in the encoder's metadata_props; *.int8.onnx variants are used
//                when the float files are absent). Full and fit windows; one decoder Run per
//                sequence per step (the graph takes one offset for its whole batch).
//   kOptimum     encoder_model.onnx + decoder_model_merged.onnx + tokenizer.json + config.json
//                (+ generation_config.json), Hugging Face Optimum's export (also in an onnx/
//                subfolder, as the Hub's ONNX repositories have it). Full windows only (the
//                encoder adds its whole positional table); one decoder Run per sequence per step.
// tiny to small, English-only (.en) and multilingual; dimensions are read, never assumed. Models
// with 128 mel bins (large-v3) are refused: brisvox's log-mel has 80.
//
// Immutable after load(): share one WhisperModel between threads freely.
#pragma once

#include <span>
#include <string>

#include "brisvox/models/stt/whisper_config.h"
#include "brisvox/models/stt/whisper_vocabulary.h"

namespace brisvox {

enum class WhisperLayout { kBrisvox, kSherpaOnnx, kOptimum };
const char* to_string(WhisperLayout layout);

class WhisperModel {
 public:
  // Throws Error(kIo) if `folder` is not a readable folder or holds no known layout (the message
  // lists what each layout needs), Error(kBadModel) for a malformed configuration or vocabulary
  // (naming the file and the entry).
  static WhisperModel load(const std::string& folder);

  WhisperLayout layout() const { return layout_; }
  const std::string& folder() const { return folder_; }
  const std::string& encoder_path() const { return encoder_path_; }
  const std::string& decoder_path() const { return decoder_path_; }
  const WhisperConfig& config() const { return config_; }
  const WhisperVocabulary& vocabulary() const { return vocabulary_; }
  // Whether the encoder accepts windows shorter than 30 s (WhisperWindow::kFit).
  bool supports_fit_window() const { return layout_ != WhisperLayout::kOptimum; }

  // The text of `tokens` (special and timestamp tokens skipped).
  std::string decode(std::span<const int> tokens) const {
    return vocabulary_.decode(tokens, config_.tokens.eot);
  }

 private:
  WhisperLayout layout_ = WhisperLayout::kBrisvox;
  std::string folder_;
  std::string encoder_path_;
  std::string decoder_path_;
  WhisperConfig config_;
  WhisperVocabulary vocabulary_;

  friend struct WhisperModelLoader;
};

}  // namespace brisvox
