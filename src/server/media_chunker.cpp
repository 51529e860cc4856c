#include "server/media_chunker.h"

#include <algorithm>

namespace brisvox::server {

std::vector<MediaChunker::Piece> MediaChunker::push(std::uint32_t utterance, std::string bytes) {
  if (least_ == 0) return {{utterance, std::move(bytes)}};
  std::vector<Piece> out;
  if (!held_.empty() && utterance_ != utterance) out = flush();
  utterance_ = utterance;
  held_ += bytes;
  if (held_.size() < least_) return out;
  if (!exact_) {
    out.push_back({utterance, std::move(held_)});
    held_.clear();
    return out;
  }
  std::size_t at = 0;
  for (; held_.size() - at >= least_; at += least_) out.push_back({utterance, held_.substr(at, least_)});
  held_.erase(0, at);
  return out;
}

std::vector<MediaChunker::Piece> MediaChunker::flush() {
  if (held_.empty()) return {};
  held_.resize(std::max(held_.size(), least_), silence_);
  std::vector<Piece> out{{utterance_, std::move(held_)}};
  held_.clear();
  return out;
}

std::size_t MediaChunker::drop(std::uint32_t first, std::uint32_t last) {
  if (held_.empty() || utterance_ < first || utterance_ > last) return 0;
  const std::size_t n = held_.size();
  held_.clear();
  return n;
}

}  // namespace brisvox::server
