// The rates Silero VAD runs at natively and its frame at each: the one place these facts live
// (the engine, the offline runner, the server and the CLI all ask here).
#pragma once

namespace brisvox {

// The model rate for a stream of `input_rate_hz`: `requested_hz` when given (8000 or 16000),
// else 8000 for 8 kHz input (telephony runs natively) and 16000 for every other rate (resampled).
// Throws Error(kInvalidArgument) for a requested rate other than 0, 8000 or 16000.
int silero_model_rate_hz(int input_rate_hz, int requested_hz = 0);

// The model's chunk and context sizes at a rate: 16000 -> 512 + 64, 8000 -> 256 + 32.
// Throws Error(kInvalidArgument) for any other rate.
int silero_chunk_samples(int sample_rate_hz);
int silero_context_samples(int sample_rate_hz);

}  // namespace brisvox
