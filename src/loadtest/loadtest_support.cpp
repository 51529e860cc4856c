#include "loadtest/loadtest_support.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "brisvox/error.h"

namespace brisvox::loadtest {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::size_t kKeepLines = 40;
constexpr const char* kDefaultQuery = "sample_rate=16000&encoding=pcm_s16le&events=vad";

[[noreturn]] void refuse(const std::string& message) { throw Error(ErrorCode::kInvalidArgument, message); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool is_loopback(const asio::ip::address& a) {
  if (a.is_v4()) return a.to_v4().is_loopback();  // 127.0.0.0/8
  const auto v6 = a.to_v6();
  if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).is_loopback();
  return v6.is_loopback();  // ::1
}

// The value of `key` in a query string ("" if absent).
std::string query_value(const std::string& query, const std::string& key) {
  std::size_t pos = 0;
  while (pos <= query.size()) {
    std::size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    const std::string pair = query.substr(pos, amp - pos);
    const std::size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) return eq == std::string::npos ? "" : pair.substr(eq + 1);
    pos = amp + 1;
  }
  return "";
}

}  // namespace

Target parse_target(const std::string& url) {
  const std::string scheme = "ws://";
  if (lower(url.substr(0, scheme.size())) != scheme) {
    refuse(fmt::format("--url '{}': expected ws://127.0.0.1:PORT (plain WebSocket on this machine)", url));
  }
  std::string rest = url.substr(scheme.size());
  const std::size_t slash = rest.find_first_of("/?");
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) refuse(fmt::format("--url '{}': user info is not supported", url));

  Target t;
  if (!authority.empty() && authority.front() == '[') {  // [v6]:port
    const std::size_t close = authority.find(']');
    if (close == std::string::npos) refuse(fmt::format("--url '{}': unterminated [IPv6 address]", url));
    t.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty() && after.front() == ':') t.port = after.substr(1);
  } else {
    const std::size_t colon = authority.rfind(':');
    t.host = authority.substr(0, colon);
    if (colon != std::string::npos) t.port = authority.substr(colon + 1);
  }
  if (t.port.empty() || t.port.find_first_not_of("0123456789") != std::string::npos || t.port.size() > 5 ||
      std::stoi(t.port) < 1 || std::stoi(t.port) > 65535) {
    refuse(fmt::format("--url '{}': give the server's port, e.g. ws://127.0.0.1:8700", url));
  }

  // Policy: loopback only. Literals are checked as such; "localhost" is resolved and every
  // address it yields must be loopback too.
  const std::string policy =
      "the load test only connects to this machine (127.0.0.0/8, ::1 or localhost): it never sends traffic elsewhere";
  boost::system::error_code ec;
  const auto literal = asio::ip::make_address(t.host, ec);
  if (!ec) {
    if (!is_loopback(literal)) refuse(fmt::format("--url host '{}' refused: {}", t.host, policy));
    t.endpoints.emplace_back(literal, static_cast<unsigned short>(std::stoi(t.port)));
  } else if (lower(t.host) == "localhost") {
    asio::io_context io;
    tcp::resolver resolver(io);
    const auto results = resolver.resolve(t.host, t.port, ec);
    if (ec) refuse(fmt::format("--url: cannot resolve 'localhost': {}", ec.message()));
    for (const auto& r : results) {
      if (!is_loopback(r.endpoint().address())) {
        refuse(fmt::format("--url: 'localhost' resolves to {}, which is not a loopback address: {}",
                           r.endpoint().address().to_string(), policy));
      }
      t.endpoints.push_back(r.endpoint());
    }
    if (t.endpoints.empty()) refuse("--url: 'localhost' resolves to no address");
  } else {
    refuse(fmt::format("--url host '{}' refused: {}", t.host, policy));
  }
  t.host_header = (t.host.find(':') != std::string::npos ? "[" + t.host + "]" : t.host) + ":" + t.port;

  if (path.empty() || path == "/") path = "/v1/stream";
  const std::size_t q = path.find('?');
  if (q == std::string::npos) {
    path += std::string("?") + kDefaultQuery;
  } else {
    const std::string query = path.substr(q + 1);
    const std::string events = query_value(query, "events");
    const std::string rate = query_value(query, "sample_rate");
    const std::string encoding = query_value(query, "encoding");
    if (events.find("vad") == std::string::npos || (!rate.empty() && rate != "16000") ||
        (!encoding.empty() && encoding != "pcm_s16le")) {
      refuse(fmt::format("--url '{}': the query must ask for events=vad with 16 kHz pcm_s16le (the test sends that "
                         "and times the vad events); or give no query for '{}'",
                         url, kDefaultQuery));
    }
  }
  t.path = path;
  return t;
}

std::optional<std::string> http_get(const Target& target, const std::string& path, double timeout_s,
                                    std::string* why) {
  // Asynchronous, so that the whole exchange is bounded by the timeout (Beast's timeouts do not
  // apply to synchronous operations): a stopped server accepts on its backlog and never answers.
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  http::request<http::empty_body> req{http::verb::get, path, 11};
  req.set(http::field::host, target.host_header);
  req.set(http::field::user_agent, "brisvox-loadtest");
  req.set(http::field::connection, "close");
  http::response<http::string_body> res;
  boost::system::error_code result = asio::error::timed_out;
  stream.expires_after(std::chrono::milliseconds(static_cast<long>(timeout_s * 1000)));
  stream.async_connect(target.endpoints, [&](boost::system::error_code ec, const tcp::endpoint&) {
    if (ec) {
      result = ec;
      return;
    }
    http::async_write(stream, req, [&](boost::system::error_code wec, std::size_t) {
      if (wec) {
        result = wec;
        return;
      }
      http::async_read(stream, buffer, res, [&](boost::system::error_code rec, std::size_t) { result = rec; });
    });
  });
  io.run();  // the stream's expiry ends every operation in time
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  if (result) {
    if (why != nullptr) *why = fmt::format("GET {}: {}", path, result.message());
    return std::nullopt;
  }
  if (res.result() != http::status::ok) {
    if (why != nullptr) *why = fmt::format("GET {}: HTTP {}", path, res.result_int());
    return std::nullopt;
  }
  return std::move(res.body());
}

Samples parse_prometheus(const std::string& text) {
  Samples out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() == '#') continue;
    const std::size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const std::string value = line.substr(space + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) continue;
    out[line.substr(0, space)] = v;
  }
  return out;
}

std::optional<double> sample_value(const Samples& s, const std::string& key) {
  const auto it = s.find(key);
  if (it == s.end()) return std::nullopt;
  return it->second;
}

std::optional<double> histogram_quantile_le(const Samples& start, const Samples& end, const std::string& name,
                                            const std::string& labels, double q) {
  const std::string prefix = name + "_bucket{" + (labels.empty() ? "" : labels + ",") + "le=\"";
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count in end - start)
  for (auto it = end.lower_bound(prefix); it != end.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    const std::string le = it->first.substr(prefix.size(), it->first.size() - prefix.size() - 2);
    const double bound = le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr);
    buckets.emplace_back(bound, it->second - sample_value(start, it->first).value_or(0.0));
  }
  std::sort(buckets.begin(), buckets.end());
  if (buckets.empty() || buckets.back().second <= 0) return std::nullopt;
  const double total = buckets.back().second;
  for (const auto& [bound, cumulative] : buckets) {
    if (cumulative >= q * total) return bound;
  }
  return buckets.back().first;
}

// ---------------------------------------------------------------------------------------------

ServerProcess::ServerProcess(const std::vector<std::string>& args, double timeout_s) {
  char exe[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) throw Error(ErrorCode::kIo, "--spawn-server: cannot find this program (/proc/self/exe)");
  std::vector<std::string> argv_s = {exe, "serve", "--host", "127.0.0.1", "--port", "0"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(ErrorCode::kIo, fmt::format("pipe: {}", std::strerror(errno)));
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(ErrorCode::kIo, fmt::format("fork: {}", std::strerror(errno)));
  }
  if (pid_ == 0) {  // child: async-signal-safe calls only
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the load test
    if (::getppid() != parent) ::_exit(127);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  const int fd = fds[0];
  reader_ = std::thread([this, fd] { drain(fd); });

  std::unique_lock lock(mu_);
  // The reader thread sets listening_ or eof_: poll them.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  while (!listening_ && !eof_ && std::chrono::steady_clock::now() < deadline) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    lock.lock();
  }
  if (!listening_) {
    lock.unlock();
    const std::string why = eof_ ? "exited" : "did not start in time";
    stop(2.0);
    throw Error(ErrorCode::kIo, fmt::format("--spawn-server: `brisvox serve` {}; its output:\n{}", why, last_lines()));
  }
}

void ServerProcess::drain(int fd) {
  std::string partial;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = partial.find('\n')) != std::string::npos) {
      std::string line = partial.substr(0, nl);
      partial.erase(0, nl + 1);
      std::lock_guard lock(mu_);
      if (!listening_) {
        const std::string marker = "listening on http://127.0.0.1:";
        const std::size_t at = line.find(marker);
        if (at != std::string::npos) {
          port_ = std::atoi(line.c_str() + at + marker.size());
          listening_ = port_ > 0;
        }
      }
      lines_.push_back(std::move(line));
      if (lines_.size() > kKeepLines) lines_.erase(lines_.begin());
    }
  }
  ::close(fd);
  std::lock_guard lock(mu_);
  if (!partial.empty()) lines_.push_back(partial);
  eof_ = true;
}

int ServerProcess::stop(double timeout_s) {
  if (stopped_ || pid_ <= 0) return status_;
  stopped_ = true;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  int wstatus = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid_, &wstatus, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (done == 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &wstatus, 0);
  }
  if (reader_.joinable()) reader_.join();
  status_ = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return status_;
}

ServerProcess::~ServerProcess() { stop(2.0); }

std::string ServerProcess::last_lines() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& l : lines_) out += "  " + l + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------------

double self_cpu_s() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

double process_cpu_s(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t paren = text.rfind(')');  // the name may hold spaces
  if (paren == std::string::npos) return 0.0;
  std::istringstream fields(text.substr(paren + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {  // field 3 is the state
    if (i == 14) utime = std::strtoull(f.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(f.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double load_average_1m() {
  double loads[1] = {0};
  return ::getloadavg(loads, 1) == 1 ? loads[0] : 0.0;
}

}  // namespace brisvox::loadtest
