// Tokens to words and words to times: faster-whisper's Tokenizer.split_to_word_tokens,
// find_alignment, merge_punctuations and add_word_timestamps (faster_whisper/transcribe.py 1.2.1),
// including Python's substring tests where it writes `x in "..."`. The texts decoded here are valid
// UTF-8 (WhisperVocabulary::decode replaces invalid sequences; specials spell ASCII), so Piper's
// strict UTF-8 codec reads them.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string_view>

#include "brisvox/models/stt/whisper_vocabulary.h"
#include "brisvox/models/stt/whisper_words.h"
#include "models/tts/piper/unicode_text.h"

namespace brisvox {
namespace {

constexpr double kPositionsPerSecond = 50.0;  // encoder positions: 2 mel frames of 10 ms
constexpr char32_t kReplacementChar = 0xFFFD;
// Python's string.punctuation.
constexpr std::string_view kAsciiPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
constexpr std::string_view kSentenceEnds = ".\u3002!\uff01?\uff1f";

// As faster-whisper's decode_with_timestamps of ids without timestamps (Hugging Face's decode,
// special tokens kept as their spelling): runs of text tokens decoded together.
std::string decode(const WhisperVocabulary& vocabulary, int eot, std::span<const int> tokens) {
  std::string out;
  std::size_t run = 0;
  for (std::size_t i = 0; i <= tokens.size(); ++i) {
    if (i < tokens.size() && tokens[i] < eot) continue;
    vocabulary.decode_append(tokens.subspan(run, i - run), eot, out);
    if (i < tokens.size()) out += vocabulary.bytes(tokens[i]);
    run = i + 1;
  }
  return out;
}

// Python's str.isspace, for str.strip().
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's str.strip().
std::string strip(std::string_view s) {
  const std::u32string u = tts::decode_utf8(s);
  std::size_t b = 0;
  std::size_t e = u.size();
  while (b < e && is_python_space(u[b])) ++b;
  while (e > b && is_python_space(u[e - 1])) --e;
  return tts::encode_utf8(std::u32string_view(u).substr(b, e - b));
}

// Python's `needle in haystack` for strings: a substring test ("" is in every string).
bool within(std::string_view needle, std::string_view haystack) { return haystack.find(needle) != std::string_view::npos; }

bool splits_on_unicode_only(std::string_view language) {
  static constexpr std::array<std::string_view, 6> kNoSpaces = {"zh", "ja", "th", "lo", "my", "yue"};
  return std::find(kNoSpaces.begin(), kNoSpaces.end(), language) != kNoSpaces.end();
}

// Python's round(x, 2): the decimal nearest the exact binary value, ties to even.
double round2(double x) { return std::strtod(fmt::format("{:.2f}", x).c_str(), nullptr); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

}  // namespace

std::vector<std::pair<std::string, std::vector<int>>> whisper_split_words(const WhisperVocabulary& vocabulary,
                                                                          int eot, std::string_view language,
                                                                          std::span<const int> tokens) {
  std::vector<int> all(tokens.begin(), tokens.end());
  all.push_back(eot);
  // split_tokens_on_unicode: a piece ends where its decoded text holds no replacement character
  // that the whole text does not also hold at that place.
  const std::u32string full = tts::decode_utf8(decode(vocabulary, eot, all));
  std::vector<std::pair<std::string, std::vector<int>>> pieces;
  std::vector<int> current;
  std::size_t offset = 0;
  for (int token : all) {
    current.push_back(token);
    const std::string text = decode(vocabulary, eot, current);
    const std::u32string u = tts::decode_utf8(text);
    const std::size_t bad = u.find(kReplacementChar);
    if (bad == std::u32string::npos || (bad + offset < full.size() && full[bad + offset] == kReplacementChar)) {
      pieces.emplace_back(text, current);
      current.clear();
      offset += u.size();
    }
  }
  if (splits_on_unicode_only(language)) return pieces;
  // split_tokens_on_spaces: a piece joins the previous word unless it is special, starts with a
  // space or is punctuation.
  std::vector<std::pair<std::string, std::vector<int>>> words;
  for (auto& [text, ids] : pieces) {
    const bool special = ids.front() >= eot;
    const bool with_space = !text.empty() && text.front() == ' ';
    const bool punctuation = within(strip(text), kAsciiPunctuation);
    if (special || with_space || punctuation || words.empty()) {
      words.emplace_back(std::move(text), std::move(ids));
    } else {
      words.back().first += text;
      words.back().second.insert(words.back().second.end(), ids.begin(), ids.end());
    }
  }
  return words;
}

std::vector<WhisperWordTiming> whisper_word_timings(const WhisperVocabulary& vocabulary, int eot,
                                                   std::string_view language, const WhisperAligner& aligner) {
  const std::vector<std::pair<int, int>> path = aligner.path();
  if (path.empty()) return {};
  const auto words = whisper_split_words(vocabulary, eot, language, aligner.text());
  if (words.size() <= 1) return {};
  // The position where the path first reaches each row.
  std::vector<double> jump_times;
  for (std::size_t k = 0; k < path.size(); ++k) {
    if (k == 0 || path[k].first != path[k - 1].first) jump_times.push_back(path[k].second / kPositionsPerSecond);
  }
  const std::span<const float> probs = aligner.token_probabilities();
  std::vector<WhisperWordTiming> out;
  std::size_t boundary = 0;
  for (std::size_t w = 0; w + 1 < words.size(); ++w) {
    const std::size_t next = boundary + words[w].second.size();
    if (next >= jump_times.size() || next > probs.size()) break;
    double sum = 0.0;
    for (std::size_t t = boundary; t < next; ++t) sum += probs[t];
    WhisperWordTiming timing;
    timing.text = words[w].first;
    timing.tokens = words[w].second;
    timing.start_s = jump_times[boundary];
    timing.end_s = jump_times[next];
    timing.probability = next > boundary ? static_cast<float>(sum / static_cast<double>(next - boundary)) : 0.0f;
    out.push_back(std::move(timing));
    boundary = next;
  }
  return out;
}

void whisper_merge_punctuations(std::vector<WhisperWordTiming>& words, std::string_view prepended,
                                std::string_view appended) {
  if (words.size() >= 2) {
    std::size_t j = words.size() - 1;
    for (std::size_t i = words.size() - 1; i-- > 0;) {
      WhisperWordTiming& previous = words[i];
      WhisperWordTiming& following = words[j];
      if (!previous.text.empty() && previous.text.front() == ' ' && within(strip(previous.text), prepended)) {
        following.text = previous.text + following.text;
        following.tokens.insert(following.tokens.begin(), previous.tokens.begin(), previous.tokens.end());
        previous.text.clear();
        previous.tokens.clear();
      } else {
        j = i;
      }
    }
  }
  std::size_t i = 0;
  for (std::size_t j = 1; j < words.size(); ++j) {
    WhisperWordTiming& previous = words[i];
    WhisperWordTiming& following = words[j];
    if ((previous.text.empty() || previous.text.back() != ' ') && within(following.text, appended)) {
      previous.text += following.text;
      previous.tokens.insert(previous.tokens.end(), following.tokens.begin(), following.tokens.end());
      following.text.clear();
      following.tokens.clear();
    } else {
      i = j;
    }
  }
}

std::vector<WhisperWord> whisper_place_words(std::vector<WhisperWordTiming> alignment, double window_start_s,
                                             double& segment_start_s, double& segment_end_s, double last_speech_s,
                                             const WhisperWordOptions& options) {
  if (alignment.empty()) return {};
  std::size_t text_tokens = 0;
  std::vector<double> durations;
  for (const WhisperWordTiming& w : alignment) {
    text_tokens += w.tokens.size();
    if (w.end_s - w.start_s != 0.0) durations.push_back(w.end_s - w.start_s);
  }
  const double median_duration = std::min(0.7, durations.empty() ? 0.0 : median(durations));
  const double max_duration = median_duration * 2;
  // Words at sentence boundaries no longer than twice the median word.
  if (!durations.empty()) {
    for (std::size_t i = 1; i < alignment.size(); ++i) {
      WhisperWordTiming& w = alignment[i];
      if (w.end_s - w.start_s > max_duration) {
        if (within(w.text, kSentenceEnds)) {
          w.end_s = w.start_s + max_duration;
        } else if (within(alignment[i - 1].text, kSentenceEnds)) {
          w.start_s = w.end_s - max_duration;
        }
      }
    }
  }
  whisper_merge_punctuations(alignment, options.prepend_punctuations, options.append_punctuations);

  std::vector<WhisperWord> words;
  std::size_t saved = 0;
  for (std::size_t k = 0; k < alignment.size() && saved < text_tokens; ++k) {
    const WhisperWordTiming& t = alignment[k];
    if (!t.text.empty()) {
      words.push_back({round2(window_start_s + t.start_s), round2(window_start_s + t.end_s), t.text, t.probability});
    }
    saved += t.tokens.size();
  }
  if (words.empty()) return words;
  // The first and second word after a pause no longer than twice the median word.
  if (words[0].end_s - last_speech_s > median_duration * 4 &&
      (words[0].end_s - words[0].start_s > max_duration ||
       (words.size() > 1 && words[1].end_s - words[0].start_s > max_duration * 2))) {
    if (words.size() > 1 && words[1].end_s - words[1].start_s > max_duration) {
      const double boundary = std::max(words[1].end_s / 2, words[1].end_s - max_duration);
      words[0].end_s = words[1].start_s = boundary;
    }
    words[0].start_s = std::max(0.0, words[0].end_s - max_duration);
  }
  // The segment's own start preferred when the first word overruns it, else the word's.
  if (segment_start_s < words[0].end_s && segment_start_s - 0.5 > words[0].start_s) {
    words[0].start_s = std::max(0.0, std::min(words[0].end_s - median_duration, segment_start_s));
  } else {
    segment_start_s = words[0].start_s;
  }
  if (segment_end_s > words.back().start_s && segment_end_s + 0.5 < words.back().end_s) {
    words.back().end_s = std::max(words.back().start_s + median_duration, segment_end_s);
  } else {
    segment_end_s = words.back().end_s;
  }
  return words;
}

}  // namespace brisvox
