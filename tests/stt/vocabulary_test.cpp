// Byte-level BPE detokenisation: GPT-2's byte table, lossy UTF-8, the three vocabulary formats;
// and encoding, against faster-whisper's tokenizer (tools/whisper/make_token_goldens.py).
#include "brisvox/models/stt/whisper_vocabulary.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

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
  // And back, from each format: sherpa-onnx's file has no specials, the others stop at 50256.
  for (const WhisperVocabulary* v : {&txt, &json, &sherpa}) {
    EXPECT_EQ(v->encode(" Hello, world."), (std::vector<int>{18435, 11, 995, 13}));
  }
}

// The real vocabularies, loaded once: brisvox model folder -> vocabulary.
const WhisperVocabulary& real_vocabulary(const std::string& folder) {
  static std::map<std::string, WhisperVocabulary> loaded;
  auto it = loaded.find(folder);
  if (it == loaded.end()) {
    it = loaded.emplace(folder, WhisperVocabulary::from_vocabulary_txt(test::bundled_model(folder) + "/vocabulary.txt"))
             .first;
  }
  return it->second;
}

// tests/data/stt/whisper_token_goldens.json: for tiny.en (GPT-2's vocabulary) and the multilingual
// base, the ids faster-whisper 1.2.1's tokenizer gives ~140 texts (English, contractions, digits,
// punctuation, whitespace of every kind, emoji, CJK, other scripts, Spanish, French, Italian and
// Russian transcripts), every one required exactly; and the ids decode back to the text.
TEST(WhisperVocabularyEncode, MatchesFasterWhisperOnEveryGolden) {
  const nlohmann::json goldens = test::read_json_file(test::data_path("stt/whisper_token_goldens.json"));
  std::size_t checked = 0;
  for (const auto& [folder, model] : goldens["models"].items()) {
    const WhisperVocabulary& v = real_vocabulary(folder);
    const int eot = model["end_of_text"].get<int>();
    ASSERT_EQ(v.find("<|endoftext|>"), eot) << folder;
    for (const auto& g : model["goldens"]) {
      const std::string text = g["text"].get<std::string>();
      const std::vector<int> ids = v.encode(text);
      EXPECT_EQ(ids, g["ids"].get<std::vector<int>>()) << folder << ": '" << text << "'";
      EXPECT_EQ(v.decode(ids, eot), text) << folder;
      ++checked;
    }
  }
  EXPECT_GE(checked, 2u * 130u);
}

// Random text from a mix of scripts, digits, punctuation, whitespace and emoji: the ids are all
// regular tokens and decode back to the text, on both vocabularies.
TEST(WhisperVocabularyEncode, RoundTripsRandomText) {
  static const std::vector<std::pair<char32_t, char32_t>> kRanges = {
      {U'a', U'z'}, {U'A', U'Z'}, {U'0', U'9'}, {U' ', U'/'},        {U'\t', U'\r'},
      {0xe0, 0xff}, {0x400, 0x44f}, {0x4e00, 0x4e80}, {0x1f600, 0x1f64f}, {0x2000, 0x200b}};
  std::mt19937 rng(7);
  for (const std::string folder : {"whisper-tiny.en", "whisper-base"}) {
    const WhisperVocabulary& v = real_vocabulary(folder);
    const int eot = v.find("<|endoftext|>");
    for (int round = 0; round < 200; ++round) {
      std::u32string cps;
      const std::size_t length = rng() % 40;
      for (std::size_t i = 0; i < length; ++i) {
        // Mostly ASCII letters and spaces, as text is.
        const auto& [lo, hi] = kRanges[rng() % 3 == 0 ? rng() % kRanges.size() : (rng() % 2 == 0 ? 0 : 3)];
        cps.push_back(lo + static_cast<char32_t>(rng() % (hi - lo + 1)));
      }
      std::string text;
      for (char32_t cp : cps) {
        // UTF-8 by hand: the test should not depend on the encoder's own reader.
        if (cp < 0x80) {
          text += static_cast<char>(cp);
        } else if (cp < 0x800) {
          text += static_cast<char>(0xc0 | (cp >> 6));
          text += static_cast<char>(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
          text += static_cast<char>(0xe0 | (cp >> 12));
          text += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
          text += static_cast<char>(0x80 | (cp & 0x3f));
        } else {
          text += static_cast<char>(0xf0 | (cp >> 18));
          text += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
          text += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
          text += static_cast<char>(0x80 | (cp & 0x3f));
        }
      }
      const std::vector<int> ids = v.encode(text);
      for (int id : ids) ASSERT_TRUE(id >= 0 && id < eot) << folder << ": " << id;
      ASSERT_EQ(v.decode(ids, eot), text) << folder;
    }
  }
}

TEST(WhisperVocabularyEncode, RefusesInvalidUtf8) {
  const WhisperVocabulary& v = real_vocabulary("whisper-tiny.en");
  for (const std::string bad : {"\xFF", "abc\xC3", "\x80", "\xC0\x80", "\xE0\x80\x80", "\xED\xA0\x80",
                                "\xF4\x90\x80\x80", "\xF0\x9F\x98", "ok \xE2\x82 then"}) {
    try {
      v.encode(bad);
      ADD_FAILURE() << "no error for " << ::testing::PrintToString(bad);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(v.encode("").empty());
}

// Hugging Face gives the special's id for text that spells one; brisvox never produces specials,
// so the characters are encoded as text (as tiktoken's encode_ordinary does).
TEST(WhisperVocabularyEncode, EncodesTheSpellingOfASpecialTokenAsText) {
  for (const std::string folder : {"whisper-tiny.en", "whisper-base"}) {
    const WhisperVocabulary& v = real_vocabulary(folder);
    const int eot = v.find("<|endoftext|>");
    for (const std::string text : {"<|endoftext|>", " <|en|><|0.00|> hi"}) {
      const std::vector<int> ids = v.encode(text);
      EXPECT_GT(ids.size(), 3u);
      for (int id : ids) EXPECT_LT(id, eot) << folder;
      EXPECT_EQ(v.decode(ids, eot), text);
    }
  }
}

// The merging rule on a made-up vocabulary (ids are ranks): the pair joining into the lowest id
// first, the leftmost of equals; a piece that is no token and a byte without one.
TEST(WhisperVocabularyEncode, MergesTheLowestRankedPairFirst) {
  const WhisperVocabulary v = WhisperVocabulary::from_tokens(
      {{0, "a"}, {1, "b"}, {2, "c"}, {3, " "}, {4, "bc"}, {5, "ab"}, {6, "aa"}, {7, "aaa"}, {8, "<|endoftext|>"}});
  EXPECT_EQ(v.encode("abc"), (std::vector<int>{0, 4}));         // "bc" (4) before "ab" (5)
  EXPECT_EQ(v.encode("ab"), (std::vector<int>{5}));             // a whole token
  EXPECT_EQ(v.encode("aaaa"), (std::vector<int>{6, 6}));        // leftmost "aa" first, then "aa": "aaa" never forms
  EXPECT_EQ(v.encode("aaaaa"), (std::vector<int>{6, 7}));       // "aa" "a" "a" "a" -> "aa" "aa" "a" -> "aa" "aaa"
  EXPECT_EQ(v.encode("cab ab"), (std::vector<int>{2, 5, 3, 5}));  // pieces "cab", " ab": no " ab" token
  try {
    v.encode("abz");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("0x7a"), std::string::npos) << e.what();
  }
  EXPECT_THROW(WhisperVocabulary().encode("a"), Error);
}

// The index is of ids, not addresses: a copy encodes as the original does. Concurrent callers
// share the vocabulary.
TEST(WhisperVocabularyEncode, CopiesAndThreadsEncodeAlike) {
  const WhisperVocabulary& v = real_vocabulary("whisper-base");
  const std::string text = " Por favor ingrese el numero de canal, 42 veces. Спасибо!";
  const std::vector<int> expected = v.encode(text);
  WhisperVocabulary copy = v;
  const WhisperVocabulary moved = std::move(copy);
  EXPECT_EQ(moved.encode(text), expected);
  std::vector<std::thread> threads;
  std::vector<int> same(4, 0);  // not vector<bool>: its elements share bytes
  for (std::size_t t = 0; t < same.size(); ++t) {
    threads.emplace_back([&, t] {
      bool ok = true;
      for (int i = 0; i < 200; ++i) ok = ok && v.encode(text) == expected;
      same[t] = ok ? 1 : 0;
    });
  }
  for (auto& th : threads) th.join();
  for (int ok : same) EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace brisvox
