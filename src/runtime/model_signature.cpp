#include "runtime/model_signature.h"

#include <fmt/format.h>

#include <algorithm>

#include "brisvox/error.h"
#include "base/log.h"

namespace brisvox::runtime {
namespace {

const TensorInfo* find_tensor(const std::vector<TensorInfo>& tensors, const std::string& name) {
  const auto it = std::find_if(tensors.begin(), tensors.end(),
                               [&](const TensorInfo& t) { return t.name == name; });
  return it == tensors.end() ? nullptr : &*it;
}

std::string names_of(const std::vector<TensorInfo>& tensors) {
  std::string out;
  for (const auto& t : tensors) out += (out.empty() ? "'" : ", '") + t.name + "'";
  return out.empty() ? "none" : out;
}

bool dims_compatible(const std::vector<int64_t>& declared, const TensorSpec& spec) {
  if (declared.size() != spec.dims.size()) return false;
  for (std::size_t i = 0; i < declared.size(); ++i) {
    if (spec.dims[i] == kAnyDim) continue;
    if (declared[i] == kAnyDim && spec.allow_dynamic_for_fixed) continue;
    if (declared[i] != spec.dims[i]) return false;
  }
  return true;
}

void check_tensor(const ModelInfo& info, const ModelSignature& signature, const char* role,
                  const std::vector<TensorInfo>& declared, const TensorSpec& spec) {
  const TensorInfo* found = find_tensor(declared, spec.name);
  if (found == nullptr) {
    throw Error(ErrorCode::kModelMismatch,
                fmt::format("model '{}' has no {} '{}' (it has {}); a {} model needs {} '{}' {} {}",
                            info.source, role, spec.name, names_of(declared), signature.model_kind,
                            role, spec.name, element_type_name(spec.type), dims_string(spec.dims)));
  }
  if (found->type != spec.type) {
    throw Error(ErrorCode::kModelMismatch,
                fmt::format("model '{}' has {} '{}' of type {}, expected {} ({})", info.source,
                            role, spec.name, element_type_name(found->type),
                            element_type_name(spec.type), signature.model_kind));
  }
  if (!dims_compatible(found->dims, spec)) {
    throw Error(ErrorCode::kModelMismatch,
                fmt::format("model '{}' has {} '{}' of shape {}, expected {} ({})", info.source, role,
                            spec.name, found->shape_string(), dims_string(spec.dims),
                            signature.model_kind));
  }
}

}  // namespace

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ',';
    out += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return out + "]";
}

namespace {

bool all_names_present(const std::vector<TensorInfo>& declared, const std::vector<TensorSpec>& specs) {
  return std::all_of(specs.begin(), specs.end(), [&](const TensorSpec& s) { return find_tensor(declared, s.name) != nullptr; });
}

// The same checks with the model's own names taken position by position.
SignatureBinding bind_by_position(const ModelInfo& info, const ModelSignature& signature) {
  ModelSignature renamed = signature;
  renamed.bind_by_position_if_renamed = false;
  for (std::size_t i = 0; i < renamed.inputs.size(); ++i) renamed.inputs[i].name = info.inputs[i].name;
  for (std::size_t i = 0; i < renamed.outputs.size(); ++i) renamed.outputs[i].name = info.outputs[i].name;
  SignatureBinding binding = check_signature(info, renamed);
  std::string mapping;
  for (std::size_t i = 0; i < signature.inputs.size(); ++i) {
    mapping += fmt::format("{}input '{}' as '{}'", mapping.empty() ? "" : ", ", info.inputs[i].name, signature.inputs[i].name);
  }
  for (std::size_t i = 0; i < signature.outputs.size(); ++i) {
    mapping += fmt::format(", output '{}' as '{}'", info.outputs[i].name, signature.outputs[i].name);
  }
  detail::log(LogLevel::kInfo, "model '{}' names its tensors differently from {}: bound by position ({})", info.source,
              signature.model_kind, mapping);
  return binding;
}

}  // namespace

SignatureBinding check_signature(const ModelInfo& info, const ModelSignature& signature) {
  if (signature.bind_by_position_if_renamed &&
      (!all_names_present(info.inputs, signature.inputs) || !all_names_present(info.outputs, signature.outputs)) &&
      info.inputs.size() == signature.inputs.size() && info.outputs.size() == signature.outputs.size()) {
    return bind_by_position(info, signature);
  }
  SignatureBinding binding;
  for (const auto& spec : signature.inputs) {
    check_tensor(info, signature, "input", info.inputs, spec);
    binding.input_names.push_back(spec.name);
  }
  for (const auto& declared : info.inputs) {
    const bool wanted = std::any_of(signature.inputs.begin(), signature.inputs.end(),
                                    [&](const TensorSpec& s) { return s.name == declared.name; });
    if (!wanted) {
      throw Error(ErrorCode::kModelMismatch,
                  fmt::format("model '{}' has an unexpected input '{}' {}; a {} model has inputs {}",
                              info.source, declared.name, declared.shape_string(),
                              signature.model_kind, [&] {
                                std::string s;
                                for (const auto& in : signature.inputs)
                                  s += (s.empty() ? "'" : ", '") + in.name + "'";
                                return s;
                              }()));
    }
  }
  for (const auto& spec : signature.outputs) {
    check_tensor(info, signature, "output", info.outputs, spec);
    binding.output_names.push_back(spec.name);
  }
  return binding;
}

}  // namespace brisvox::runtime
