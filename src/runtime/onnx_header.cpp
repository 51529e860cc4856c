#include "runtime/onnx_header.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

namespace brisvox::runtime {
namespace {

// Protobuf wire types.
constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLengthDelimited = 2;
constexpr int kFixed32 = 5;

// ModelProto / OperatorSetIdProto field numbers (onnx/onnx.proto).
constexpr uint64_t kIrVersion = 1;
constexpr uint64_t kProducerName = 2;
constexpr uint64_t kProducerVersion = 3;
constexpr uint64_t kOpsetImport = 8;
constexpr uint64_t kMetadataProps = 14;  // repeated StringStringEntryProto {key = 1, value = 2}
constexpr uint64_t kOpsetDomain = 1;
constexpr uint64_t kOpsetVersion = 2;
constexpr uint64_t kGraph = 7;       // ModelProto.graph
constexpr uint64_t kGraphNode = 1;   // GraphProto.node (repeated NodeProto)
constexpr uint64_t kNodeOpType = 4;  // NodeProto.op_type

class SpanSource {
 public:
  explicit SpanSource(std::span<const std::byte> bytes) : bytes_(bytes) {}
  bool at_end() const { return pos_ >= bytes_.size(); }
  std::optional<uint8_t> byte() {
    if (at_end()) return std::nullopt;
    return static_cast<uint8_t>(bytes_[pos_++]);
  }
  bool read(char* out, uint64_t n) {
    if (n > bytes_.size() - pos_) return false;
    std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool skip(uint64_t n) {
    if (n > bytes_.size() - pos_) return false;
    pos_ += n;
    return true;
  }

 private:
  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
};

class FileSource {
 public:
  explicit FileSource(std::FILE* file) : file_(file) {}
  bool at_end() {
    const int c = std::fgetc(file_);
    if (c == EOF) return true;
    std::ungetc(c, file_);
    return false;
  }
  std::optional<uint8_t> byte() {
    const int c = std::fgetc(file_);
    if (c == EOF) return std::nullopt;
    return static_cast<uint8_t>(c);
  }
  bool read(char* out, uint64_t n) { return std::fread(out, 1, n, file_) == n; }
  bool skip(uint64_t n) { return std::fseek(file_, static_cast<long>(n), SEEK_CUR) == 0; }
  long tell() { return std::ftell(file_); }

 private:
  std::FILE* file_;
};

template <typename Source>
std::optional<uint64_t> read_varint(Source& src) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const auto b = src.byte();
    if (!b) return std::nullopt;
    value |= static_cast<uint64_t>(*b & 0x7f) << shift;
    if ((*b & 0x80) == 0) return value;
  }
  return std::nullopt;
}

// A field's key: its number and wire type.
struct Tag {
  uint64_t field;
  int wire;
};

template <typename Source>
std::optional<Tag> read_tag(Source& src) {
  const auto key = read_varint(src);
  if (!key) return std::nullopt;
  return Tag{*key >> 3, static_cast<int>(*key & 7)};
}

template <typename Source>
bool skip_field(Source& src, int wire_type) {
  switch (wire_type) {
    case kVarint: return read_varint(src).has_value();
    case kFixed64: return src.skip(8);
    case kFixed32: return src.skip(4);
    case kLengthDelimited: {
      const auto len = read_varint(src);
      return len && src.skip(*len);
    }
    default: return false;
  }
}

template <typename Source>
bool read_string(Source& src, std::string& out) {
  const auto len = read_varint(src);
  if (!len || *len > (1u << 20)) return false;  // a producer name is short; refuse absurd sizes
  out.resize(*len);
  return src.read(out.data(), *len);
}

bool parse_opset(std::span<const std::byte> bytes, ModelInfo& info) {
  SpanSource src(bytes);
  std::string domain;
  int64_t version = 0;
  while (!src.at_end()) {
    const auto tag = read_tag(src);
    if (!tag) return false;
    const auto [field, wire] = *tag;
    if (field == kOpsetDomain && wire == kLengthDelimited) {
      if (!read_string(src, domain)) return false;
    } else if (field == kOpsetVersion && wire == kVarint) {
      const auto v = read_varint(src);
      if (!v) return false;
      version = static_cast<int64_t>(*v);
    } else if (!skip_field(src, wire)) {
      return false;
    }
  }
  info.opsets[domain] = version;
  return true;
}

bool parse_metadata_entry(std::span<const std::byte> bytes, ModelInfo& info) {
  SpanSource src(bytes);
  std::string key;
  std::string value;
  while (!src.at_end()) {
    const auto tag = read_tag(src);
    if (!tag) return false;
    const auto [field, wire] = *tag;
    if (field == 1 && wire == kLengthDelimited) {
      if (!read_string(src, key)) return false;
    } else if (field == 2 && wire == kLengthDelimited) {
      if (!read_string(src, value)) return false;
    } else if (!skip_field(src, wire)) {
      return false;
    }
  }
  info.metadata[key] = std::move(value);
  return true;
}

template <typename Source>
bool parse_model(Source& src, ModelInfo& info) {
  while (!src.at_end()) {
    const auto tag = read_tag(src);
    if (!tag) return false;
    const auto [field, wire] = *tag;
    if (field == kIrVersion && wire == kVarint) {
      const auto v = read_varint(src);
      if (!v) return false;
      info.ir_version = static_cast<int64_t>(*v);
    } else if (field == kProducerName && wire == kLengthDelimited) {
      if (!read_string(src, info.producer_name)) return false;
    } else if (field == kProducerVersion && wire == kLengthDelimited) {
      if (!read_string(src, info.producer_version)) return false;
    } else if (field == kOpsetImport && wire == kLengthDelimited) {
      const auto len = read_varint(src);
      if (!len || *len > 4096) return false;
      std::string buf(*len, '\0');
      if (!src.read(buf.data(), *len)) return false;
      if (!parse_opset(std::as_bytes(std::span(buf)), info)) return false;
    } else if (field == kMetadataProps && wire == kLengthDelimited) {
      const auto len = read_varint(src);
      if (!len || *len > (1u << 20)) return false;
      std::string buf(*len, '\0');
      if (!src.read(buf.data(), *len)) return false;
      if (!parse_metadata_entry(std::as_bytes(std::span(buf)), info)) return false;
    } else if (!skip_field(src, wire)) {
      return false;
    }
  }
  return true;
}

// One NodeProto's op_type.
bool parse_node_op_type(std::span<const std::byte> bytes, std::set<std::string>& ops) {
  SpanSource src(bytes);
  while (!src.at_end()) {
    const auto tag = read_tag(src);
    if (!tag) return false;
    const auto [field, wire] = *tag;
    if (field == kNodeOpType && wire == kLengthDelimited) {
      std::string op;
      if (!read_string(src, op)) return false;
      ops.insert(std::move(op));
    } else if (!skip_field(src, wire)) {
      return false;
    }
  }
  return true;
}

// GraphProto's fields, `length` bytes of them: the nodes are read, everything else skipped.
bool parse_graph_ops(FileSource& src, uint64_t length, std::set<std::string>& ops) {
  constexpr uint64_t kMaxNodeBytes = 16u << 20;
  std::string node;
  uint64_t used = 0;
  while (used < length) {
    const long start = src.tell();
    const auto tag = read_tag(src);
    if (!tag) return false;
    const auto [field, wire] = *tag;
    if (field == kGraphNode && wire == kLengthDelimited) {
      const auto len = read_varint(src);
      if (!len || *len > kMaxNodeBytes) return false;
      node.resize(*len);
      if (!src.read(node.data(), *len)) return false;
      if (!parse_node_op_type(std::as_bytes(std::span(node)), ops)) return false;
    } else if (!skip_field(src, wire)) {
      return false;
    }
    const long end = src.tell();
    if (start < 0 || end < start) return false;
    used += static_cast<uint64_t>(end - start);
  }
  return used == length;
}

}  // namespace

std::optional<std::set<std::string>> read_onnx_op_types(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return std::nullopt;
  FileSource src(file.get());
  std::set<std::string> ops;
  bool found = false;
  while (!src.at_end()) {
    const auto tag = read_tag(src);
    if (!tag) return std::nullopt;
    const auto [field, wire] = *tag;
    if (field == kGraph && wire == kLengthDelimited) {
      const auto len = read_varint(src);
      if (!len || !parse_graph_ops(src, *len, ops)) return std::nullopt;
      found = true;
    } else if (!skip_field(src, wire)) {
      return std::nullopt;
    }
  }
  if (!found) return std::nullopt;
  return ops;
}

bool read_onnx_header(const std::string& path, ModelInfo& info) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return false;
  FileSource src(file.get());
  return parse_model(src, info);
}

bool read_onnx_header(std::span<const std::byte> bytes, ModelInfo& info) {
  SpanSource src(bytes);
  return parse_model(src, info);
}

}  // namespace brisvox::runtime
