// POST /v1/audio/transcriptions and /v1/audio/translations (OpenAI's audio API, docs/OPENAI.md).
//
// A transcription is the form's audio run through the engine exactly as POST /v1/transcribe runs
// an upload (vad_request.h run_upload: decoded a block at a time, the duration limit, the upload
// gate held by the session, stopped when the client leaves), answered in the format it asks
// (openai_api.h). Runs on a job thread.
#pragma once

#include <atomic>
#include <string_view>

#include "brisvox/engine/engine.h"
#include "server/metrics.h"
#include "server/vad_request.h"

namespace brisvox::server {

HttpAnswer run_openai_transcription(Engine& engine, ServerMetrics& metrics, std::string_view body,
                                    std::string_view content_type, const std::atomic<bool>& abort,
                                    double max_duration_s, const std::atomic<bool>* client_gone);

// POST /v1/audio/translations: brisvox does not translate yet (its bundled Whisper, tiny.en, is
// English-only, and translation needs a multilingual model and Whisper's translate task): an
// OpenAI 400 that says so, naming the configured model.
HttpAnswer openai_translation_refusal(const EngineConfig& engine);

}  // namespace brisvox::server
