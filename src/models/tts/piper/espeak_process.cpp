#include "models/tts/piper/espeak_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "brisvox/error.h"

extern char** environ;

namespace brisvox::tts {
namespace {

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A socket pair whose parent end is close-on-exec (the child gets the other end as 0, 1 or 2).
void make_pair(int& parent_end, int& child_end) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw Error(ErrorCode::kIo, fmt::format("cannot create a socket pair for espeak-ng: {}", std::strerror(errno)));
  }
  parent_end = fds[0];
  child_end = fds[1];
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return "stopped";
}

}  // namespace

EspeakProcess::EspeakProcess(std::vector<std::string> argv, std::vector<std::string> extra_env) {
  if (argv.empty() || argv[0].empty()) {
    throw Error(ErrorCode::kInvalidArgument, "espeak-ng executable name is empty");
  }
  int child_in = -1;
  int child_out = -1;
  int child_err = -1;
  try {
    make_pair(in_fd_, child_in);
    make_pair(out_fd_, child_out);
    make_pair(err_fd_, child_err);
  } catch (...) {
    close_fd(child_in);
    close_fd(child_out);
    close_fd(child_err);
    close_all();
    throw;
  }

  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& x : extra_env) replaced = replaced || x.compare(0, name.size() + 1, std::string(name) + "=") == 0;
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& x : extra_env) env.push_back(x);
  std::vector<char*> argv_c;
  for (auto& a : argv) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  std::vector<char*> env_c;
  for (auto& e : env) env_c.push_back(e.data());
  env_c.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_in, 0);
  posix_spawn_file_actions_adddup2(&actions, child_out, 1);
  posix_spawn_file_actions_adddup2(&actions, child_err, 2);
  // The child gets its three sockets and nothing else of the host (a server's listening socket
  // without close-on-exec, say).
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  const bool search_path = argv[0].find('/') == std::string::npos;
  const int rc = search_path ? ::posix_spawnp(&pid_, argv_c[0], &actions, nullptr, argv_c.data(), env_c.data())
                             : ::posix_spawn(&pid_, argv_c[0], &actions, nullptr, argv_c.data(), env_c.data());
  posix_spawn_file_actions_destroy(&actions);
  close_fd(child_in);
  close_fd(child_out);
  close_fd(child_err);
  if (rc != 0) {
    pid_ = -1;
    close_all();
    throw Error(ErrorCode::kIo,
                fmt::format("cannot start espeak-ng '{}': {}{}", argv[0], std::strerror(rc),
                            rc == ENOENT ? " (install Debian's espeak-ng, apt-get install espeak-ng, or run "
                                           "scripts/setup.sh, or point the phonemizer at the program)"
                                         : ""));
  }
  ::fcntl(err_fd_, F_SETFL, ::fcntl(err_fd_, F_GETFL) | O_NONBLOCK);
}

EspeakProcess::~EspeakProcess() { terminate(); }

EspeakProcess::EspeakProcess(EspeakProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      in_fd_(std::exchange(other.in_fd_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      err_fd_(std::exchange(other.err_fd_, -1)),
      pending_(std::move(other.pending_)),
      stderr_(std::move(other.stderr_)),
      how_ended_(std::move(other.how_ended_)) {}

EspeakProcess& EspeakProcess::operator=(EspeakProcess&& other) noexcept {
  if (this != &other) {
    terminate();
    pid_ = std::exchange(other.pid_, -1);
    in_fd_ = std::exchange(other.in_fd_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    err_fd_ = std::exchange(other.err_fd_, -1);
    pending_ = std::move(other.pending_);
    stderr_ = std::move(other.stderr_);
    how_ended_ = std::move(other.how_ended_);
  }
  return *this;
}

void EspeakProcess::close_all() noexcept {
  close_fd(in_fd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
}

bool EspeakProcess::write_line(std::string_view text) {
  if (in_fd_ < 0) return false;
  std::string buf(text);
  buf.push_back('\n');
  std::size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::send(in_fd_, buf.data() + done, buf.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool EspeakProcess::read_line(std::string& line, int timeout_ms, bool& timed_out) {
  timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      line.assign(pending_, 0, nl);
      pending_.erase(0, nl + 1);
      return true;
    }
    if (out_fd_ < 0) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      return false;
    }
    pollfd p{out_fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;  // timeout: the loop re-checks the deadline
    char buf[4096];
    const ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // end of output: the child has exited or closed stdout
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

std::string EspeakProcess::stderr_text() {
  if (err_fd_ >= 0) {
    char buf[1024];
    ssize_t n = 0;
    while (stderr_.size() < 4096 && (n = ::read(err_fd_, buf, sizeof buf)) > 0) {
      stderr_.append(buf, static_cast<std::size_t>(n));
    }
  }
  std::string s = stderr_;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string EspeakProcess::terminate() {
  if (pid_ > 0) {
    stderr_text();
    close_fd(in_fd_);
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0) {
      ::kill(pid_, SIGKILL);
      do {
        r = ::waitpid(pid_, &status, 0);
      } while (r < 0 && errno == EINTR);
    }
    how_ended_ = r == pid_ ? describe_status(status) : "could not be reaped";
    pid_ = -1;
  }
  close_all();
  return how_ended_;
}

}  // namespace brisvox::tts
