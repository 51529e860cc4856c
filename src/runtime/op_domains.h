// Operator domains of brisvox's own (ONNX Runtime custom operators) that a model family brings: the
// kernels live in the family's folder (the Piper family's WinogradConv, models/tts/piper/
// winograd_op.h), and the family registers its domain here once, before it loads a model that
// uses it. Every session made afterwards has every registered domain; a model that does not use
// them is unaffected.
#pragma once

#include <onnxruntime_cxx_api.h>

namespace brisvox::runtime {

// Adds `domain` to the sessions made from now on. It must live until the process ends (sessions
// keep pointers to it and its operators). Registering the same domain again does nothing.
// Thread-safe.
void register_op_domain(Ort::CustomOpDomain& domain);

// make_session_options: the registered domains into `options`. Thread-safe.
void add_op_domains(Ort::SessionOptions& options);

}  // namespace brisvox::runtime
