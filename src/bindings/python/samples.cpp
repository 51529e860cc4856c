#include "samples.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace brisvox::python {
namespace {

std::string dtype_name(nb::dlpack::dtype d) {
  switch (static_cast<nb::dlpack::dtype_code>(d.code)) {
    case nb::dlpack::dtype_code::Int: return fmt::format("int{}", d.bits);
    case nb::dlpack::dtype_code::UInt: return fmt::format("uint{}", d.bits);
    case nb::dlpack::dtype_code::Float: return fmt::format("float{}", d.bits);
    case nb::dlpack::dtype_code::Bool: return "bool";
    case nb::dlpack::dtype_code::Complex: return fmt::format("complex{}", d.bits);
    default: return fmt::format("dtype code {} ({} bits)", d.code, d.bits);
  }
}

}  // namespace

Samples::Samples(nb::handle object, const char* function) {
  if (!nb::try_cast(object, array_, /*convert=*/false)) {
    throw nb::type_error(fmt::format("{}: expected a 1-D numpy array of float32 samples in [-1, 1] or of "
                                     "int16 PCM, got {}",
                                     function, nb::type_name(object.type()).c_str())
                             .c_str());
  }
  const nb::dlpack::dtype d = array_.dtype();
  const bool is_float32 = d == nb::dtype<float>();
  is_int16_ = d == nb::dtype<std::int16_t>();
  if (!is_float32 && !is_int16_) {
    throw nb::type_error(fmt::format("{}: samples must be float32 (in [-1, 1]) or int16 PCM, got {}: convert "
                                     "with samples.astype(numpy.float32)",
                                     function, dtype_name(d))
                             .c_str());
  }
  if (array_.ndim() != 1) {
    std::string shape;
    for (std::size_t i = 0; i < array_.ndim(); ++i) shape += fmt::format("{}{}", i ? ", " : "", array_.shape(i));
    throw nb::value_error(fmt::format("{}: samples must be a 1-D array (mono), got shape ({}{}): pass one "
                                      "channel, e.g. samples[:, 0], or a mix such as samples.mean(axis=1)",
                                      function, shape, array_.ndim() == 1 ? "," : "")
                              .c_str());
  }
  size_ = array_.shape(0);
}

std::span<const float> Samples::floats() {
  const std::int64_t stride = size_ > 1 ? array_.stride(0) : 1;
  if (!is_int16_ && stride == 1) return {static_cast<const float*>(array_.data()), size_};
  converted_.resize(size_);
  const auto n = static_cast<std::int64_t>(size_);  // signed: a reversed view has a negative stride
  if (is_int16_) {
    const auto* in = static_cast<const std::int16_t*>(array_.data());
    for (std::int64_t i = 0; i < n; ++i) converted_[i] = static_cast<float>(in[i * stride]) / 32768.0f;
  } else {
    const auto* in = static_cast<const float*>(array_.data());
    for (std::int64_t i = 0; i < n; ++i) converted_[i] = in[i * stride];
  }
  return converted_;
}

}  // namespace brisvox::python
