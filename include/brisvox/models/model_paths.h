// Where model files are found. A model is named either by a bundled alias resolved in the models
// folder (Silero VAD: "v5", "v6", "v5-exported", "v6-exported"; Smart Turn: "v3.2"; Whisper:
// "tiny.en"), or by a path.
#pragma once

#include <string>
#include <string_view>

namespace brisvox {

// The models folder: $BRISVOX_MODELS_DIR if set, else <prefix>/share/brisvox/models when this
// binary is installed (bin/ or lib/ beside share/, docs/INSTALL.md), else the folder
// scripts/setup.sh fills (compiled in as the build's default). A missing model's error names them.
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

// "v3.2" -> <models_dir>/smart-turn-v3.2-cpu.onnx (Smart Turn v3.2, int8, the file Pipecat
// 1.14 loads by default; unpacked from the pipecat-ai wheel by scripts/setup.sh); anything else is
// taken as the path of a Smart Turn v3.x .onnx file. Throws Error(kIo) naming the path (and how to
// get the bundled one) if it does not exist.
std::string resolve_turn_model(std::string_view name_or_path);

// The bundled Smart Turn aliases, for listings (`brisvox doctor`).
inline constexpr std::string_view kBundledTurnModels[] = {"v3.2"};
// The bundled Whisper aliases (<models_dir>/whisper-<alias>), for resolve_stt_model and listings.
inline constexpr std::string_view kBundledSttModels[] = {"tiny.en", "tiny.en-int8", "base", "base-int8"};

}  // namespace brisvox
