// brisvox_turn_probability MODEL IN.f32...: brisvox's Smart Turn probability of each clip, one per
// line (%.9g), in argument order. Each IN.f32 is raw float32 (native byte order) audio at 16 kHz,
// analysed as one whole turn exactly as the engine's turn stage analyses one: TurnFeatures (the
// last 8 s, left-padded, normalised, log-mel) then SmartTurn at batch 1, one intra-op thread.
// tests/turn/test_pipecat_parity.py gives the same samples to Pipecat's analyzer.
//
// With --batch, all clips (at most 64) also run in one batch and the line carries both
// probabilities: the model's batched run must give the same numbers. With --features DIR, each
// clip's [80, 800] features are also written to DIR/<i>.features.f32 (for diagnosis).
// `--ort-version` prints the ONNX Runtime version brisvox runs on (the reference must use the same).
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "brisvox/models/model_paths.h"
#include "brisvox/models/turn/smart_turn.h"
#include "brisvox/models/turn/turn_features.h"
#include "brisvox/runtime/runtime_info.h"

namespace {

std::vector<float> read_f32(const char* path) {
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) throw std::runtime_error(std::string("cannot open ") + path);
  std::vector<float> out;
  float buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, sizeof(float), 4096, f)) > 0) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--ort-version") == 0) {
    std::printf("%s\n", brisvox::ort_version().c_str());
    return 0;
  }
  int first = 2;
  bool batch = false;
  std::string features_dir;
  while (argc > first && argv[first - 1][0] == '-') {
    if (std::strcmp(argv[first - 1], "--batch") == 0) {
      batch = true;
      ++first;
    } else if (std::strcmp(argv[first - 1], "--features") == 0 && argc > first + 1) {
      features_dir = argv[first];
      first += 2;
    } else {
      break;
    }
  }
  if (argc <= first) {
    std::fprintf(stderr, "usage: %s [--batch] [--features DIR] MODEL IN.f32...\n", argv[0]);
    return 2;
  }
  try {
    const std::size_t n = static_cast<std::size_t>(argc - first);
    brisvox::SmartTurnConfig config;
    config.model_path = brisvox::resolve_turn_model(argv[first - 1]);
    config.max_batch = batch ? static_cast<int>(n) : 1;
    brisvox::SmartTurn model(config);
    brisvox::TurnFeatures features;
    std::vector<std::vector<float>> f(n, std::vector<float>(brisvox::kTurnFeatureValues));
    std::vector<float> single(n), batched(n);
    std::vector<const float*> ptrs(n);
    for (std::size_t i = 0; i < n; ++i) {
      features.compute(read_f32(argv[first + static_cast<int>(i)]), f[i]);
      if (!features_dir.empty()) {
        const std::string out = features_dir + "/" + std::to_string(i) + ".features.f32";
        std::FILE* fo = std::fopen(out.c_str(), "wb");
        if (fo == nullptr || std::fwrite(f[i].data(), sizeof(float), f[i].size(), fo) != f[i].size() ||
            std::fclose(fo) != 0) {
          throw std::runtime_error("cannot write " + out);
        }
      }
      ptrs[i] = f[i].data();
      model.run(std::span(&ptrs[i], 1), std::span(&single[i], 1));
    }
    if (batch) model.run(ptrs, batched);
    for (std::size_t i = 0; i < n; ++i) {
      if (batch) {
        std::printf("%.9g %.9g\n", static_cast<double>(single[i]), static_cast<double>(batched[i]));
      } else {
        std::printf("%.9g\n", static_cast<double>(single[i]));
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
