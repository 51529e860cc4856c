// brisvox's own ONNX Runtime operators, in the domain "ai.brisvox" (version 1), registered on
// every session brisvox creates (make_session_options). A model without them is unaffected.
//
//   WinogradConv(X, W, B[, R]) -> Y   (WinogradConv, winograd_conv.h)
//     X [N, C, 1, T] or [N, C, T]; W [O, C, 1, r] or [O, C, r], a constant initializer, r in
//     {3, 5, 7}; B [O], a constant initializer; R (optional) shaped like Y.
//     Attributes: dilation (int, default 1); alpha (float, optional: when present, X goes
//     through LeakyRelu(alpha) first).
//     Y = Conv(LeakyRelu(X), W, B, dilations = d, pads = d (r - 1) / 2 each side) + R, shaped
//     [N, O, 1, T] or [N, O, T] like X.
//
// tools/piper/conv2d_rewrite.py (pass 6) writes these nodes into the Piper voice's decoder; the
// rewritten file then runs only in brisvox.
#pragma once

#include <onnxruntime_cxx_api.h>

namespace brisvox::runtime {

inline constexpr const char* kCustomOpDomain = "ai.brisvox";

// Adds the "ai.brisvox" domain to options. The domain lives for the whole process.
void add_custom_ops(Ort::SessionOptions& options);

// Whether WinogradConv has a vector kernel on this CPU (AVX-512F, or AVX2 with FMA). Without one
// it runs its portable kernel, ~10x slower than with AVX2 and several times slower than ONNX
// Runtime's own convolution: a model adapter should then prefer a file without the operator.
bool custom_ops_vectorised();

}  // namespace brisvox::runtime
