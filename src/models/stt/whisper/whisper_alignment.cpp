// The alignment pass and its path: WhisperAligner (whisper_words.h), as CTranslate2's
// Whisper::align (src/models/whisper.cc), its MedianFilter and negative_dtw (src/dtw.cc) compute
// them, in float32 and in their order of operations.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "brisvox/error.h"
#include "brisvox/models/stt/whisper_words.h"

namespace brisvox {
namespace {

constexpr int kMedianFilterWidth = 7;  // faster-whisper's find_alignment default

// Softmax in place over `row` (max subtracted).
void softmax(std::span<float> row) {
  const float top = *std::max_element(row.begin(), row.end());
  float sum = 0.0f;
  for (float& x : row) {
    x = std::exp(x - top);
    sum += x;
  }
  for (float& x : row) x /= sum;
}

// CTranslate2's MedianFilter along a row: a window of `width` mirrored at the ends (index -1 reads
// 1, index n reads n - 2); rows of at most width / 2 pass through.
void median_filter(std::span<const float> in, std::span<float> out, int width) {
  const auto n = static_cast<int>(in.size());
  const int rank = width / 2;
  if (n <= rank) {
    std::copy(in.begin(), in.end(), out.begin());
    return;
  }
  float window[kMedianFilterWidth];
  for (int j = 0; j < n; ++j) {
    for (int k = -rank; k <= rank; ++k) {
      int read = std::abs(j + k);
      if (read >= n) read = n - (read - n) - 2;
      window[k + rank] = in[static_cast<std::size_t>(read)];
    }
    std::nth_element(window, window + rank, window + width);
    out[static_cast<std::size_t>(j)] = window[rank];
  }
}

// CTranslate2's negative_dtw: the cheapest monotone path through -x ([n][m]), as (row, column)
// pairs from (0, 0) to (n - 1, m - 1). Ties go to the diagonal only when strictly cheaper, then
// to the row step, else the column step.
std::vector<std::pair<int, int>> negative_dtw(const std::vector<float>& x, int n, int m) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const auto w = static_cast<std::size_t>(m + 1);
  std::vector<float> cost(static_cast<std::size_t>(n + 1) * w, inf);
  std::vector<signed char> trace(static_cast<std::size_t>(n + 1) * w, -1);
  cost[0] = 0.0f;
  for (int j = 1; j <= m; ++j) {
    for (int i = 1; i <= n; ++i) {
      const float c0 = cost[static_cast<std::size_t>(i - 1) * w + static_cast<std::size_t>(j - 1)];
      const float c1 = cost[static_cast<std::size_t>(i - 1) * w + static_cast<std::size_t>(j)];
      const float c2 = cost[static_cast<std::size_t>(i) * w + static_cast<std::size_t>(j - 1)];
      float c = 0.0f;
      signed char t = 0;
      if (c0 < c1 && c0 < c2) {
        c = c0;
        t = 0;
      } else if (c1 < c0 && c1 < c2) {
        c = c1;
        t = 1;
      } else {
        c = c2;
        t = 2;
      }
      const float v = x[static_cast<std::size_t>(i - 1) * static_cast<std::size_t>(m) + static_cast<std::size_t>(j - 1)];
      cost[static_cast<std::size_t>(i) * w + static_cast<std::size_t>(j)] = -v + c;
      trace[static_cast<std::size_t>(i) * w + static_cast<std::size_t>(j)] = t;
    }
  }
  for (int k = 0; k <= m; ++k) trace[static_cast<std::size_t>(k)] = 2;
  for (int k = 0; k <= n; ++k) trace[static_cast<std::size_t>(k) * w] = 1;
  std::vector<std::pair<int, int>> path;
  int i = n;
  int j = m;
  while (i > 0 || j > 0) {
    path.emplace_back(i - 1, j - 1);
    const signed char t = trace[static_cast<std::size_t>(i) * w + static_cast<std::size_t>(j)];
    if (t == 0) {
      --i;
      --j;
    } else if (t == 1) {
      --i;
    } else {
      --j;
    }
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace

WhisperAligner::WhisperAligner(const WhisperConfig& config, std::span<const int> sot_sequence,
                               std::span<const int> text, int content_frames, int alignment_heads)
    : eot_(config.tokens.eot),
      heads_(alignment_heads),
      positions_(std::max(0, content_frames) / 2),
      sot_length_(sot_sequence.size()) {
  if (alignment_heads < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "Whisper word timestamps need the decoder's alignment heads; this model has none (convert it again "
                "with tools/whisper/convert_ct2.py)");
  }
  if (sot_sequence.empty()) throw Error(ErrorCode::kInvalidArgument, "Whisper aligner: empty start sequence");
  for (int t : text) {
    if (t >= 0 && t < eot_) text_.push_back(t);
  }
  input_.assign(sot_sequence.begin(), sot_sequence.end());
  input_.push_back(config.tokens.no_timestamps);
  input_.insert(input_.end(), text_.begin(), text_.end());
  input_.push_back(eot_);
  scores_.assign(input_.size() * static_cast<std::size_t>(heads_) * static_cast<std::size_t>(positions_), 0.0f);
  probabilities_.assign(text_.size(), 0.0f);
}

void WhisperAligner::consume(std::span<const float> logits, std::span<const float> scores, int stride) {
  if (done()) throw Error(ErrorCode::kClosed, "Whisper aligner: the pass is already complete");
  const auto F = static_cast<std::size_t>(positions_);
  const auto A = static_cast<std::size_t>(heads_);
  if (stride < positions_ || scores.size() < A * static_cast<std::size_t>(stride) ||
      logits.size() <= static_cast<std::size_t>(eot_)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper aligner: {} scores at stride {} and {} logits do not hold {} heads x {} positions",
                            scores.size(), stride, logits.size(), heads_, positions_));
  }
  const auto p = static_cast<std::size_t>(position_);
  for (std::size_t a = 0; a < A; ++a) {
    std::copy_n(scores.begin() + static_cast<std::ptrdiff_t>(a * static_cast<std::size_t>(stride)), F,
                scores_.begin() + static_cast<std::ptrdiff_t>((p * A + a) * F));
  }
  // The next forced token's probability among the text tokens (CTranslate2 softmaxes over ids
  // below <|endoftext|>).
  if (p >= sot_length_ && p < sot_length_ + text_.size()) {
    const auto text_logits = logits.first(static_cast<std::size_t>(eot_));
    const float top = *std::max_element(text_logits.begin(), text_logits.end());
    float sum = 0.0f;
    for (float x : text_logits) sum += std::exp(x - top);
    const int next = input_[p + 1];
    probabilities_[p - sot_length_] = std::exp(text_logits[static_cast<std::size_t>(next)] - top) / sum;
  }
  ++position_;
}

std::vector<std::pair<int, int>> WhisperAligner::path() const {
  if (!done()) throw Error(ErrorCode::kClosed, "Whisper aligner: the pass is not complete");
  if (text_.empty() || positions_ == 0) return {};
  const auto N = input_.size();
  const auto A = static_cast<std::size_t>(heads_);
  const auto F = static_cast<std::size_t>(positions_);
  std::vector<float> w = scores_;  // [N][A][F]
  for (std::size_t r = 0; r < N * A; ++r) softmax(std::span<float>(w.data() + r * F, F));
  // Each (head, position) column standardised over the tokens (CTranslate2's LayerNorm on axis -2,
  // epsilon 0). A constant column (no variance) is left at 0 rather than 0/0.
  for (std::size_t a = 0; a < A; ++a) {
    for (std::size_t f = 0; f < F; ++f) {
      float sum = 0.0f;
      float squares = 0.0f;
      for (std::size_t k = 0; k < N; ++k) {
        const float x = w[(k * A + a) * F + f];
        sum += x;
        squares += x * x;
      }
      const float mean = sum / static_cast<float>(N);
      const float variance = std::max(squares / static_cast<float>(N) - mean * mean, 0.0f);
      const float rstd = variance > 0.0f ? 1.0f / std::sqrt(variance) : 0.0f;
      for (std::size_t k = 0; k < N; ++k) {
        float& x = w[(k * A + a) * F + f];
        x = (x - mean) * rstd;
      }
    }
  }
  // Median filter along the positions, then the heads' mean, for the rows <|notimestamps|> ..
  // last text token.
  const std::size_t rows = text_.size() + 1;
  std::vector<float> matrix(rows * F, 0.0f);
  std::vector<float> filtered(F);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t k = sot_length_ + r;
    float* out = matrix.data() + r * F;
    for (std::size_t a = 0; a < A; ++a) {
      median_filter(std::span<const float>(w.data() + (k * A + a) * F, F), filtered, kMedianFilterWidth);
      for (std::size_t f = 0; f < F; ++f) out[f] += filtered[f];
    }
    for (std::size_t f = 0; f < F; ++f) out[f] /= static_cast<float>(A);
  }
  return negative_dtw(matrix, static_cast<int>(rows), static_cast<int>(F));
}

}  // namespace brisvox
