// Reads the top-level fields of an ONNX ModelProto (IR version, producer, opset imports,
// metadata_props) without protobuf: ONNX Runtime's C API does not expose opsets, `brisvox doctor`
// reports them, and model adapters read their configuration from metadata before making a
// session. The graph itself (field 7, the bulk of the file) is skipped with a seek, never read.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "brisvox/runtime/model_info.h"

namespace brisvox::runtime {

// Fill ir_version, producer_name/version, opsets and metadata of `info`. Returns false (leaving what it
// could not read untouched) on a malformed header: ONNX Runtime gives the real error on load.
bool read_onnx_header(const std::string& path, ModelInfo& info);
bool read_onnx_header(std::span<const std::byte> bytes, ModelInfo& info);

}  // namespace brisvox::runtime
