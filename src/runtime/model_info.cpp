#include "brisvox/runtime/model_info.h"

#include "runtime/model_signature.h"

namespace brisvox {

std::string element_type_name(ElementType type) {
  switch (type) {
    case ElementType::kFloat32: return "float32";
    case ElementType::kFloat16: return "float16";
    case ElementType::kInt64: return "int64";
    case ElementType::kInt32: return "int32";
    case ElementType::kInt8: return "int8";
    case ElementType::kUint8: return "uint8";
    case ElementType::kBool: return "bool";
    case ElementType::kOther: return "other";
  }
  return "other";
}

std::string TensorInfo::shape_string() const { return runtime::dims_string(dims); }

int64_t ModelInfo::default_opset() const {
  const auto it = opsets.find("");
  if (it != opsets.end()) return it->second;
  const auto onnx = opsets.find("ai.onnx");
  return onnx == opsets.end() ? 0 : onnx->second;
}

}  // namespace brisvox
