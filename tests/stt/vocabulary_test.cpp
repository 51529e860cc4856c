// Byte-level BPE detokenisation: GPT-2's byte table, lossy UTF-8, the three vocabulary formats.
#include "brisvox/models/stt/whisper_vocabulary.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "brisvox/error.h"
#include "stt_test_util.h"

namespace brisvox {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

std::string lossy(std::string_view bytes) {
  std::string out;
  append_utf8_lossy(bytes, out);
  return out;
}

std::string temp_file(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(Gpt2ByteTable, IsABijectionOnTheBytes) {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = gpt2_byte_to_char(static_cast<std::uint8_t>(b));
    EXPECT_TRUE(seen.insert(c).second) << "byte " << b;
    EXPECT_EQ(gpt2_char_to_byte(c), b);
  }
  EXPECT_EQ(gpt2_byte_to_char(' '), U'\u0120');  // the "G with dot" that starts GPT-2's words
  EXPECT_EQ(gpt2_byte_to_char('a'), U'a');
  EXPECT_EQ(gpt2_byte_to_char(0x0a), U'\u010a');
  EXPECT_EQ(gpt2_char_to_byte(U'\u0144'), -1);  // one past the 68 remapped bytes
  EXPECT_EQ(gpt2_char_to_byte(U' '), -1);       // a space is always spelled U+0120
}

TEST(Utf8Lossy, KeepsValidTextAndReplacesEachMaximalInvalidSequence) {
  EXPECT_EQ(lossy("hello"), "hello");
  EXPECT_EQ(lossy("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(lossy("\x80"), kReplacement);                       // a lone continuation byte
  EXPECT_EQ(lossy("a\xE2\x82"), "a" + kReplacement);             // truncated at the end: one U+FFFD
  EXPECT_EQ(lossy("\xE2\x82" "b"), kReplacement + "b");          // interrupted
  EXPECT_EQ(lossy("\xC0\x80"), kReplacement + kReplacement);     // overlong: C0 is never valid
  EXPECT_EQ(lossy("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);  // a surrogate
  EXPECT_EQ(lossy("\xF0\x90\x80"), kReplacement);                // 3 of 4 bytes
  EXPECT_EQ(lossy("\xF5"), kReplacement);                        // beyond U+10FFFF
}

TEST(WhisperVocabulary, DecodeJoinsBytesAcrossTokensAndSkipsSpecials) {
  // " caf" + "\xC3" + "\xA9": the accent is split across two tokens. Id 4 is not listed; 5 is
  // the first special token.
  const WhisperVocabulary v = WhisperVocabulary::from_tokens(
      {{0, " caf"}, {1, "\xC3"}, {2, "\xA9"}, {3, "!"}, {5, "<|endoftext|>"}});
  EXPECT_EQ(v.size(), 6u);
  EXPECT_EQ(v.decode(std::vector<int>{0, 1, 2, 5, 3}, 5), " caf\xC3\xA9!");     // the special is skipped
  EXPECT_EQ(v.decode(std::vector<int>{0, 1}, 5), " caf" + kReplacement);         // an unfinished character
  EXPECT_EQ(v.decode(std::vector<int>{0, 1, 3}, 5), " caf" + kReplacement + "!");
  EXPECT_EQ(v.decode(std::vector<int>{4, -1, 99}, 100), "");                     // unknown ids: nothing
  EXPECT_EQ(v.bytes(5), "<|endoftext|>");
  EXPECT_EQ(v.find("<|endoftext|>"), 5);
  EXPECT_EQ(v.find("nope"), -1);
  std::string out = "x";
  v.decode_append(std::vector<int>{3, 3}, 5, out);
  EXPECT_EQ(out, "x!!");
}

TEST(WhisperVocabulary, RefusesDuplicateIds) {
  try {
    WhisperVocabulary::from_tokens({{1, "a"}, {1, "b"}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("id 1 twice"), std::string::npos) << e.what();
  }
}

TEST(WhisperVocabulary, ReadsTheThreeFormats) {
  // "\u0120hi" is " hi" in GPT-2's spelling; "\u010a" is "\n".
  const std::string txt = temp_file("vocab.txt", "a\n\xC4\xA0hi\n\xC4\x8A\n<|endoftext|>\n");
  const std::string json = temp_file(
      "tokenizer.json",
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "\u0120hi": 1, "\u010a": 2}},
          "added_tokens": [{"id": 3, "content": "<|endoftext|>"}]})");
  const std::string sherpa = temp_file("tokens.txt", "YQ== 0\nIGhp 1\nCg== 2\n");
  const WhisperVocabulary a = WhisperVocabulary::from_vocabulary_txt(txt);
  const WhisperVocabulary b = WhisperVocabulary::from_tokenizer_json(json);
  const WhisperVocabulary c = WhisperVocabulary::from_sherpa_tokens(sherpa);
  for (const WhisperVocabulary* v : {&a, &b, &c}) {
    EXPECT_EQ(v->bytes(0), "a");
    EXPECT_EQ(v->bytes(1), " hi");
    EXPECT_EQ(v->bytes(2), "\n");
  }
  EXPECT_EQ(a.bytes(3), "<|endoftext|>");
  EXPECT_EQ(b.bytes(3), "<|endoftext|>");
  EXPECT_EQ(c.size(), 3u);
}

TEST(WhisperVocabulary, NamesTheFileAndLineOfABadEntry) {
  const std::string sherpa = temp_file("bad_tokens.txt", "YQ== 0\nnot base64! 1\n");
  try {
    WhisperVocabulary::from_sherpa_tokens(sherpa);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad_tokens.txt"), std::string::npos) << e.what();
  }
  const std::string json = temp_file("bad_tokenizer.json", R"({"model": {"vocab": {"x": "one"}}})");
  EXPECT_THROW(WhisperVocabulary::from_tokenizer_json(json), Error);
  EXPECT_THROW(WhisperVocabulary::from_tokenizer_json(temp_file("not.json", "{")), Error);
  try {
    WhisperVocabulary::from_vocabulary_txt(::testing::TempDir() + "/does-not-exist.txt");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
}

// On the real tiny.en vocabulary: the CTranslate2 vocabulary.txt, Hugging Face's tokenizer.json
// and sherpa-onnx's base64 tokens.txt (written by tools/whisper/convert_ct2.py) agree on every
// text token's bytes.
TEST(WhisperVocabulary, RealFormatsAgreeOnEveryTextToken) {
  const WhisperVocabulary txt = WhisperVocabulary::from_vocabulary_txt(test::whisper_tiny_en() + "/vocabulary.txt");
  const WhisperVocabulary json = WhisperVocabulary::from_tokenizer_json(test::whisper_tiny_en_optimum() + "/tokenizer.json");
  const WhisperVocabulary sherpa =
      WhisperVocabulary::from_sherpa_tokens(test::whisper_tiny_en_sherpa() + "/tiny.en-tokens.txt");
  ASSERT_EQ(txt.size(), 51864u);
  ASSERT_EQ(sherpa.size(), 50256u);  // the text tokens: <|endoftext|> is 50256
  for (int id = 0; id < 50256; ++id) {
    ASSERT_EQ(txt.bytes(id), json.bytes(id)) << id;
    ASSERT_EQ(txt.bytes(id), sherpa.bytes(id)) << id;
  }
  EXPECT_EQ(txt.bytes(50256), "<|endoftext|>");
  EXPECT_EQ(json.find("<|notimestamps|>"), 50362);
  // " Hello, world." from its tokens (GPT-2 ids).
  EXPECT_EQ(txt.decode(std::vector<int>{18435, 11, 995, 13, 50256}, 50256), " Hello, world.");
}

}  // namespace
}  // namespace brisvox
