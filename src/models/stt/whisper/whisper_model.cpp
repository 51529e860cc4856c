// WhisperModel::load: layout detection and the three configuration readers.
#include "brisvox/models/stt/whisper_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "brisvox/error.h"
#include "runtime/onnx_header.h"

namespace brisvox {

namespace fs = std::filesystem;

const char* to_string(WhisperLayout layout) {
  switch (layout) {
    case WhisperLayout::kBrisvox: return "brisvox";
    case WhisperLayout::kSherpaOnnx: return "sherpa-onnx";
    case WhisperLayout::kOptimum: return "optimum";
  }
  return "?";
}

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("cannot read '{}'", path.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kBadModel, fmt::format("'{}' is not valid JSON: {}", path.string(), e.what()));
  }
}

int json_int(const nlohmann::json& j, const char* key, const fs::path& file) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) {
    throw Error(ErrorCode::kBadModel, fmt::format("'{}' has no integer '{}'", file.string(), key));
  }
  return it->get<int>();
}

std::vector<int> json_ints(const nlohmann::json& j, const char* key, const fs::path& file) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array()) {
    throw Error(ErrorCode::kBadModel, fmt::format("'{}' has no list '{}'", file.string(), key));
  }
  std::vector<int> out;
  for (const auto& v : *it) {
    if (!v.is_number_integer()) {
      throw Error(ErrorCode::kBadModel, fmt::format("'{}': '{}' holds a non-integer", file.string(), key));
    }
    out.push_back(v.get<int>());
  }
  return out;
}

// The task and start tokens faster-whisper's get_suppressed_tokens() adds to a non-speech list.
std::vector<int> with_special_suppressed(std::vector<int> ids, const WhisperSpecialTokens& t) {
  ids.insert(ids.end(), {t.transcribe, t.translate, t.sot, t.sot_prev, t.sot_lm, t.no_speech});
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// Languages are the tokens <|xx|> between <|startoftranscript|> and <|translate|>.
std::vector<WhisperLanguage> languages_between(const WhisperVocabulary& v, int sot, int translate) {
  std::vector<WhisperLanguage> out;
  for (int id = sot + 1; id < translate; ++id) {
    const std::string_view b = v.bytes(id);
    if (b.size() > 4 && b.substr(0, 2) == "<|" && b.substr(b.size() - 2) == "|>") {
      out.push_back({std::string(b.substr(2, b.size() - 4)), id});
    }
  }
  return out;
}

}  // namespace

struct WhisperModelLoader {
  static void brisvox(WhisperModel& m, const fs::path& dir) {
    const fs::path cfg_path = dir / "whisper.json";
    const nlohmann::json j = read_json(cfg_path);
    if (j.value("format", "") != "brisvox-whisper") {
      throw Error(ErrorCode::kBadModel, fmt::format("'{}' is not a brisvox Whisper configuration (no \"format\": \"brisvox-whisper\")", cfg_path.string()));
    }
    if (j.value("format_version", 0) != 1) {
      throw Error(ErrorCode::kBadModel,
                  fmt::format("'{}' has format_version {}; this brisvox reads version 1 (re-run tools/whisper/convert_ct2.py)",
                              cfg_path.string(), j.value("format_version", 0)));
    }
    WhisperConfig& c = m.config_;
    if (!j.contains("dims") || !j.contains("tokens")) {
      throw Error(ErrorCode::kBadModel, fmt::format("'{}' has no \"dims\" or \"tokens\"", cfg_path.string()));
    }
    const auto& d = j["dims"];
    c.dims = {json_int(d, "n_mels", cfg_path),       json_int(d, "n_audio_ctx", cfg_path),
              json_int(d, "n_audio_state", cfg_path), json_int(d, "n_audio_head", cfg_path),
              json_int(d, "n_audio_layer", cfg_path), json_int(d, "n_vocab", cfg_path),
              json_int(d, "n_text_ctx", cfg_path),    json_int(d, "n_text_state", cfg_path),
              json_int(d, "n_text_head", cfg_path),   json_int(d, "n_text_layer", cfg_path)};
    const auto& t = j["tokens"];
    c.tokens = {json_int(t, "eot", cfg_path),           json_int(t, "sot", cfg_path),
                json_int(t, "translate", cfg_path),     json_int(t, "transcribe", cfg_path),
                json_int(t, "sot_lm", cfg_path),        json_int(t, "sot_prev", cfg_path),
                json_int(t, "no_speech", cfg_path),     json_int(t, "no_timestamps", cfg_path),
                json_int(t, "timestamp_begin", cfg_path), json_int(t, "blank", cfg_path)};
    c.multilingual = j.value("multilingual", false);
    if (const auto it = j.find("languages"); it != j.end() && it->is_array()) {
      for (const auto& l : *it) {
        if (!l.is_array() || l.size() != 2 || !l[0].is_string() || !l[1].is_number_integer()) {
          throw Error(ErrorCode::kBadModel, fmt::format("'{}': languages entries must be [code, id]", cfg_path.string()));
        }
        c.languages.push_back({l[0].get<std::string>(), l[1].get<int>()});
      }
    }
    c.suppress_tokens = json_ints(j, "suppress_tokens", cfg_path);
    c.suppress_blank = json_ints(j, "suppress_blank", cfg_path);
    std::string encoder = "encoder.onnx";
    std::string decoder = "decoder.onnx";
    std::string vocabulary = "vocabulary.txt";
    if (const auto f = j.find("files"); f != j.end() && f->is_object()) {
      encoder = f->value("encoder", encoder);
      decoder = f->value("decoder", decoder);
      vocabulary = f->value("vocabulary", vocabulary);
    }
    m.encoder_path_ = (dir / encoder).string();
    m.decoder_path_ = (dir / decoder).string();
    m.vocabulary_ = WhisperVocabulary::from_vocabulary_txt((dir / vocabulary).string());
  }

  static bool sherpa_files(const fs::path& dir, std::string& encoder, std::string& decoder, std::string& tokens) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    for (const char* variant : {"", ".int8"}) {
      const std::string enc_suffix = std::string("-encoder") + variant + ".onnx";
      for (const auto& name : names) {
        if (name.size() <= enc_suffix.size() ||
            name.compare(name.size() - enc_suffix.size(), enc_suffix.size(), enc_suffix) != 0) {
          continue;
        }
        const std::string prefix = name.substr(0, name.size() - enc_suffix.size());
        if (!variant[0] && prefix.size() > 5 && prefix.compare(prefix.size() - 5, 5, ".int8") == 0) continue;
        const fs::path dec = dir / (prefix + "-decoder" + variant + ".onnx");
        const fs::path tok = dir / (prefix + "-tokens.txt");
        if (is_file(dec) && is_file(tok)) {
          encoder = (dir / name).string();
          decoder = dec.string();
          tokens = tok.string();
          return true;
        }
      }
    }
    return false;
  }

  static void sherpa(WhisperModel& m, const std::string& encoder, const std::string& decoder,
                     const std::string& tokens) {
    ModelInfo info;
    info.source = encoder;
    if (!runtime::read_onnx_header(encoder, info)) {
      throw Error(ErrorCode::kBadModel, fmt::format("'{}' is not a readable ONNX file", encoder));
    }
    const auto meta = [&](const char* key) -> const std::string& {
      const auto it = info.metadata.find(key);
      if (it == info.metadata.end()) {
        throw Error(ErrorCode::kBadModel,
                    fmt::format("sherpa-onnx Whisper encoder '{}' has no metadata '{}' (brisvox reads the configuration "
                                "that sherpa-onnx's scripts/whisper/export-onnx.py stores in the encoder)",
                                encoder, key));
      }
      return it->second;
    };
    const auto meta_int = [&](const char* key) {
      const std::string& v = meta(key);
      int out = 0;
      const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
      if (ec != std::errc() || ptr != v.data() + v.size()) {
        throw Error(ErrorCode::kBadModel, fmt::format("'{}': metadata '{}' is '{}', not an integer", encoder, key, v));
      }
      return out;
    };
    const auto meta_ints = [&](const char* key) {
      std::vector<int> out;
      const std::string& v = meta(key);
      std::size_t start = 0;
      while (start < v.size()) {
        std::size_t end = v.find(',', start);
        if (end == std::string::npos) end = v.size();
        int x = 0;
        const auto [ptr, ec] = std::from_chars(v.data() + start, v.data() + end, x);
        if (ec != std::errc() || ptr != v.data() + end) {
          throw Error(ErrorCode::kBadModel, fmt::format("'{}': metadata '{}' is not a list of integers", encoder, key));
        }
        out.push_back(x);
        start = end + 1;
      }
      return out;
    };
    WhisperConfig& c = m.config_;
    c.dims = {meta_int("n_mels"),       meta_int("n_audio_ctx"),  meta_int("n_audio_state"), meta_int("n_audio_head"),
              meta_int("n_audio_layer"), meta_int("n_vocab"),      meta_int("n_text_ctx"),    meta_int("n_text_state"),
              meta_int("n_text_head"),  meta_int("n_text_layer")};
    WhisperSpecialTokens& t = c.tokens;
    t.eot = meta_int("eot");
    t.sot = meta_int("sot");
    t.translate = meta_int("translate");
    t.transcribe = meta_int("transcribe");
    t.sot_lm = meta_int("sot_lm");
    t.sot_prev = meta_int("sot_prev");
    t.no_speech = meta_int("no_speech");
    t.no_timestamps = meta_int("no_timestamps");
    t.timestamp_begin = t.no_timestamps + 1;
    t.blank = meta_int("blank_id");
    c.multilingual = meta_int("is_multilingual") != 0;
    const std::vector<int> lang_tokens = meta_ints("all_language_tokens");
    std::vector<std::string> codes;
    {
      const std::string& v = meta("all_language_codes");
      std::size_t start = 0;
      while (start < v.size()) {
        std::size_t end = v.find(',', start);
        if (end == std::string::npos) end = v.size();
        codes.push_back(v.substr(start, end - start));
        start = end + 1;
      }
    }
    if (codes.size() != lang_tokens.size()) {
      throw Error(ErrorCode::kBadModel, fmt::format("'{}': metadata lists {} language codes for {} language tokens",
                                                    encoder, codes.size(), lang_tokens.size()));
    }
    for (std::size_t i = 0; i < codes.size(); ++i) c.languages.push_back({codes[i], lang_tokens[i]});
    c.suppress_tokens = with_special_suppressed(meta_ints("non_speech_tokens"), t);
    c.suppress_blank = {t.blank, t.eot};
    m.encoder_path_ = encoder;
    m.decoder_path_ = decoder;
    m.vocabulary_ = WhisperVocabulary::from_sherpa_tokens(tokens);
  }

  static void optimum(WhisperModel& m, const fs::path& dir, const fs::path& onnx_dir) {
    const fs::path cfg_path = dir / "config.json";
    const nlohmann::json cfg = read_json(cfg_path);
    nlohmann::json gen = nlohmann::json::object();
    const fs::path gen_path = dir / "generation_config.json";
    if (is_file(gen_path)) gen = read_json(gen_path);
    WhisperConfig& c = m.config_;
    const int d = json_int(cfg, "d_model", cfg_path);
    c.dims = {json_int(cfg, "num_mel_bins", cfg_path),
              json_int(cfg, "max_source_positions", cfg_path),
              d,
              json_int(cfg, "encoder_attention_heads", cfg_path),
              json_int(cfg, "encoder_layers", cfg_path),
              json_int(cfg, "vocab_size", cfg_path),
              json_int(cfg, "max_target_positions", cfg_path),
              d,
              json_int(cfg, "decoder_attention_heads", cfg_path),
              json_int(cfg, "decoder_layers", cfg_path)};
    m.vocabulary_ = WhisperVocabulary::from_tokenizer_json((dir / "tokenizer.json").string());
    const WhisperVocabulary& v = m.vocabulary_;
    const auto need = [&](std::initializer_list<const char*> names) {
      for (const char* n : names) {
        const int id = v.find(n);
        if (id >= 0) return id;
      }
      throw Error(ErrorCode::kBadModel,
                  fmt::format("tokenizer '{}' has no token {}", (dir / "tokenizer.json").string(), *names.begin()));
    };
    WhisperSpecialTokens& t = c.tokens;
    t.eot = need({"<|endoftext|>"});
    t.sot = need({"<|startoftranscript|>"});
    t.translate = need({"<|translate|>"});
    t.transcribe = need({"<|transcribe|>"});
    t.sot_lm = need({"<|startoflm|>"});
    t.sot_prev = need({"<|startofprev|>"});
    t.no_speech = need({"<|nospeech|>", "<|nocaptions|>"});
    t.no_timestamps = need({"<|notimestamps|>"});
    t.timestamp_begin = t.no_timestamps + 1;
    t.blank = need({" "});
    c.multilingual = gen.value("is_multilingual", c.dims.n_vocab >= 51865);
    c.languages = languages_between(v, t.sot, t.translate);
    // generation_config.json is what transformers reads; older exports have the lists in config.json.
    const auto list = [&](const char* key, std::vector<int> fallback) {
      if (gen.contains(key)) return json_ints(gen, key, gen_path);
      if (cfg.contains(key) && cfg[key].is_array()) return json_ints(cfg, key, cfg_path);
      return fallback;
    };
    c.suppress_tokens = with_special_suppressed(list("suppress_tokens", {}), t);
    c.suppress_blank = list("begin_suppress_tokens", {t.blank, t.eot});
    m.encoder_path_ = (onnx_dir / "encoder_model.onnx").string();
    m.decoder_path_ = (onnx_dir / "decoder_model_merged.onnx").string();
  }
};

WhisperModel WhisperModel::load(const std::string& folder) {
  const fs::path dir(folder);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error(ErrorCode::kIo, fmt::format("Whisper model folder '{}' does not exist or is not a folder", folder));
  }
  WhisperModel m;
  m.folder_ = folder;
  std::string enc, dec, tok;
  if (is_file(dir / "whisper.json")) {
    m.layout_ = WhisperLayout::kBrisvox;
    WhisperModelLoader::brisvox(m, dir);
  } else if (WhisperModelLoader::sherpa_files(dir, enc, dec, tok)) {
    m.layout_ = WhisperLayout::kSherpaOnnx;
    WhisperModelLoader::sherpa(m, enc, dec, tok);
  } else if (is_file(dir / "config.json") && is_file(dir / "tokenizer.json") &&
             (is_file(dir / "encoder_model.onnx") || is_file(dir / "onnx" / "encoder_model.onnx"))) {
    m.layout_ = WhisperLayout::kOptimum;
    WhisperModelLoader::optimum(m, dir, is_file(dir / "encoder_model.onnx") ? dir : dir / "onnx");
  } else {
    throw Error(ErrorCode::kIo,
                fmt::format("'{}' holds no Whisper model brisvox knows: it needs whisper.json + encoder.onnx + "
                            "decoder.onnx + vocabulary.txt (tools/whisper/convert_ct2.py), or sherpa-onnx's "
                            "<name>-encoder.onnx + <name>-decoder.onnx + <name>-tokens.txt, or Optimum's "
                            "encoder_model.onnx + decoder_model_merged.onnx (also in onnx/) + tokenizer.json + "
                            "config.json",
                            folder));
  }
  for (const std::string* p : {&m.encoder_path_, &m.decoder_path_}) {
    if (!is_file(*p)) {
      throw Error(ErrorCode::kIo, fmt::format("Whisper model '{}' lacks '{}'", folder, *p));
    }
  }
  m.config_.validate(folder);
  if (m.config_.dims.n_mels != 80) {
    throw Error(ErrorCode::kBadModel,
                fmt::format("Whisper model '{}' takes {} mel bins; brisvox computes 80 (Whisper tiny to large-v2; "
                            "large-v3 and turbo take 128 and are not supported yet)",
                            folder, m.config_.dims.n_mels));
  }
  if (m.vocabulary_.size() < static_cast<std::size_t>(m.config_.tokens.eot)) {
    throw Error(ErrorCode::kBadModel, fmt::format("Whisper model '{}': the vocabulary lists {} tokens, fewer than the "
                                                  "{} text tokens the model has",
                                                  folder, m.vocabulary_.size(), m.config_.tokens.eot));
  }
  return m;
}

}  // namespace brisvox
