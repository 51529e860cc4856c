// Whisper's byte-level BPE vocabulary, for turning token ids back into text and text into ids.
//
// Whisper (like GPT-2) spells every token as a string of printable characters, one per byte
// (GPT-2's byte-to-unicode table: bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF stand for themselves,
// the other 68 bytes map to U+0100..U+0143, so " the" is spelled "\u0120the"). Decoding maps each
// token back to its raw bytes and concatenates them; the UTF-8 text is then read with invalid
// sequences replaced by U+FFFD, as Hugging Face tokenizers (and so faster-whisper) do: a token
// boundary may split a multi-byte character, which only the whole sequence completes.
//
// Three file formats:
//   vocabulary.txt  (CTranslate2, brisvox) line i = token i, GPT-2 spelling, specials included
//   tokenizer.json  (Hugging Face) model.vocab {spelling: id} plus added_tokens [{id, content}]
//   tokens.txt      (sherpa-onnx) "base64(raw bytes) id" per line, regular tokens only
// Ids a file does not list decode to nothing.
//
// Encoding is faster-whisper's (Hugging Face `tokenizers`, equivalently OpenAI tiktoken): the text
// is split by GPT-2's pattern 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
// \s+(?!\S)|\s+ into pieces, and each piece's UTF-8 bytes are merged from single bytes as tiktoken
// does, without a merges file: Whisper's vocabularies come from tiktoken, where a token's id is its
// merge rank, so the adjacent pair whose concatenation is the token with the lowest id is joined
// first. On the tiny.en and multilingual vocabularies this gives what the merges of their
// tokenizer.json give (tools/whisper/make_token_goldens.py checks every token and random
// concatenations), and faster-whisper's ids for every text of tests/data/stt/
// whisper_token_goldens.json. Regular tokens are those below "<|endoftext|>"; special and
// timestamp tokens are never produced, even for text that spells one ("<|endoftext|>" is encoded
// as its characters, where Hugging Face would give the special token).
//
// Immutable after loading; all members are safe to call from any thread. One allocation for all
// token bytes (a blob and offsets), none per token, and a hash index of the regular tokens.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brisvox {

class WhisperVocabulary {
 public:
  WhisperVocabulary() = default;

  // Throw Error(kIo) if the file cannot be read, Error(kBadModel) naming the file and line for a
  // malformed entry.
  static WhisperVocabulary from_vocabulary_txt(const std::string& path);
  static WhisperVocabulary from_tokenizer_json(const std::string& path);
  static WhisperVocabulary from_sherpa_tokens(const std::string& path);
  // From (id, raw bytes) pairs (tests).
  static WhisperVocabulary from_tokens(const std::vector<std::pair<int, std::string>>& tokens);

  // One past the highest id listed.
  std::size_t size() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }
  // The raw bytes of token `id` ("" for an id not listed or out of range).
  std::string_view bytes(int id) const;
  // The id whose raw bytes are exactly `bytes` (specials: "<|endoftext|>"), or -1. Linear scan:
  // for loading, not for the warm path.
  int find(std::string_view bytes) const;

  // Appends the text of `tokens` to `out`: ids >= text_end (Whisper: eot, so special and
  // timestamp tokens) are skipped, the bytes of the rest concatenated and read as UTF-8 with
  // each maximal invalid sequence replaced by U+FFFD. Allocates only if `out` must grow.
  void decode_append(std::span<const int> tokens, int text_end, std::string& out) const;
  std::string decode(std::span<const int> tokens, int text_end) const;

  // The token ids of `text` (UTF-8), as Whisper's tokenizer encodes it (GPT-2's pre-tokenisation
  // regex, then byte-level BPE), special tokens never produced. Error(kInvalidArgument) for
  // invalid UTF-8. Thread-safe (const).
  std::vector<int> encode(std::string_view text) const;

 private:
  // From (id, bytes) pairs in any order; ids unique and non-negative (else Error(kBadModel)).
  static WhisperVocabulary build(const std::vector<std::pair<int, std::string>>& tokens,
                                 const std::string& source);
  // Fills by_bytes_ (once, while building, so that encode() reads it without locking).
  void index_regular_tokens();
  // The regular token whose raw bytes are exactly `bytes`, or -1.
  int regular_id(std::string_view bytes) const;

  std::string blob_;
  std::vector<std::uint32_t> offsets_;  // token i is blob_[offsets_[i], offsets_[i + 1])
  // The regular tokens by their bytes: an open-addressing table (power-of-two size, linear
  // probing, -1 empty) of ids placed by the hash of bytes(id). Ids rather than views into blob_,
  // so that copies and moves of the vocabulary stay valid.
  std::vector<int> by_bytes_;
};

// GPT-2's table: the character that stands for byte b, and back (-1 for a character that stands
// for no byte).
char32_t gpt2_byte_to_char(std::uint8_t b);
int gpt2_char_to_byte(char32_t c);

// Appends `bytes` to `out` as UTF-8, replacing each maximal invalid subsequence by U+FFFD (the
// Unicode / WHATWG practice Rust's String::from_utf8_lossy follows).
void append_utf8_lossy(std::string_view bytes, std::string& out);

}  // namespace brisvox
