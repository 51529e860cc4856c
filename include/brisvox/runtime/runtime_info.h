// Facts about the ONNX Runtime brisvox is linked against, for `brisvox doctor` and bug reports.
#pragma once

#include <string>
#include <vector>

namespace brisvox {

// The version of the loaded libonnxruntime ("1.29.0"), which may differ from the headers'.
std::string ort_version();
// Execution providers this ONNX Runtime build has ("CPUExecutionProvider", ...).
std::vector<std::string> ort_available_providers();
// Build string of the loaded library (compiler, git commit), as ORT reports it.
std::string ort_build_info();
// Creates the process-wide ONNX Runtime environment now, rather than with the first model. ORT
// starts one thread of its own when the environment is created (measured on 1.29; a fixed extra,
// once per process): call this first to keep that thread out of later thread counts.
void ort_initialize();
// Number of threads in this process right now, counted from /proc/self/task.
int process_thread_count();
// Resident set size of this process in bytes, from /proc/self/statm; 0 if unknown.
long process_rss_bytes();
// CPU time every process on the machine has used since boot (/proc/stat: all but idle and
// iowait), seconds; 0 if unknown. Benchmarks difference it to see who else used the cores.
double machine_busy_cpu_s();
// Raises this process's soft open-file limit (RLIMIT_NOFILE) to its hard limit; returns the soft
// limit now in force (-1 if unknown or unlimited). `brisvox serve` and `brisvox loadtest` call it
// at start: a 1024 soft limit is common and a server or a load test holds one per connection.
long raise_open_file_limit();

}  // namespace brisvox
