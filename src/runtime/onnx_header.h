// Reads the top-level fields of an ONNX ModelProto (IR version, producer, opset imports,
// metadata_props) without protobuf: ONNX Runtime's C API does not expose opsets, `brisvox doctor`
// reports them, and model wrappers read their configuration from metadata before making a
// session. The graph itself (field 7, the bulk of the file) is skipped with a seek, never read.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "brisvox/runtime/model_info.h"

namespace brisvox::runtime {

// Fill ir_version, producer_name/version, opsets and metadata of `info`. Returns false (leaving what it
// could not read untouched) on a malformed header: ONNX Runtime gives the real error on load.
bool read_onnx_header(const std::string& path, ModelInfo& info);
bool read_onnx_header(std::span<const std::byte> bytes, ModelInfo& info);

// The op types of the main graph's nodes (not of subgraphs), e.g. to learn whether a model
// quantizes its activations with one scale per tensor (DynamicQuantizeLinear), which makes a
// batch's rows depend on each other. Reads the nodes and seeks over the initializers, so a large
// file costs little. nullopt on a malformed file or a node over 16 MiB (what ONNX Runtime loads
// is then unknown here: callers assume the worst).
std::optional<std::set<std::string>> read_onnx_op_types(const std::string& path);

}  // namespace brisvox::runtime
