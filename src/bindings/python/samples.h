// Audio handed over from Python: a 1-D numpy array of float32 samples in [-1, 1] or of int16 PCM.
// Anything else is refused with a message that says what came and what is wanted, before any
// sample is read (2-D arrays too: brisvox streams are mono, and guessing which axis is time would
// be wrong half the time).
#pragma once

#include <nanobind/ndarray.h>

#include <span>
#include <vector>

namespace brisvox::python {

namespace nb = nanobind;

class Samples {
 public:
  // Throws nb::type_error (not an array, another dtype) or nb::value_error (not 1-D), naming
  // `function`. Holds a reference to the array.
  Samples(nb::handle object, const char* function);

  std::size_t size() const noexcept { return size_; }
  // The samples as float32: the array's own memory when it is contiguous float32, else converted
  // (int16 / 32768, as Pipecat and the C API do) into a buffer owned here. Needs no GIL.
  std::span<const float> floats();

 private:
  nb::ndarray<nb::ro, nb::device::cpu> array_;
  std::size_t size_ = 0;
  bool is_int16_ = false;
  std::vector<float> converted_;
};

}  // namespace brisvox::python
