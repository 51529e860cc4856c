// One ONNX Runtime session over one model file, created eagerly with brisvox's SessionConfig.
//
// Thread-safety: a ModelSession is used by one thread at a time (its RunOptions, its cancel flag).
// With SessionConfig::share, several ModelSessions (one per worker) run one Ort::Session
// concurrently, which ONNX Runtime guarantees safe for Run (its InferenceSession::Run is
// thread-safe; the CPU arena and the memory-pattern cache take their own locks). Loading is
// thread-safe.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "brisvox/runtime/model_info.h"
#include "brisvox/runtime/session_config.h"

namespace brisvox::runtime {

class ModelSession {
 public:
  // Throws Error(kIo) if the file cannot be read, Error(kBadModel) if ONNX Runtime rejects it,
  // Error(kProviderUnavailable) for a missing provider under ProviderFallback::kError.
  static ModelSession load_file(const std::string& path, const SessionConfig& config);
  // `name` stands in for a path in messages. The bytes need not outlive the call.
  static ModelSession load_memory(std::span<const std::byte> bytes, const std::string& name,
                                  const SessionConfig& config);

  ModelSession(ModelSession&&) noexcept = default;
  ModelSession& operator=(ModelSession&&) noexcept = default;

  const ModelInfo& info() const { return info_; }
  // Providers actually registered for this session, in order (CPU last).
  const std::vector<std::string>& providers() const { return providers_; }
  Ort::Session& session() { return *session_; }
  // How many ModelSessions run this ONNX Runtime session now (1 unless SessionConfig::share).
  long session_users() const { return session_.use_count(); }
  // The options every Run of this session passes: they carry the terminate flag below.
  Ort::RunOptions& run_options() { return run_options_; }

  // Any thread: sets ONNX Runtime's terminate flag, so that the Run in progress fails at its next
  // node and every later Run fails at once until clear_cancel(). For deadlines (the engine's
  // watchdog): ONNX Runtime documents RunOptionsSetTerminate as callable from another thread
  // while a Run executes; it only sets a flag (no lock, no allocation).
  void cancel_run() noexcept;
  // The thread that runs the session: lets later Runs run again.
  void clear_cancel() noexcept;

 private:
  ModelSession(std::shared_ptr<Ort::Session> session, ModelInfo info, std::vector<std::string> providers);

  std::shared_ptr<Ort::Session> session_;
  Ort::RunOptions run_options_;
  ModelInfo info_;
  std::vector<std::string> providers_;
};

// Builds the Ort::SessionOptions for a config; returns the providers registered.
Ort::SessionOptions make_session_options(const SessionConfig& config,
                                         std::vector<std::string>& registered_providers);

}  // namespace brisvox::runtime
