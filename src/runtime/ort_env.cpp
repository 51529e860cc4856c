#include "runtime/ort_env.h"

#include <cstdlib>
#include <string>

#include "brisvox/runtime/runtime_info.h"
#include "base/log.h"

namespace brisvox::runtime {
namespace {

LogLevel to_log_level(OrtLoggingLevel severity) {
  switch (severity) {
    case ORT_LOGGING_LEVEL_VERBOSE: return LogLevel::kTrace;
    case ORT_LOGGING_LEVEL_INFO: return LogLevel::kDebug;  // ORT's info is chatty: our debug
    case ORT_LOGGING_LEVEL_WARNING: return LogLevel::kWarn;
    case ORT_LOGGING_LEVEL_ERROR:
    case ORT_LOGGING_LEVEL_FATAL: return LogLevel::kError;
  }
  return LogLevel::kWarn;
}

void ORT_API_CALL route_ort_log(void* /*param*/, OrtLoggingLevel severity, const char* category,
                                const char* /*logid*/, const char* code_location,
                                const char* message) {
  detail::log(to_log_level(severity), "onnxruntime [{}] {} ({})", category ? category : "",
              message ? message : "", code_location ? code_location : "");
}

// ONNX Runtime 1.29 sends telemetry on Linux (1DS): creating its environment writes a device id and
// an event queue (with the executable's path) under ~/.cache/Microsoft/DeveloperTools/.onnxruntime/
// and uploads them. ORT_DISABLE_TELEMETRY=1, read when the environment is created, turns all of it
// off (nothing is written or sent); DisableTelemetryEvents() alone comes too late for the process
// event. A value the user set is kept (ORT_DISABLE_TELEMETRY=0 opts in). docs/ONNXRUNTIME.md.
Ort::Env make_env() {
  ::setenv("ORT_DISABLE_TELEMETRY", "1", /*overwrite=*/0);
  // Let ORT filter at WARNING: its verbose/info output is per-node and costs time even if we
  // discard it. Raise to INFO only when brisvox itself logs at trace.
  Ort::Env env(log_level() == LogLevel::kTrace ? ORT_LOGGING_LEVEL_INFO : ORT_LOGGING_LEVEL_WARNING, "brisvox",
               route_ort_log, nullptr);
  const char* opt_in = std::getenv("ORT_DISABLE_TELEMETRY");
  if (opt_in == nullptr || std::string(opt_in) != "0") env.DisableTelemetryEvents();
  return env;
}

}  // namespace

Ort::Env& ort_env() {
  static Ort::Env env = make_env();
  return env;
}

}  // namespace brisvox::runtime

namespace brisvox {

void ort_initialize() { (void)runtime::ort_env(); }
std::string ort_version() { return Ort::GetVersionString(); }
std::vector<std::string> ort_available_providers() { return Ort::GetAvailableProviders(); }
std::string ort_build_info() { return Ort::GetBuildInfoString(); }

}  // namespace brisvox
