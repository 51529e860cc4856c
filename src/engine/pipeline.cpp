#include "engine/pipeline.h"

#include <fmt/format.h>

#include <algorithm>

#include "brisvox/error.h"
#include "brisvox/models/vad/silero_rates.h"
#include "engine/call/barge_in_stage.h"
#include "engine/stages/stt_stage.h"
#include "engine/stages/turn_stage.h"

namespace brisvox::engine {

std::vector<std::unique_ptr<Stage>> make_stages(StreamConfig& config, int model_rate_hz, const ModelRegistry& models,
                                                const BargeInOptions* barge_in, std::shared_ptr<CallLink> call) {
  TurnPool* turn = nullptr;
  if (config.turn) {
    turn = models.turn_pool(config.turn->model);
    if (turn == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("the stream asks for end-of-turn detection but the engine has no turn model named '{}' "
                              "(add ModelSpec::smart_turn(\"v3.2\" or PATH) to EngineConfig::models; its models: {})",
                              config.turn->model, models.describe()));
    }
  }
  SttPool* stt = nullptr;
  if (config.stt) {
    stt = models.stt_pool(config.stt->model);
    if (stt == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("the stream asks for speech-to-text but the engine has no Whisper model named '{}' "
                              "(add ModelSpec::whisper(FOLDER) to EngineConfig::models; its models: {})",
                              config.stt->model, models.describe()));
    }
    config.vad.params.max_speech_s = std::min(config.vad.params.max_speech_s, kSttMaxSegmentS);
  }
  if (barge_in && barge_in->enabled && barge_in->on_turn_end && !config.turn) {
    throw Error(ErrorCode::kInvalidArgument,
                "BargeInOptions::on_turn_end interrupts when the caller's turn ends: the call's stream needs a turn "
                "stage (CallConfig::listen.turn)");
  }
  const int chunk = silero_chunk_samples(model_rate_hz);
  std::vector<std::unique_ptr<Stage>> stages;
  TurnStage* turn_stage = nullptr;
  if (turn) {
    auto stage = std::make_unique<TurnStage>(model_rate_hz, chunk, *config.turn, *turn);
    turn_stage = stage.get();
    stages.push_back(std::move(stage));
  }
  if (stt) {
    auto stage = std::make_unique<SttStage>(*config.stt, *stt);  // Error for bad decoding options
    if (stage->search().max_positions() > stt->max_positions()) {  // every attempt has the same prompt
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("the stt stage's decoding needs {} decoder positions (its prompt and hotwords, "
                              "max_new_tokens {}), the model's decoder lanes hold {}: raise the model's option "
                              "prompt_tokens",
                              stage->search().max_positions(), config.stt->decode.max_new_tokens, stt->max_positions()));
    }
    stages.push_back(std::move(stage));
  }
  if (barge_in && barge_in->enabled && call) {
    stages.push_back(
        std::make_unique<BargeInStage>(*barge_in, config.vad, model_rate_hz, chunk, std::move(call), turn_stage));
  }
  return stages;
}

}  // namespace brisvox::engine
