// Where model files are found. A model is named either by a bundled alias ("v5", "v6" for Silero
// VAD, "v5-exported", "v6-exported") resolved in the models folder, or by a path to an .onnx file.
#pragma once

#include <string>
#include <string_view>

namespace brisvox {

// The models folder: $BRISVOX_MODELS_DIR if set, else the folder scripts/setup.sh fills
// (compiled in as the build's default).
std::string models_dir();

// "v5" / "v6" -> <models_dir>/silero_vad_v5.flat.onnx ... (the batched-inference rewrite made by
// tools/flatten_silero.py; falls back to the exported silero_vad_v5.onnx with a warning when the
// rewrite is missing); "v5-exported" / "v6-exported" -> the exported graph as published; anything
// else is taken as a path. Throws Error(kIo) naming the path (and how to get the file) if it does
// not exist.
std::string resolve_vad_model(std::string_view name_or_path);

// "tiny.en" -> <models_dir>/whisper-tiny.en (Whisper tiny.en, converted by scripts/setup.sh);
// anything else is taken as the path of a Whisper model folder. Throws Error(kIo) naming the
// folder (and how to get the bundled one) if it does not exist.
std::string resolve_stt_model(std::string_view name_or_path);

}  // namespace brisvox
