// The audio of a call's replies cut into the pieces a provider takes in one media message: a
// provider with a least size (Telnyx's RTP mode: 20 ms) gets the engine's short pieces joined with
// the next of their utterance, and an utterance's last piece padded with the codec's silence when
// it ends short; a provider that takes frames of one size only (Vonage: 20 ms) gets every piece cut
// to exactly that size. Pure bookkeeping of bytes, no socket; not thread-safe (a connection's strand).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace brisvox::server {

class MediaChunker {
 public:
  struct Piece {
    std::uint32_t utterance = 0;
    std::string bytes;
  };

  // `least`: the fewest bytes a piece may hold (0: any, nothing is held); `silence`: the byte of
  // silence in the codec (G.711: mu-law 0xFF, A-law 0xD5; linear PCM 0); `exact`: every piece holds
  // exactly `least` bytes (longer ones are cut, the rest held for the next).
  MediaChunker(std::size_t least, char silence, bool exact = false)
      : least_(least), silence_(silence), exact_(exact && least > 0) {}

  // A piece of `utterance`'s audio; returns what may be sent now, in order (a held piece of
  // another utterance first, padded).
  std::vector<Piece> push(std::uint32_t utterance, std::string bytes);
  // All of the held audio, padded to the least size (an utterance ended, or a mark follows it);
  // empty when nothing is held.
  std::vector<Piece> flush();
  // Drops the held audio of utterances first..last (a barge-in purges them); returns its bytes.
  std::size_t drop(std::uint32_t first, std::uint32_t last);
  // Drops whatever is held (a clear, the provider's stop).
  void clear() { held_.clear(); }
  std::size_t held_bytes() const { return held_.size(); }

 private:
  const std::size_t least_;
  const char silence_;
  const bool exact_;
  std::uint32_t utterance_ = 0;  // whose audio is held
  std::string held_;
};

}  // namespace brisvox::server
