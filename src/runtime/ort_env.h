// The one process-wide Ort::Env. ONNX Runtime allows one Env per process; every session is
// created against it. Its log output goes to brisvox's logger.
#pragma once

#include <onnxruntime_cxx_api.h>

namespace brisvox::runtime {

// Created on first use (thread-safe), lives until process exit.
Ort::Env& ort_env();

}  // namespace brisvox::runtime
