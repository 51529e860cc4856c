// What a loaded model declares: its inputs and outputs, opsets and producer. Printed by
// `brisvox doctor` and used in error messages.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace brisvox {

// Element types brisvox's model wrappers use (a subset of ONNX's); kOther covers the rest.
enum class ElementType { kFloat32, kFloat16, kInt64, kInt32, kInt8, kUint8, kBool, kOther };
std::string element_type_name(ElementType type);

struct TensorInfo {
  std::string name;
  ElementType type = ElementType::kOther;
  // -1 = dynamic. A scalar has no dims.
  std::vector<int64_t> dims;
  // Symbolic names of dynamic dims ("batch"), "" where the model gives none.
  std::vector<std::string> dim_names;
  // "[2,?,128]"
  std::string shape_string() const;
};

struct ModelInfo {
  std::string source;  // file path, or the name given for an in-memory model
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::string graph_name;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  // The file's metadata_props (key -> value), e.g. the configuration sherpa-onnx's Whisper
  // export stores in its encoder.
  std::map<std::string, std::string> metadata;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  int64_t default_opset() const;  // the ai.onnx opset, 0 if absent
};

}  // namespace brisvox
