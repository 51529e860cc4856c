#include "runtime/model_session.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "brisvox/error.h"
#include "brisvox/runtime/runtime_info.h"
#include "base/log.h"
#include "runtime/onnx_header.h"
#include "runtime/op_domains.h"
#include "runtime/ort_env.h"

namespace brisvox::runtime {
namespace {

ElementType to_element_type(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return ElementType::kFloat32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return ElementType::kFloat16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return ElementType::kInt64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return ElementType::kInt32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return ElementType::kInt8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return ElementType::kUint8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return ElementType::kBool;
    default: return ElementType::kOther;
  }
}

TensorInfo describe(const std::string& name, const Ort::TypeInfo& type_info) {
  TensorInfo t;
  t.name = name;
  if (type_info.GetONNXType() != ONNX_TYPE_TENSOR) return t;  // sequences/maps: kOther, no dims
  const auto tensor = type_info.GetTensorTypeAndShapeInfo();
  t.type = to_element_type(tensor.GetElementType());
  t.dims = tensor.GetShape();
  const std::size_t rank = t.dims.size();
  std::vector<const char*> symbolic(rank, nullptr);
  if (rank > 0) tensor.GetSymbolicDimensions(symbolic.data(), rank);
  for (std::size_t i = 0; i < rank; ++i) {
    t.dim_names.emplace_back(symbolic[i] ? symbolic[i] : "");
    if (t.dims[i] < 0) t.dims[i] = -1;
  }
  return t;
}

ModelInfo describe_session(Ort::Session& session, const std::string& source) {
  ModelInfo info;
  info.source = source;
  Ort::AllocatorWithDefaultOptions allocator;
  for (std::size_t i = 0; i < session.GetInputCount(); ++i) {
    info.inputs.push_back(describe(session.GetInputNameAllocated(i, allocator).get(),
                                   session.GetInputTypeInfo(i)));
  }
  for (std::size_t i = 0; i < session.GetOutputCount(); ++i) {
    info.outputs.push_back(describe(session.GetOutputNameAllocated(i, allocator).get(),
                                    session.GetOutputTypeInfo(i)));
  }
  const auto meta = session.GetModelMetadata();
  info.graph_name = meta.GetGraphNameAllocated(allocator).get();
  info.producer_name = meta.GetProducerNameAllocated(allocator).get();
  return info;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Short names users type -> ORT's provider names.
std::string provider_full_name(const std::string& name) {
  static const std::unordered_map<std::string, std::string> kNames = {
      {"cpu", "CPUExecutionProvider"},         {"cuda", "CUDAExecutionProvider"},
      {"tensorrt", "TensorrtExecutionProvider"}, {"openvino", "OpenVINOExecutionProvider"},
      {"dnnl", "DnnlExecutionProvider"},       {"xnnpack", "XnnpackExecutionProvider"},
      {"coreml", "CoreMLExecutionProvider"},   {"qnn", "QNNExecutionProvider"},
      {"rocm", "ROCMExecutionProvider"},       {"migraphx", "MIGraphXExecutionProvider"},
      {"webgpu", "WebGpuExecutionProvider"},
  };
  const auto it = kNames.find(lower(name));
  return it == kNames.end() ? name : it->second;
}

void append_provider(Ort::SessionOptions& options, const std::string& full_name) {
  if (full_name == "CUDAExecutionProvider") {
    OrtCUDAProviderOptions cuda{};
    options.AppendExecutionProvider_CUDA(cuda);
  } else if (full_name == "TensorrtExecutionProvider") {
    OrtTensorRTProviderOptions trt{};
    options.AppendExecutionProvider_TensorRT(trt);
  } else if (full_name == "ROCMExecutionProvider") {
    OrtROCMProviderOptions rocm{};
    options.AppendExecutionProvider_ROCM(rocm);
  } else if (full_name == "OpenVINOExecutionProvider") {
    options.AppendExecutionProvider_OpenVINO_V2({});
  } else {
    // The generic entry point covers the providers ORT registers by short name.
    std::string short_name = full_name.substr(0, full_name.find("ExecutionProvider"));
    options.AppendExecutionProvider(short_name, {});
  }
}

GraphOptimizationLevel to_ort(GraphOptimization level) {
  switch (level) {
    case GraphOptimization::kDisabled: return GraphOptimizationLevel::ORT_DISABLE_ALL;
    case GraphOptimization::kBasic: return GraphOptimizationLevel::ORT_ENABLE_BASIC;
    case GraphOptimization::kExtended: return GraphOptimizationLevel::ORT_ENABLE_EXTENDED;
    case GraphOptimization::kAll: return GraphOptimizationLevel::ORT_ENABLE_ALL;
  }
  return GraphOptimizationLevel::ORT_ENABLE_ALL;
}

// Everything that makes two loads the same session: the file as it is now (device, inode, size,
// modification time: a rewritten file is another model) and every field of the config.
std::string share_key(const struct stat& st, const std::string& path, const SessionConfig& c) {
  std::string key = fmt::format("{}:{}:{}:{}.{}|{}|{}|{}|{}|{}|{}|{}|{}", st.st_dev, st.st_ino, st.st_size,
                                st.st_mtim.tv_sec, st.st_mtim.tv_nsec, path, c.intra_op_threads,
                                c.inter_op_threads, c.sequential, c.cpu_arena, c.memory_pattern,
                                static_cast<int>(c.optimization), static_cast<int>(c.on_unavailable_provider));
  for (const auto& p : c.providers) key += "|" + p;
  return key;
}

// The live shared sessions, by share_key. An entry holds its session weakly: the session goes when
// its last ModelSession does. An entry's own mutex is held while its session loads, so that workers
// starting together load it once, while loads of other files go on in parallel.
struct SharedEntry {
  std::mutex loading;
  std::weak_ptr<Ort::Session> session;
  ModelInfo info;
  std::vector<std::string> providers;
};

std::shared_ptr<SharedEntry> shared_entry(const std::string& key) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<SharedEntry>> entries;
  std::lock_guard lock(mutex);
  // Drop the entries of sessions gone, so that the map stays as small as the live sessions.
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->first != key && it->second->session.expired() && it->second.use_count() == 1) {
      it = entries.erase(it);
    } else {
      ++it;
    }
  }
  auto& entry = entries[key];
  if (!entry) entry = std::make_shared<SharedEntry>();
  return entry;
}

}  // namespace

Ort::SessionOptions make_session_options(const SessionConfig& config,
                                         std::vector<std::string>& registered) {
  config.validate();
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(config.intra_op_threads);
  options.SetInterOpNumThreads(config.inter_op_threads);
  options.SetExecutionMode(config.sequential ? ExecutionMode::ORT_SEQUENTIAL : ExecutionMode::ORT_PARALLEL);
  options.SetGraphOptimizationLevel(to_ort(config.optimization));
  if (config.cpu_arena) options.EnableCpuMemArena(); else options.DisableCpuMemArena();
  if (config.memory_pattern) options.EnableMemPattern(); else options.DisableMemPattern();
  // Intra-op threads that spin between Runs burn a core each; a worker that waits for frames
  // must not. (Only matters when intra_op_threads > 1.)
  options.AddConfigEntry("session.intra_op.allow_spinning", "0");
  add_op_domains(options);  // brisvox's own operators (op_domains.h): only models that use them see them

  const std::vector<std::string> available = ort_available_providers();
  registered.clear();
  for (const auto& requested : config.providers) {
    const std::string full = provider_full_name(requested);
    if (full == "CPUExecutionProvider") continue;  // always last
    if (std::find(available.begin(), available.end(), full) == available.end()) {
      std::string list;
      for (const auto& a : available) list += (list.empty() ? "" : ", ") + a;
      const std::string message = fmt::format(
          "execution provider '{}' ({}) is not in this ONNX Runtime build (it has: {}); use an "
          "ONNX Runtime release with that provider (-DBRISVOX_ORT_ROOT=...) or drop it from the "
          "provider list",
          requested, full, list);
      if (config.on_unavailable_provider == ProviderFallback::kError) {
        throw Error(ErrorCode::kProviderUnavailable, message);
      }
      detail::log(LogLevel::kWarn, "{}; continuing without it", message);
      continue;
    }
    try {
      append_provider(options, full);
    } catch (const Ort::Exception& e) {
      throw Error(ErrorCode::kProviderUnavailable,
                  fmt::format("execution provider '{}' failed to initialise: {}", full, e.what()));
    }
    registered.push_back(full);
  }
  registered.push_back("CPUExecutionProvider");
  return options;
}

ModelSession::ModelSession(std::shared_ptr<Ort::Session> session, ModelInfo info, std::vector<std::string> providers)
    : session_(std::move(session)), info_(std::move(info)), providers_(std::move(providers)) {}

// The C++ wrappers throw on a failed status, which ONNX Runtime never returns for a valid
// RunOptions (it only sets the flag): noexcept for the watchdog's sake.
void ModelSession::cancel_run() noexcept {
  try {
    run_options_.SetTerminate();
  } catch (...) {
  }
}

void ModelSession::clear_cancel() noexcept {
  try {
    run_options_.UnsetTerminate();
  } catch (...) {
  }
}

ModelSession ModelSession::load_file(const std::string& path, const SessionConfig& config) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw Error(ErrorCode::kIo, fmt::format("cannot open model file '{}': {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(ErrorCode::kIo, fmt::format("model path '{}' is not a regular file", path));
  }
  const auto load = [&](std::vector<std::string>& providers, ModelInfo& info) {
    Ort::SessionOptions options = make_session_options(config, providers);
    try {
      auto session = std::make_shared<Ort::Session>(ort_env(), path.c_str(), options);
      info = describe_session(*session, path);
      read_onnx_header(path, info);
      return session;
    } catch (const Ort::Exception& e) {
      throw Error(ErrorCode::kBadModel,
                  fmt::format("ONNX Runtime cannot load model '{}': {}", path, e.what()));
    }
  };
  if (!config.share) {
    std::vector<std::string> providers;
    ModelInfo info;
    auto session = load(providers, info);
    return ModelSession(std::move(session), std::move(info), std::move(providers));
  }
  const std::shared_ptr<SharedEntry> entry = shared_entry(share_key(st, path, config));
  std::lock_guard lock(entry->loading);
  std::shared_ptr<Ort::Session> session = entry->session.lock();
  if (!session) {
    session = load(entry->providers, entry->info);
    entry->session = session;
  }
  return ModelSession(std::move(session), entry->info, entry->providers);
}

ModelSession ModelSession::load_memory(std::span<const std::byte> bytes, const std::string& name,
                                       const SessionConfig& config) {
  if (bytes.empty()) {
    throw Error(ErrorCode::kBadModel, fmt::format("model '{}' is empty (0 bytes)", name));
  }
  std::vector<std::string> providers;
  Ort::SessionOptions options = make_session_options(config, providers);
  try {
    auto session = std::make_shared<Ort::Session>(ort_env(), bytes.data(), bytes.size(), options);
    ModelInfo info = describe_session(*session, name);
    read_onnx_header(bytes, info);
    return ModelSession(std::move(session), std::move(info), std::move(providers));
  } catch (const Ort::Exception& e) {
    throw Error(ErrorCode::kBadModel,
                fmt::format("ONNX Runtime cannot load model '{}': {}", name, e.what()));
  }
}

}  // namespace brisvox::runtime
