// The rates Silero VAD runs at natively and its frame at each: the one place these facts live
// (the engine, the offline runner, the server and the CLI all ask here).
#pragma once

namespace brisvox {

// The model rate for a stream of `input_rate_hz`: `requested_hz` when given (8000 or 16000),
// else 16000 for every input rate: 8 kHz telephony is upsampled (2x, Resampler) to the 16 kHz
// model, which scores higher on phone audio than the 8 kHz model (docs/TELEPHONY.md); 8000 runs
// the 8 kHz model natively, at about 1.7x the callers per core (docs/TELEPHONY.md).
// Throws Error(kInvalidArgument) for a requested rate other than 0, 8000 or 16000.
int silero_model_rate_hz(int input_rate_hz, int requested_hz = 0);

// The model's chunk and context sizes at a rate: 16000 -> 512 + 64, 8000 -> 256 + 32.
// Throws Error(kInvalidArgument) for any other rate.
int silero_chunk_samples(int sample_rate_hz);
int silero_context_samples(int sample_rate_hz);

}  // namespace brisvox
