// Text -> sentences of phonemes exactly as Piper (piper-tts 1.8, PiperVoice.phonemize) computes
// them, with the espeak-ng program (GPL-3.0) running as long-lived child processes: espeak-ng is
// never linked into brisvox or into any helper of it.
//
// How (docs/MODELS.md, "Piper" has the details and the measured parity):
//  - Piper's own steps are reproduced in brisvox: [[ raw phonemes ]] blocks, clause terminators
//    kept as phonemes (", : ;" followed by a space), sentences ended by ". ? !", paragraphs and the
//    end of the text, "(lang)" switch flags removed, NFD decomposition, vowel clusters.
//  - espeak-ng computes the phonemes of every clause. Two children run
//    `espeak-ng -q --ipa --sep=z -v VOICE` and `espeak-ng -q -x --sep=z -v VOICE` (plus
//    `--path=DATA` for a bundled data folder); each reads one line of text at a time and prints one
//    line per clause. brisvox predicts the clauses and their terminators itself (espeak-ng's
//    clause rules, src/models/tts/piper/espeak_clauses.h), checks the count against what
//    espeak-ng printed (a line that ends each request makes the reply's end unambiguous), and
//    turns the program's output into the library's (linking "ʲ", unpromoted stress:
//    src/models/tts/piper/espeak_output.h).
//  - Which espeak-ng: Piper bundles espeak-ng 1.52; scripts/setup.sh unpacks Debian 13's
//    espeak-ng 1.52 into third_party/espeak-ng, which default_espeak_install() prefers. Debian 12's
//    /usr/bin/espeak-ng is 1.51, whose English differs in a few phonemes (ɔː vs oː before r);
//    it works, with lower parity.
//
// Failure handling: espeak-ng missing or refusing the voice -> Error(kIo / kInvalidArgument) from
// the constructor. A child that dies or stops answering (timeout_ms) fails the request in flight
// with Error(kRuntime) naming how it ended; the next phonemize() starts new children.
//
// Thread-safety: not thread-safe; one thread at a time (give each worker its own phonemizer, or
// guard one with a mutex). Lifetime: the children live as long as the object; the destructor
// ends and reaps them. Memory: two espeak-ng processes (about 3 MB resident each).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace brisvox {

// Where the espeak-ng program and its data are.
struct EspeakInstall {
  std::string executable = "espeak-ng";  // a path, or a name looked up on PATH
  std::string data_dir;                   // passed as --path= (the folder holding espeak-ng-data); empty: the program's default
  std::string library_dir;                // LD_LIBRARY_PATH for the child (a libespeak-ng.so.1 beside the program); empty: none
};

// $BRISVOX_ESPEAK_NG_DIR if set, else the build's third_party/espeak-ng (what scripts/setup.sh
// unpacks), when that folder holds usr/bin/espeak-ng; else "espeak-ng" on PATH with its own data.
EspeakInstall default_espeak_install();

struct EspeakPhonemizerConfig {
  std::string voice = "en-us";  // espeak-ng voice, as in a Piper voice's "espeak": {"voice"}
  EspeakInstall install = default_espeak_install();
  int timeout_ms = 10000;       // longest wait for one reply line before the children are killed
  // Piper's vowel clusters (a voice's "vowel_clusters"): runs of phonemes merged into one.
  std::vector<std::vector<std::string>> vowel_clusters;
};

struct EspeakPhonemizerStats {
  std::uint64_t requests = 0;
  std::uint64_t clauses = 0;
  std::uint64_t restarts = 0;           // children started again after one died or hung
  std::uint64_t clause_mismatches = 0;  // espeak-ng printed another number of clauses than predicted
  std::uint64_t linking_restored = 0;   // "ʲ" written back
  std::uint64_t stress_restored = 0;    // clauses whose promoted stress was undone
};

// A sentence: its phonemes (one UTF-8 code point each, or a merged vowel cluster).
using PhonemeSentence = std::vector<std::string>;

class EspeakPhonemizer {
 public:
  // Starts the two espeak-ng children and checks that they answer. Throws Error(kIo) if the
  // program cannot be started, Error(kInvalidArgument) if it refuses the voice (its message).
  explicit EspeakPhonemizer(EspeakPhonemizerConfig config);
  ~EspeakPhonemizer();
  EspeakPhonemizer(EspeakPhonemizer&&) noexcept;
  EspeakPhonemizer& operator=(EspeakPhonemizer&&) noexcept;

  // Piper's PiperVoice.phonemize(text) for a voice with phoneme_type "espeak". `text` must be
  // valid UTF-8 without control characters other than tab, CR and LF (PiperTts checks that and
  // the length limit); empty sentences are left out. Throws Error(kInvalidArgument) for invalid
  // UTF-8, Error(kRuntime) if espeak-ng dies or hangs during the call.
  std::vector<PhonemeSentence> phonemize(std::string_view text);

  const std::string& voice() const;
  // The first line of `espeak-ng --version` without its data folder ("eSpeak NG text-to-speech: 1.52.0").
  const std::string& espeak_version() const;
  // Process ids of the two children (for diagnostics and tests); -1 where none runs.
  std::vector<pid_t> child_pids() const;
  EspeakPhonemizerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
