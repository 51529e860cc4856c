// The portable WinogradConv kernel: one float per "vector", any CPU, any channel count.
#include "models/tts/piper/winograd_kernel.h"

namespace brisvox::piper::winograd {

void run_generic(const View& view, const float* x, const float* residual, float* y, int64_t length) {
  run_with<Scalar>(view, x, residual, y, length);
}

}  // namespace brisvox::piper::winograd
