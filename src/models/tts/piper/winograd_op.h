// The Piper family's own ONNX Runtime operator, in the domain "ai.brisvox" (version 1):
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
// rewritten file then runs only in brisvox. Errors come back to ONNX Runtime as statuses, never
// exceptions.
#pragma once

namespace brisvox::piper {

inline constexpr const char* kPiperOpDomain = "ai.brisvox";

// Registers the domain with the runtime (runtime/op_domains.h), once per process: every session
// made afterwards can run the operator. Call before loading a model that uses it. Thread-safe.
void register_winograd_op();

// Whether WinogradConv has a vector kernel on this CPU (AVX-512F, or AVX2 with FMA). Without one
// it runs its portable kernel, ~10x slower than with AVX2 and several times slower than ONNX
// Runtime's own convolution: the voice file without the operator is then the better choice.
bool winograd_vectorised();

}  // namespace brisvox::piper
