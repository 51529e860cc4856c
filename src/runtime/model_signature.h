// What a model wrapper needs of a model: named inputs and outputs with element types, ranks and fixed
// dims. check_signature() compares it with what the file declares and names the first mismatch,
// so a user with the wrong file learns which file, which tensor and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "brisvox/runtime/model_info.h"

namespace brisvox::runtime {

inline constexpr int64_t kAnyDim = -1;

struct TensorSpec {
  std::string name;
  ElementType type = ElementType::kFloat32;
  std::vector<int64_t> dims;  // kAnyDim where any size is accepted; {} = scalar
  // Some exporters leave a dim's rank or size undeclared (a dynamic output [?,?,?]); when set,
  // a declared dynamic dim is accepted where this spec has a fixed one.
  bool allow_dynamic_for_fixed = true;
};

struct ModelSignature {
  std::string model_kind;  // "Silero VAD v5/v6", used in messages
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  // Releases of some models rename their tensors (Smart Turn v3.1/v3.2). When set and the names
  // are not found, a model with exactly as many inputs and outputs as the signature is bound by
  // position instead (types and shapes are still checked), and a line is logged saying so.
  bool bind_by_position_if_renamed = false;
};

// Where each spec'd tensor sits in the model's input/output lists (ORT needs names; model wrappers
// bind by name, so files that order inputs differently still work).
struct SignatureBinding {
  std::vector<std::string> input_names;   // one per ModelSignature::inputs, same order
  std::vector<std::string> output_names;  // one per ModelSignature::outputs
};

// Throws Error(kModelMismatch), e.g. "model 'm.onnx' has input 'state' of shape [2,?,64],
// expected [2,?,128] (Silero VAD v5/v6)". Extra model outputs are allowed (not fetched); extra
// model inputs are not (ORT would refuse to run without them).
SignatureBinding check_signature(const ModelInfo& info, const ModelSignature& signature);

std::string dims_string(const std::vector<int64_t>& dims);

}  // namespace brisvox::runtime
