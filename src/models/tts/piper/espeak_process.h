// One espeak-ng program running as a child process, spoken to over two socket pairs: text lines
// in on its stdin, one line of phonemes per clause out of its stdout (stderr is kept for error
// messages). espeak-ng (GPL) is never linked into brisvox: this is the only way brisvox uses it.
//
// Sockets rather than pipes so that writing to a child that died fails with EPIPE instead of
// raising SIGPIPE in the host process (send(MSG_NOSIGNAL)); brisvox does not touch signal masks.
//
// Not thread-safe: one thread at a time. Move-only. The destructor closes the child's stdin,
// kills it and reaps it (no zombie, no thread left behind).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace brisvox::tts {

class EspeakProcess {
 public:
  // argv[0] is run as given if it contains a '/', else looked up on PATH. `extra_env` entries
  // ("NAME=value") are added to (or replace those in) the parent's environment.
  // Throws Error(kIo) if it cannot be started (the message names the executable and errno).
  EspeakProcess(std::vector<std::string> argv, std::vector<std::string> extra_env);
  ~EspeakProcess();
  EspeakProcess(EspeakProcess&& other) noexcept;
  EspeakProcess& operator=(EspeakProcess&& other) noexcept;
  EspeakProcess(const EspeakProcess&) = delete;
  EspeakProcess& operator=(const EspeakProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Sends `text` (must hold no newline) followed by a newline. Returns false if the child has
  // gone (its stdin is closed).
  bool write_line(std::string_view text);
  // Reads one line (without its newline) into `line`. Returns false on end of output (the child
  // exited) or after timeout_ms without a complete line; `timed_out` says which.
  bool read_line(std::string& line, int timeout_ms, bool& timed_out);
  // What the child wrote to stderr so far (up to 4 KiB), for error messages; does not block.
  std::string stderr_text();
  // Kills and reaps the child now (idempotent); returns a description of how it ended
  // ("exited with status 1", "killed by signal 9").
  std::string terminate();

 private:
  void close_all() noexcept;

  pid_t pid_ = -1;
  int in_fd_ = -1;   // our end of the child's stdin
  int out_fd_ = -1;  // our end of the child's stdout
  int err_fd_ = -1;  // our end of the child's stderr
  std::string pending_;  // stdout bytes read past the last returned line
  std::string stderr_;
  std::string how_ended_;
};

}  // namespace brisvox::tts
