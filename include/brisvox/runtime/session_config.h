// How an ONNX Runtime session is created. Defaults suit a dedicated inference worker: one thread
// of its own, no hidden pools, no arena that grows with the largest batch ever seen.
#pragma once

#include <string>
#include <vector>

namespace brisvox {

// What to do when a requested execution provider is not in this ONNX Runtime build.
enum class ProviderFallback {
  kError,  // throw Error(kProviderUnavailable): the default, never a silent fallback
  kWarn,   // log a warning naming the provider, and go on with the next one in the list
};

enum class GraphOptimization { kDisabled, kBasic, kExtended, kAll };

struct SessionConfig {
  // Threads ONNX Runtime may use inside one Run. 1 = the calling worker only: ORT then creates
  // no intra-op pool at all (counted by `brisvox doctor`). 0 = ORT's default (one per core).
  int intra_op_threads = 1;
  // Threads for running independent graph nodes in parallel; only used when !sequential.
  int inter_op_threads = 1;
  bool sequential = true;
  // ORT's CPU arena keeps the peak memory of any past Run; off keeps RSS predictable.
  bool cpu_arena = false;
  bool memory_pattern = true;
  GraphOptimization optimization = GraphOptimization::kAll;
  // Execution providers by name in order of preference ("cuda", "tensorrt", "openvino", ...);
  // the CPU provider is always implied last and need not be listed.
  std::vector<std::string> providers;
  ProviderFallback on_unavailable_provider = ProviderFallback::kError;
  // Loads of the same file with an equal config (every field above) while another such session is
  // alive get that session instead of a new one: the weights, the optimised graph and the kernels'
  // prepacked weights are then in memory once per process, not once per worker. ONNX Runtime's
  // Run is thread-safe on one session; each ModelSession keeps its own RunOptions, so cancelling
  // one worker's run does not touch another's. Only for load_file (a path and its mtime/size
  // identify the model); load_memory always builds a session of its own.
  bool share = false;

  // Throws Error(kInvalidArgument) naming the offending field.
  void validate() const;
};

}  // namespace brisvox
