// Pieces of `brisvox loadtest` around the client itself: the loopback-only target, /metrics, the
// optional child server, process probes.
#pragma once

#include <sys/types.h>

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace brisvox::loadtest {

// A ws:// URL whose host is a loopback address. Policy: the load test never sends traffic off
// this machine.
struct Target {
  std::string host;      // as written ("127.0.0.1", "localhost", "::1")
  std::string port;      // "8700"
  std::string path;      // "/v1/stream?sample_rate=16000&encoding=pcm_s16le&events=vad"
  std::string host_header;  // "127.0.0.1:8700"
  std::vector<boost::asio::ip::tcp::endpoint> endpoints;  // loopback only
};

// Parses ws://HOST[:PORT][/PATH[?QUERY]] and resolves it. HOST must be a 127.0.0.0/8 or ::1
// literal or "localhost" (whose addresses must all be loopback); anything else, wss:// or a
// missing port throws Error(kInvalidArgument). Without a path, /v1/stream; without a query,
// sample_rate=16000&encoding=pcm_s16le&events=vad (a given query must ask for events=vad at
// 16 kHz pcm_s16le: the test sends that and measures the vad events).
Target parse_target(const std::string& url);

// GET `path` over HTTP/1.1 on the target's first endpoint. The body, or nullopt (and `why`) on
// any failure or non-200 answer. Bounded by timeout_s.
std::optional<std::string> http_get(const Target& target, const std::string& path, double timeout_s,
                                    std::string* why = nullptr);

// Prometheus text: "name{labels}" -> value (comments skipped).
using Samples = std::map<std::string, double>;
Samples parse_prometheus(const std::string& text);
// The value of `key`, or nullopt.
std::optional<double> sample_value(const Samples& s, const std::string& key);
// Upper bound (the `le`) of the bucket holding quantile q of histogram `name` (the series with
// `labels` before le, e.g. `model="vad"`, or none) in end - start; nullopt when it has no
// observations in between.
std::optional<double> histogram_quantile_le(const Samples& start, const Samples& end, const std::string& name,
                                            const std::string& labels, double q);

// `brisvox serve --host 127.0.0.1 --port 0 ARGS...` as a child of this process (the same binary),
// its stdout/stderr read by a thread (kept: the last lines, for errors).
class ServerProcess {
 public:
  // Waits up to timeout_s for the "listening on" line. Throws Error(kIo) if the child exits or
  // says nothing in time (with its last lines).
  ServerProcess(const std::vector<std::string>& args, double timeout_s);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // SIGTERM, then SIGKILL after timeout_s. The exit status (128 + signal when killed by one).
  int stop(double timeout_s);
  std::string last_lines() const;

 private:
  void drain(int fd);

  pid_t pid_ = -1;
  int port_ = 0;
  bool stopped_ = false;
  int status_ = 0;
  std::thread reader_;
  mutable std::mutex mu_;
  std::vector<std::string> lines_;  // the last kKeepLines
  bool eof_ = false;
  bool listening_ = false;
};

// getrusage(RUSAGE_SELF): user + system seconds.
double self_cpu_s();
// utime + stime of process `pid` from /proc, seconds; 0 if unknown.
double process_cpu_s(pid_t pid);
// 1-minute load average, 0 if unknown.
double load_average_1m();

}  // namespace brisvox::loadtest
