// The subcommands of the `brisvox` tool. Each registers its options on the CLI11 app and returns
// the function to run when it is chosen; that function returns the process exit status.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace brisvox::cli {

using Command = std::function<int()>;

// Exit statuses: 0 success, 1 some input failed (others were still processed), 2 usage error.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInputFailed = 1;
inline constexpr int kExitUsage = 2;

Command add_vad_command(CLI::App& app);
Command add_doctor_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_mel_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_turn_command(CLI::App& app);
Command add_loadtest_command(CLI::App& app);
Command add_transcribe_command(CLI::App& app);
Command add_say_command(CLI::App& app);
Command add_voices_command(CLI::App& app);

}  // namespace brisvox::cli
