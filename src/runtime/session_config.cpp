#include "brisvox/runtime/session_config.h"

#include <fmt/format.h>

#include "brisvox/error.h"

namespace brisvox {

void SessionConfig::validate() const {
  if (intra_op_threads < 0 || intra_op_threads > 1024) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("intra_op_threads must be 0 (ORT default) to 1024, got {}", intra_op_threads));
  }
  if (inter_op_threads < 0 || inter_op_threads > 1024) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("inter_op_threads must be 0 (ORT default) to 1024, got {}", inter_op_threads));
  }
}

}  // namespace brisvox
