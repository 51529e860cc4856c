#include "brisvox/models/stt/whisper_vocabulary.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "brisvox/error.h"
#include "models/stt/whisper/unicode_classes.h"

namespace brisvox {
namespace {

// GPT-2's bytes_to_unicode(): the printable Latin-1 bytes stand for themselves, the other 68
// take U+0100.. in byte order.
struct ByteTable {
  std::array<char32_t, 256> to_char{};
  ByteTable() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      to_char[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
    }
  }
};

const ByteTable& byte_table() {
  static const ByteTable table;
  return table;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("cannot read Whisper vocabulary '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Decodes one UTF-8 code point at s[i] (well-formed input expected: vocabulary spellings);
// returns false on a malformed sequence.
bool next_code_point(std::string_view s, std::size_t& i, char32_t& cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  int len = 0;
  if (b0 < 0x80) { cp = b0; len = 1; }
  else if ((b0 & 0xe0) == 0xc0) { cp = b0 & 0x1f; len = 2; }
  else if ((b0 & 0xf0) == 0xe0) { cp = b0 & 0x0f; len = 3; }
  else if ((b0 & 0xf8) == 0xf0) { cp = b0 & 0x07; len = 4; }
  else return false;
  if (i + static_cast<std::size_t>(len) > s.size()) return false;
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if ((b & 0xc0) != 0x80) return false;
    cp = (cp << 6) | (b & 0x3f);
  }
  i += static_cast<std::size_t>(len);
  return true;
}

// A GPT-2 spelling -> raw bytes; false if a character stands for no byte.
bool spelling_to_bytes(std::string_view spelling, std::string& out) {
  out.clear();
  std::size_t i = 0;
  while (i < spelling.size()) {
    char32_t cp = 0;
    if (!next_code_point(spelling, i, cp)) return false;
    const int b = gpt2_char_to_byte(cp);
    if (b < 0) return false;
    out.push_back(static_cast<char>(b));
  }
  return true;
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool base64_decode(std::string_view in, std::string& out) {
  out.clear();
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    const int v = base64_value(in[i]);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  for (; i < in.size(); ++i) {
    if (in[i] != '=') return false;
  }
  return true;
}

// One code point of the text to encode: where its bytes start, and its class in GPT-2's pattern.
struct CodePoint {
  std::size_t offset;
  char32_t cp;
  whisper_detail::CharClass cls;
};

// What a UTF-8 lead byte (>= 0x80) announces (Unicode Table 3-7, well-formed UTF-8): the
// sequence's length (0: not a lead byte) and the range its second byte must be in.
struct Utf8Lead {
  std::size_t len;
  unsigned char lo;
  unsigned char hi;
};

Utf8Lead utf8_lead(unsigned char b0) {
  if (b0 >= 0xc2 && b0 <= 0xdf) return {2, 0x80, 0xbf};
  if (b0 == 0xe0) return {3, 0xa0, 0xbf};
  if ((b0 >= 0xe1 && b0 <= 0xec) || b0 == 0xee || b0 == 0xef) return {3, 0x80, 0xbf};
  if (b0 == 0xed) return {3, 0x80, 0x9f};
  if (b0 == 0xf0) return {4, 0x90, 0xbf};
  if (b0 >= 0xf1 && b0 <= 0xf3) return {4, 0x80, 0xbf};
  if (b0 == 0xf4) return {4, 0x80, 0x8f};
  return {0, 0x80, 0xbf};
}

// Strict UTF-8 (Unicode Table 3-7: no overlong forms, surrogates or values above U+10FFFF): the
// code point at s[i], advancing i; false for an ill-formed sequence.
bool next_code_point_strict(std::string_view s, std::size_t& i, char32_t& cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    cp = b0;
    ++i;
    return true;
  }
  const auto [len, lo, hi] = utf8_lead(b0);
  if (len == 0 || i + len > s.size()) return false;
  cp = static_cast<char32_t>(b0 & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07));
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) return false;
    cp = (cp << 6) | static_cast<char32_t>(b & 0x3f);
  }
  i += len;
  return true;
}

std::vector<CodePoint> code_points(std::string_view text) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t offset = i;
    char32_t cp = 0;
    if (!next_code_point_strict(text, i, cp)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("text to encode is not valid UTF-8: an ill-formed sequence at offset {} (byte 0x{:02x})",
                              offset, static_cast<unsigned char>(text[offset])));
    }
    out.push_back({offset, cp, whisper_detail::char_class(cp)});
  }
  return out;
}

// GPT-2's contractions 's 't 're 've 'm 'll 'd (ASCII, lower case only): their length at s[i],
// or 0.
std::size_t contraction_length(const std::vector<CodePoint>& s, std::size_t i) {
  if (s[i].cp != U'\'' || i + 1 >= s.size()) return 0;
  const char32_t c1 = s[i + 1].cp;
  if (c1 == U's' || c1 == U't' || c1 == U'm' || c1 == U'd') return 2;
  if (i + 2 >= s.size()) return 0;
  const char32_t c2 = s[i + 2].cp;
  if ((c1 == U'r' && c2 == U'e') || (c1 == U'v' && c2 == U'e') || (c1 == U'l' && c2 == U'l')) return 3;
  return 0;
}

// Where the piece that starts at s[i] ends: the first alternative of GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// that matches there, as a backtracking regex engine tries them. Every code point is a letter, a
// number, whitespace or other, so some alternative always matches and the pieces tile the text.
std::size_t piece_end(const std::vector<CodePoint>& s, std::size_t i) {
  using whisper_detail::CharClass;
  if (const std::size_t n = contraction_length(s, i); n > 0) return i + n;
  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": one optional ASCII space, then a run of one
  // class; a space followed by whitespace (or nothing) belongs to the whitespace alternatives.
  std::size_t k = i;
  if (s[k].cp == U' ' && k + 1 < s.size() && s[k + 1].cls != CharClass::kSpace) ++k;
  if (s[k].cls != CharClass::kSpace) {
    std::size_t j = k + 1;
    while (j < s.size() && s[j].cls == s[k].cls) ++j;
    return j;
  }
  std::size_t j = i + 1;
  while (j < s.size() && s[j].cls == CharClass::kSpace) ++j;
  // "\s+(?!\S)": the run up to the end of the text, or all but its last character, which is then
  // left to a following " word" (so "a   b" splits "a", "  ", " b"). A single whitespace
  // character before a non-space is "\s+".
  if (j < s.size() && j - i >= 2) return j - 1;
  return j;
}

// A candidate merge of byte-pair encoding: the part starting at `left` with its right neighbour,
// which ends at `end`; `rank` is the id of the joined bytes.
struct Merge {
  int rank;
  std::uint32_t left;
  std::uint32_t end;
  // std::push_heap keeps the greatest on top: the lowest rank, then the leftmost, is "greatest".
  bool operator<(const Merge& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

// Buffers of byte_pair_merge, reused across the pieces of one text.
struct BpeScratch {
  std::vector<std::uint32_t> end;   // end[i]: where the part starting at byte i ends; 0 once merged away
  std::vector<std::uint32_t> prev;  // prev[i]: the start of the part before it (for the first: itself)
  std::vector<Merge> heap;
};

// tiktoken's _byte_pair_merge on one piece: starting from single bytes, join the adjacent pair
// whose concatenation is the regular token with the lowest id (its rank), the leftmost of equal
// ranks, until no adjacent pair joins into a token; appends the parts' ids. A heap of candidate
// merges (stale ones skipped when popped) instead of tiktoken's rescans keeps a long piece (a run
// of digits or symbols) O(n log n) rather than O(n^2). `id_of(bytes)` is the regular token or -1.
template <typename IdOf>
void byte_pair_merge(std::string_view piece, const IdOf& id_of, BpeScratch& scratch, std::vector<int>& out) {
  const auto n = static_cast<std::uint32_t>(piece.size());
  auto& end = scratch.end;
  auto& prev = scratch.prev;
  auto& heap = scratch.heap;
  end.resize(n);
  prev.resize(n);
  heap.clear();
  const auto consider = [&](std::uint32_t left) {
    const std::uint32_t right = end[left];
    if (right >= n) return;
    const int rank = id_of(piece.substr(left, end[right] - left));
    if (rank < 0) return;
    heap.push_back({rank, left, end[right]});
    std::push_heap(heap.begin(), heap.end());
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    end[i] = i + 1;
    prev[i] = i == 0 ? 0 : i - 1;
  }
  for (std::uint32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Merge m = heap.back();
    heap.pop_back();
    // Stale if either part has changed since: the pair's extent identifies it, as merging only
    // removes boundaries.
    const std::uint32_t right = end[m.left];
    if (right == 0 || right >= n || end[right] != m.end) continue;
    end[m.left] = m.end;
    end[right] = 0;
    if (m.end < n) prev[m.end] = m.left;
    consider(m.left);
    if (m.left > 0) consider(prev[m.left]);
  }
  for (std::uint32_t i = 0; i < n; i = end[i]) {
    const int id = id_of(piece.substr(i, end[i] - i));
    if (id < 0) {
      // Only a single byte can be missing (merged parts are tokens): a vocabulary without
      // GPT-2's 256 byte tokens, not Whisper's.
      throw Error(ErrorCode::kBadModel, fmt::format("Whisper vocabulary has no token for byte 0x{:02x}",
                                                    static_cast<unsigned char>(piece[i])));
    }
    out.push_back(id);
  }
}

}  // namespace

char32_t gpt2_byte_to_char(std::uint8_t b) { return byte_table().to_char[b]; }

int gpt2_char_to_byte(char32_t c) {
  if (c < 256) {
    const bool printable = (c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || (c >= 0xae && c <= 0xff);
    return printable ? static_cast<int>(c) : -1;
  }
  if (c < 256 + 68) {
    // The n-th non-printable byte, in byte order.
    int n = static_cast<int>(c - 256);
    for (int b = 0; b < 256; ++b) {
      if (byte_table().to_char[static_cast<std::size_t>(b)] >= 256 && n-- == 0) return b;
    }
  }
  return -1;
}

void append_utf8_lossy(std::string_view s, std::string& out) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      out.push_back(static_cast<char>(b0));
      ++i;
      continue;
    }
    const auto [len, lo, hi] = utf8_lead(b0);
    if (len == 0) {
      out.append(kReplacement);
      ++i;
      continue;
    }
    // The maximal valid prefix of the sequence is replaced by one U+FFFD if it is incomplete.
    std::size_t k = 1;
    for (; k < len && i + k < s.size(); ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      const unsigned char min = k == 1 ? lo : 0x80;
      const unsigned char max = k == 1 ? hi : 0xbf;
      if (b < min || b > max) break;
    }
    if (k == len) {
      out.append(s.substr(i, k));
    } else {
      out.append(kReplacement);
    }
    i += k;
  }
}

WhisperVocabulary WhisperVocabulary::build(const std::vector<std::pair<int, std::string>>& tokens,
                                           const std::string& source) {
  int max_id = -1;
  std::size_t total = 0;
  for (const auto& [id, bytes] : tokens) {
    if (id < 0) throw Error(ErrorCode::kBadModel, fmt::format("Whisper vocabulary '{}' has a negative id {}", source, id));
    max_id = std::max(max_id, id);
    total += bytes.size();
  }
  if (total > std::numeric_limits<std::uint32_t>::max()) {
    throw Error(ErrorCode::kBadModel, fmt::format("Whisper vocabulary '{}' is too large", source));
  }
  // Two passes over ids: lengths first (a missing id has length 0), then the bytes in id order.
  const auto n = static_cast<std::size_t>(max_id + 1);
  std::vector<const std::string*> by_id(n, nullptr);
  for (const auto& [id, bytes] : tokens) {
    if (by_id[static_cast<std::size_t>(id)] != nullptr) {
      throw Error(ErrorCode::kBadModel, fmt::format("Whisper vocabulary '{}' lists id {} twice", source, id));
    }
    by_id[static_cast<std::size_t>(id)] = &bytes;
  }
  WhisperVocabulary v;
  v.blob_.reserve(total);
  v.offsets_.reserve(n + 1);
  v.offsets_.push_back(0);
  for (std::size_t i = 0; i < n; ++i) {
    if (by_id[i] != nullptr) v.blob_ += *by_id[i];
    v.offsets_.push_back(static_cast<std::uint32_t>(v.blob_.size()));
  }
  v.index_regular_tokens();
  return v;
}

void WhisperVocabulary::index_regular_tokens() {
  // Specials start at "<|endoftext|>" (50256 in tiny.en, 50257 multilingual); a vocabulary
  // without it (sherpa-onnx's tokens.txt lists only text tokens) is all regular.
  const int eot = find("<|endoftext|>");
  const std::size_t count = eot < 0 ? size() : static_cast<std::size_t>(eot);
  std::size_t slots = 16;
  while (slots < 2 * count) slots *= 2;
  const std::size_t mask = slots - 1;
  by_bytes_.assign(slots, -1);
  for (std::size_t id = 0; id < count; ++id) {
    const std::string_view b = bytes(static_cast<int>(id));
    // An id without bytes (multilingual Whisper's 50256, or one a file skips) is never produced.
    if (b.empty()) continue;
    std::size_t slot = std::hash<std::string_view>{}(b) & mask;
    // The same bytes under two ids: the lower id is the token, as its rank is lower.
    while (by_bytes_[slot] >= 0 && bytes(by_bytes_[slot]) != b) slot = (slot + 1) & mask;
    if (by_bytes_[slot] < 0) by_bytes_[slot] = static_cast<int>(id);
  }
}

int WhisperVocabulary::regular_id(std::string_view b) const {
  if (by_bytes_.empty()) return -1;
  const std::size_t mask = by_bytes_.size() - 1;
  for (std::size_t slot = std::hash<std::string_view>{}(b) & mask; by_bytes_[slot] >= 0; slot = (slot + 1) & mask) {
    if (bytes(by_bytes_[slot]) == b) return by_bytes_[slot];
  }
  return -1;
}

WhisperVocabulary WhisperVocabulary::from_tokens(const std::vector<std::pair<int, std::string>>& tokens) {
  if (tokens.empty()) return {};
  return build(tokens, "(in memory)");
}

WhisperVocabulary WhisperVocabulary::from_vocabulary_txt(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<std::pair<int, std::string>> tokens;
  std::size_t start = 0;
  int id = 0;
  std::string bytes;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!spelling_to_bytes(line, bytes)) {
      // Special tokens such as "<|endoftext|>" are spelled with printable ASCII, which maps to
      // itself; anything else outside GPT-2's table is taken as literal UTF-8 (an added token).
      bytes.assign(line);
    }
    tokens.emplace_back(id++, bytes);
    start = end + 1;
  }
  if (tokens.empty()) throw Error(ErrorCode::kBadModel, fmt::format("Whisper vocabulary '{}' is empty", path));
  return build(tokens, path);
}

WhisperVocabulary WhisperVocabulary::from_tokenizer_json(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kBadModel, fmt::format("tokenizer '{}' is not valid JSON: {}", path, e.what()));
  }
  const auto model = j.find("model");
  if (model == j.end() || !model->contains("vocab") || !(*model)["vocab"].is_object()) {
    throw Error(ErrorCode::kBadModel, fmt::format("tokenizer '{}' has no model.vocab object (not a Hugging Face BPE tokenizer)", path));
  }
  std::vector<std::pair<int, std::string>> tokens;
  std::string bytes;
  for (const auto& [spelling, id] : (*model)["vocab"].items()) {
    if (!id.is_number_integer()) {
      throw Error(ErrorCode::kBadModel, fmt::format("tokenizer '{}': vocab entry '{}' has no integer id", path, spelling));
    }
    if (!spelling_to_bytes(spelling, bytes)) {
      throw Error(ErrorCode::kBadModel,
                  fmt::format("tokenizer '{}': vocab entry '{}' is not in GPT-2's byte-level spelling", path, spelling));
    }
    tokens.emplace_back(id.get<int>(), bytes);
  }
  if (const auto added = j.find("added_tokens"); added != j.end() && added->is_array()) {
    std::vector<bool> seen;
    for (const auto& [id, b] : tokens) {
      if (static_cast<std::size_t>(id) >= seen.size()) seen.resize(static_cast<std::size_t>(id) + 1, false);
      seen[static_cast<std::size_t>(id)] = true;
    }
    for (const auto& t : *added) {
      if (!t.contains("id") || !t.contains("content") || !t["id"].is_number_integer()) continue;
      const int id = t["id"].get<int>();
      // An added token may repeat a vocab entry; the vocab's spelling wins.
      if (id >= 0 && (static_cast<std::size_t>(id) >= seen.size() || !seen[static_cast<std::size_t>(id)])) {
        tokens.emplace_back(id, t["content"].get<std::string>());
      }
    }
  }
  if (tokens.empty()) throw Error(ErrorCode::kBadModel, fmt::format("tokenizer '{}' has an empty vocabulary", path));
  return build(tokens, path);
}

WhisperVocabulary WhisperVocabulary::from_sherpa_tokens(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<std::pair<int, std::string>> tokens;
  std::size_t start = 0;
  int line_no = 0;
  std::string bytes;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::size_t space = line.rfind(' ');
    int id = -1;
    bool ok = space != std::string_view::npos && space + 1 < line.size();
    if (ok) {
      id = 0;
      for (char c : line.substr(space + 1)) {
        ok = ok && c >= '0' && c <= '9' && id < 100000000;
        if (ok) id = id * 10 + (c - '0');
      }
    }
    ok = ok && base64_decode(line.substr(0, space), bytes);
    if (!ok) {
      throw Error(ErrorCode::kBadModel,
                  fmt::format("sherpa-onnx tokens file '{}' line {}: expected 'BASE64 ID', got '{}'", path, line_no,
                              std::string(line.substr(0, 60))));
    }
    tokens.emplace_back(id, bytes);
  }
  if (tokens.empty()) throw Error(ErrorCode::kBadModel, fmt::format("sherpa-onnx tokens file '{}' is empty", path));
  return build(tokens, path);
}

std::string_view WhisperVocabulary::bytes(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= size()) return {};
  const auto i = static_cast<std::size_t>(id);
  return std::string_view(blob_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
}

int WhisperVocabulary::find(std::string_view b) const {
  for (std::size_t i = 0; i < size(); ++i) {
    if (bytes(static_cast<int>(i)) == b && !b.empty()) return static_cast<int>(i);
  }
  return -1;
}

void WhisperVocabulary::decode_append(std::span<const int> tokens, int text_end, std::string& out) const {
  const std::size_t start = out.size();
  for (int t : tokens) {
    if (t >= 0 && t < text_end) out.append(bytes(t));
  }
  // Usually valid UTF-8 already; only a split or broken sequence needs the (allocating) rewrite.
  std::string_view appended(out.data() + start, out.size() - start);
  std::size_t i = 0;
  bool valid = true;
  while (valid && i < appended.size()) {
    char32_t cp = 0;
    const std::size_t before = i;
    valid = next_code_point(appended, i, cp);
    // Reject overlong forms, surrogates and values above U+10FFFF as the lossy reader does.
    const std::size_t len = i - before;
    valid = valid && !(len == 2 && cp < 0x80) && !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000) &&
            !(cp >= 0xd800 && cp <= 0xdfff) && cp <= 0x10ffff;
  }
  if (valid) return;
  const std::string raw(appended);
  out.resize(start);
  append_utf8_lossy(raw, out);
}

std::string WhisperVocabulary::decode(std::span<const int> tokens, int text_end) const {
  std::string out;
  decode_append(tokens, text_end, out);
  return out;
}

std::vector<int> WhisperVocabulary::encode(std::string_view text) const {
  const std::vector<CodePoint> cps = code_points(text);
  const auto id_of = [this](std::string_view b) { return regular_id(b); };
  std::vector<int> ids;
  ids.reserve(text.size() / 3 + 1);  // English averages about four bytes a token
  BpeScratch scratch;
  for (std::size_t i = 0; i < cps.size();) {
    const std::size_t j = piece_end(cps, i);
    const std::size_t end = j < cps.size() ? cps[j].offset : text.size();
    const std::string_view piece = text.substr(cps[i].offset, end - cps[i].offset);
    // Most pieces are whole tokens (a word with its leading space). tiktoken returns those
    // directly; merging would reach the same token (every regular token of both Whisper
    // vocabularies merges back to itself, tools/whisper/make_token_goldens.py checks it), only slower.
    if (const int whole = regular_id(piece); whole >= 0) {
      ids.push_back(whole);
    } else {
      byte_pair_merge(piece, id_of, scratch, ids);
    }
    i = j;
  }
  return ids;
}

}  // namespace brisvox
