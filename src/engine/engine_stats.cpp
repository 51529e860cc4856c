#include "brisvox/engine/engine_stats.h"

#include <fmt/format.h>

#include "brisvox/error.h"

namespace brisvox {

const ModelStats& EngineStats::model(std::string_view name) const {
  for (const ModelStats& m : models) {
    if (m.name == name) return m;
  }
  std::string names;
  for (const ModelStats& m : models) names += (names.empty() ? "" : ", ") + m.name;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("the engine has no model named '{}' (it has: {})", name, names.empty() ? "none" : names));
}

std::uint64_t EngineStats::frames_processed() const noexcept {
  std::uint64_t n = 0;
  for (const ModelStats& m : models) {
    if (m.family == ModelFamily::kSileroVad) n += m.items;
  }
  return n;
}

int EngineStats::num_workers() const noexcept {
  int n = 0;
  for (const ModelStats& m : models) n += m.num_workers;
  return n;
}

}  // namespace brisvox
