#include "brisvox/models/tts/espeak_phonemizer.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "brisvox/error.h"
#include "base/log.h"
#include "models/tts/piper/espeak_clauses.h"
#include "models/tts/piper/espeak_output.h"
#include "models/tts/piper/espeak_process.h"
#include "models/tts/piper/piper_text.h"
#include "models/tts/piper/unicode_text.h"

#ifndef BRISVOX_DEFAULT_ESPEAK_DIR
#define BRISVOX_DEFAULT_ESPEAK_DIR ""
#endif

namespace brisvox {
namespace {

using tts::EspeakClause;
using tts::EspeakProcess;

// espeak-ng reads stdin with fgets into a 1000-byte buffer: a longer line would be cut in two.
constexpr std::size_t kMaxLineBytes = 990;
// A line espeak-ng answers with a fixed phoneme string that no text can produce: brisvox's text
// never reaches espeak-ng with "[[" in it (Piper's raw-phoneme blocks are handled here), so the
// phoneme-input brackets are the sentinel's alone.
constexpr std::string_view kSentinel = "[[NNNNNNN]]";
// The stressed word put in front of a clause to keep espeak-ng from promoting a stress in it.
constexpr std::string_view kStressedPrefix = "Bob";

bool is_dir_with_espeak(const std::string& dir) {
  struct stat st {};
  return !dir.empty() && ::stat((dir + "/usr/bin/espeak-ng").c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

EspeakInstall install_in(const std::string& dir) {
  EspeakInstall in;
  in.executable = dir + "/usr/bin/espeak-ng";
  in.data_dir = dir + "/usr/lib/x86_64-linux-gnu";
  in.library_dir = dir + "/usr/lib/x86_64-linux-gnu";
  return in;
}

std::string preview(std::string_view s) {
  return s.size() <= 60 ? std::string(s) : std::string(s.substr(0, 57)) + "...";
}

// Words whose English pronunciation depends on being first in the clause (en_list: "what" and
// "when" are "$atstart", "me" is "$atstart $atend"). A stressed word in front would change them,
// so for a clause that starts with one the stressed word goes right after it instead. Returns
// the length of that first word (code points from the start of `clause`), or 0; `also_at_end`
// says whether the word's entry also depends on being last.
std::size_t atstart_word_end(const std::string& voice, std::u32string_view clause, bool& also_at_end) {
  also_at_end = false;
  if (voice.rfind("en", 0) != 0) return 0;
  std::size_t i = 0;
  while (i < clause.size() && (tts::is_space(clause[i]) || tts::is_bracket(clause[i]))) ++i;
  std::string word;
  while (i < clause.size() && clause[i] < 0x80 && tts::is_alpha(clause[i])) {
    word.push_back(static_cast<char>(clause[i] | 0x20));
    ++i;
  }
  also_at_end = word == "me";
  return word == "me" || word == "what" || word == "when" ? i : 0;
}

// The clause as espeak-ng is asked about it again: with the stressed word in front of it, or
// after its first word (above). Sets `word_index` to where the stressed word is. Empty when no
// added word can leave the clause's words where they were: "Me?" alone is both first and last.
std::string with_stressed_word(const std::string& voice, const std::u32string& clause, std::size_t& word_index) {
  bool also_at_end = false;
  const std::size_t at = atstart_word_end(voice, clause, also_at_end);
  const std::string word(kStressedPrefix);
  if (at == 0) {
    word_index = 0;
    return word + " " + tts::encode_utf8(clause);
  }
  const auto rest = std::u32string_view(clause).substr(at);
  const bool alone = std::none_of(rest.begin(), rest.end(), [](char32_t c) { return tts::is_alnum(c); });
  if (alone && also_at_end) return {};
  word_index = 1;
  return tts::encode_utf8(clause.substr(0, at)) + " " + word + tts::encode_utf8(clause.substr(at));
}

// `reply` without its word number `word_index` if that word is `word`; separators removed.
bool remove_word(std::string_view reply, std::size_t word_index, std::string_view word, std::string& out) {
  std::vector<std::string_view> words;
  std::size_t start = 0;
  while (true) {
    const std::size_t sp = reply.find(' ', start);
    words.push_back(reply.substr(start, sp == std::string_view::npos ? std::string_view::npos : sp - start));
    if (sp == std::string_view::npos) break;
    start = sp + 1;
  }
  if (word_index >= words.size() || words[word_index] != word) return false;
  std::string joined;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i == word_index) continue;
    if (!joined.empty()) joined += ' ';
    joined += words[i];
  }
  out = tts::strip_separators(joined);
  return true;
}

}  // namespace

EspeakInstall default_espeak_install() {
  if (const char* env = std::getenv("BRISVOX_ESPEAK_NG_DIR"); env != nullptr && is_dir_with_espeak(env)) {
    return install_in(env);
  }
  if (is_dir_with_espeak(BRISVOX_DEFAULT_ESPEAK_DIR)) return install_in(BRISVOX_DEFAULT_ESPEAK_DIR);
  return EspeakInstall{};
}

struct EspeakPhonemizer::Impl {
  EspeakPhonemizerConfig config;
  std::optional<EspeakProcess> ipa;
  std::optional<EspeakProcess> mnemonic;
  std::string version;
  std::string sentinel_ipa;
  std::string sentinel_mnemonic;
  std::string prefix_ipa;  // kStressedPrefix as the IPA child prints it, separators included
  bool broken = false;
  EspeakPhonemizerStats stats;

  std::vector<std::string> argv(const char* alphabet) const {
    std::vector<std::string> a{config.install.executable};
    if (!config.install.data_dir.empty()) a.push_back("--path=" + config.install.data_dir);
    // -s 449: espeak-ng computes (and drops) the audio of every clause; at its fastest rate
    // without libsonic (450 and up) that costs half the default 175 words per minute's time, and
    // the rate changes lengths and pitch, never the printed phonemes (the parity tests check it).
    a.insert(a.end(), {"-q", "-s", "449", alphabet, "--sep=z", "-v", config.voice});
    return a;
  }
  std::vector<std::string> env() const {
    if (config.install.library_dir.empty()) return {};
    return {"LD_LIBRARY_PATH=" + config.install.library_dir};
  }

  void stop() {
    ipa.reset();
    mnemonic.reset();
  }

  // The child has died or hung: end both, remember to restart, and fail the request.
  [[noreturn]] void fail(EspeakProcess& child, const char* doing, bool timed_out) {
    const pid_t pid = child.pid();
    const std::string err = child.stderr_text();
    const std::string how = timed_out ? fmt::format("did not answer within {} ms and was killed", config.timeout_ms)
                                      : child.terminate();
    stop();
    broken = true;
    throw Error(ErrorCode::kRuntime,
                fmt::format("espeak-ng (pid {}) {} while {}{}{}; the next request starts it again", pid, how, doing,
                            err.empty() ? "" : ": ", err));
  }

  void send(EspeakProcess& child, std::string_view line, const char* doing) {
    if (!child.write_line(line)) fail(child, doing, false);
  }

  // Reads the lines up to the sentinel's reply (not included).
  std::vector<std::string> receive(EspeakProcess& child, const std::string& sentinel_reply, const char* doing) {
    std::vector<std::string> lines;
    std::string line;
    bool timed_out = false;
    while (true) {
      if (!child.read_line(line, config.timeout_ms, timed_out)) fail(child, doing, timed_out);
      if (line == sentinel_reply) return lines;
      lines.push_back(line);
    }
  }

  std::string first_reply(EspeakProcess& child, std::string_view text) {
    std::string line;
    bool timed_out = false;
    if (!child.write_line(text) || !child.read_line(line, config.timeout_ms, timed_out)) {
      const std::string err = child.stderr_text();
      const std::string how = timed_out ? "did not answer" : child.terminate();
      stop();
      const bool voice_problem = err.find("voice") != std::string::npos;
      throw Error(voice_problem ? ErrorCode::kInvalidArgument : ErrorCode::kIo,
                  fmt::format("espeak-ng '{}' {} when started with voice '{}'{}{}", config.install.executable, how,
                              config.voice, err.empty() ? "" : ": ", err));
    }
    return line;
  }

  void start() {
    ipa.emplace(argv("--ipa"), env());
    mnemonic.emplace(argv("-x"), env());
    sentinel_ipa = first_reply(*ipa, kSentinel);
    sentinel_mnemonic = first_reply(*mnemonic, kSentinel);
    send(*ipa, kStressedPrefix, "starting");
    send(*ipa, kSentinel, "starting");
    const auto prefix = receive(*ipa, sentinel_ipa, "starting");
    if (prefix.size() != 1 || tts::count_primary_stress(prefix[0]) != 1) {
      stop();
      throw Error(ErrorCode::kIo, fmt::format("espeak-ng '{}' with voice '{}' answers '{}' with {} lines; brisvox "
                                              "needs an espeak-ng 1.51 or 1.52 program",
                                              config.install.executable, config.voice, kStressedPrefix, prefix.size()));
    }
    prefix_ipa = prefix[0];
    broken = false;
  }

  void read_version() {
    try {
      std::vector<std::string> args{config.install.executable};
      if (!config.install.data_dir.empty()) args.push_back("--path=" + config.install.data_dir);
      args.push_back("--version");
      EspeakProcess v(std::move(args), env());
      std::string line;
      bool timed_out = false;
      if (v.read_line(line, config.timeout_ms, timed_out)) {
        // "eSpeak NG text-to-speech: 1.52.0  Data at: ...": the data folder printed is the
        // compiled-in one whatever --path says, so it is left out.
        version = line.substr(0, line.find("  Data at:"));
      }
    } catch (const Error&) {
      version.clear();  // start() reports the problem
    }
  }

  // One text part (no raw-phoneme block): espeak-ng's clauses -> Piper's sentences.
  std::vector<std::vector<std::u32string>> phonemize_part(std::u32string_view part);
};

std::vector<std::vector<std::u32string>> EspeakPhonemizer::Impl::phonemize_part(std::u32string_view raw_part) {
  const std::u32string text = tts::espeak_input(raw_part);
  const std::vector<EspeakClause> clauses = tts::split_espeak_clauses(text);
  stats.clauses += clauses.size();

  struct ClauseOut {
    std::string ipa;        // the library's IPA (linking "ʲ" restored)
    std::string plain_ipa;  // as the program printed it, separators removed
    std::uint32_t terminator = tts::clause::kEof;
    bool stress_candidate = false;
    std::size_t source = 0;  // index into `clauses` (valid when stress_candidate)
  };
  std::vector<ClauseOut> out;
  out.reserve(clauses.size());

  const auto lines = tts::pack_espeak_lines(text, clauses, kMaxLineBytes);
  for (const auto& line : lines) {
    const std::string line_text = tts::espeak_line_text(text, clauses, line);
    send(*ipa, line_text, "phonemizing");
    send(*ipa, kSentinel, "phonemizing");
    send(*mnemonic, line_text, "phonemizing");
    send(*mnemonic, kSentinel, "phonemizing");
    const auto ipa_lines = receive(*ipa, sentinel_ipa, "phonemizing");
    const auto mn_lines = receive(*mnemonic, sentinel_mnemonic, "phonemizing");
    const std::size_t predicted = line.last - line.first + 1;
    if (ipa_lines.size() != predicted || mn_lines.size() != ipa_lines.size()) {
      ++stats.clause_mismatches;
      detail::log(LogLevel::kWarn,
                  "espeak-ng printed {} clause(s) where brisvox expected {} for '{}': each is taken as a "
                  "sentence without its punctuation, so this text may sound slightly different from Piper",
                  ipa_lines.size(), predicted, preview(line_text));
      // Each printed clause its own sentence (no terminator phoneme: it is not known), so that
      // no sentence grows past what one model run takes; the line's last keeps its terminator.
      for (std::size_t k = 0; k < ipa_lines.size(); ++k) {
        ClauseOut c;
        c.ipa = tts::strip_separators(ipa_lines[k]);
        c.terminator = k + 1 == ipa_lines.size() ? clauses[line.last].terminator : tts::clause::kEof;
        out.push_back(std::move(c));
      }
      continue;
    }
    for (std::size_t k = 0; k < predicted; ++k) {
      const EspeakClause& source = clauses[line.first + k];
      ClauseOut c;
      bool aligned = true;
      int linking = 0;
      c.ipa = tts::merge_linking_phonemes(ipa_lines[k], mn_lines[k], aligned, linking);
      c.plain_ipa = tts::strip_separators(ipa_lines[k]);
      stats.linking_restored += static_cast<std::uint64_t>(linking);
      c.terminator = source.terminator;
      c.source = line.first + k;
      c.stress_candidate = tts::count_primary_stress(c.ipa) == 1;
      out.push_back(std::move(c));
    }
  }

  // Stress check for clauses with one primary stress: ask again with a stressed word added.
  for (auto& c : out) {
    if (!c.stress_candidate) continue;
    const std::u32string clause_text =
        tts::decode_utf8(tts::espeak_clause_text(text, clauses[c.source]));
    std::size_t word_index = 0;
    const std::string query = with_stressed_word(config.voice, clause_text, word_index);
    if (query.empty()) continue;
    send(*ipa, query, "phonemizing");
    send(*ipa, kSentinel, "phonemizing");
    const auto reply = receive(*ipa, sentinel_ipa, "phonemizing");
    std::string unpromoted;
    if (reply.size() != 1 || !remove_word(reply[0], word_index, prefix_ipa, unpromoted)) continue;
    std::string mark;
    if (tts::unpromoted_stress(c.plain_ipa, unpromoted, mark) && mark != "\u02c8") {
      tts::replace_primary_stress(c.ipa, mark);
      ++stats.stress_restored;
    }
  }

  // Piper's EspeakPhonemizer.phonemize: clause phonemes + terminator, grouped into sentences.
  std::vector<std::vector<std::u32string>> sentences;
  std::vector<std::u32string> sentence;
  for (const auto& c : out) {
    std::u32string phonemes = tts::remove_language_flags(tts::decode_utf8(c.ipa));
    if (const char32_t t = tts::piper_terminator(c.terminator); t != 0) {
      phonemes.push_back(t);
      if (t == ',' || t == ':' || t == ';') phonemes.push_back(' ');
    }
    for (const char32_t p : tts::nfd(phonemes)) sentence.emplace_back(1, p);
    if (tts::piper_ends_sentence(c.terminator)) {
      sentences.push_back(tts::merge_vowel_clusters(std::move(sentence), config.vowel_clusters));
      sentence.clear();
    }
  }
  if (!sentence.empty()) sentences.push_back(tts::merge_vowel_clusters(std::move(sentence), config.vowel_clusters));
  return sentences;
}

EspeakPhonemizer::EspeakPhonemizer(EspeakPhonemizerConfig config) : impl_(std::make_unique<Impl>()) {
  if (config.voice.empty() || config.voice.find_first_of(" \t\n") != std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("espeak-ng voice name '{}' is not valid", config.voice));
  }
  if (config.timeout_ms < 1) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("espeak-ng timeout_ms must be >= 1, got {}", config.timeout_ms));
  }
  impl_->config = std::move(config);
  impl_->read_version();
  impl_->start();
}

EspeakPhonemizer::~EspeakPhonemizer() = default;
EspeakPhonemizer::EspeakPhonemizer(EspeakPhonemizer&&) noexcept = default;
EspeakPhonemizer& EspeakPhonemizer::operator=(EspeakPhonemizer&&) noexcept = default;

std::vector<PhonemeSentence> EspeakPhonemizer::phonemize(std::string_view text) {
  Impl& m = *impl_;
  const std::u32string input = tts::decode_utf8(text);
  tts::check_no_control_characters(input);
  if (m.broken) {
    ++m.stats.restarts;
    m.start();
  }
  ++m.stats.requests;

  // Piper's PiperVoice.phonemize: [[ raw phonemes ]] blocks pass through, the rest goes to espeak.
  const std::vector<tts::TextPart> parts = tts::split_raw_phoneme_blocks(input);
  std::vector<std::vector<std::u32string>> sentences;
  bool prev_raw = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const tts::TextPart& part = parts[i];
    if (part.raw_phonemes) {
      prev_raw = true;
      if (sentences.empty()) sentences.emplace_back();
      if (i > 0 && !parts[i - 1].text.empty() && parts[i - 1].text.back() == ' ') sentences.back().emplace_back(U" ");
      for (const char32_t c : tts::python_strip(part.text)) sentences.back().emplace_back(1, c);
      if (i + 1 < parts.size() && !parts[i + 1].text.empty() && parts[i + 1].text.front() == ' ') {
        sentences.back().emplace_back(U" ");
      }
      continue;
    }
    auto part_sentences = m.phonemize_part(part.text);
    std::size_t first = 0;
    if (prev_raw && !part_sentences.empty()) {
      auto& last = sentences.back();
      last.insert(last.end(), part_sentences[0].begin(), part_sentences[0].end());
      first = 1;
    }
    for (std::size_t k = first; k < part_sentences.size(); ++k) sentences.push_back(std::move(part_sentences[k]));
    prev_raw = false;
  }

  std::vector<PhonemeSentence> result;
  for (const auto& s : sentences) {
    if (s.empty()) continue;  // Piper drops the last one and synthesises none
    PhonemeSentence p;
    p.reserve(s.size());
    for (const auto& ph : s) p.push_back(tts::encode_utf8(ph));
    result.push_back(std::move(p));
  }
  return result;
}

const std::string& EspeakPhonemizer::voice() const { return impl_->config.voice; }
const std::string& EspeakPhonemizer::espeak_version() const { return impl_->version; }

std::vector<pid_t> EspeakPhonemizer::child_pids() const {
  return {impl_->ipa ? impl_->ipa->pid() : -1, impl_->mnemonic ? impl_->mnemonic->pid() : -1};
}

EspeakPhonemizerStats EspeakPhonemizer::stats() const { return impl_->stats; }

}  // namespace brisvox
