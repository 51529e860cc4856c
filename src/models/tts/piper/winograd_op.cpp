#include "models/tts/piper/winograd_op.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/tts/piper/winograd_conv.h"
#include "runtime/model_signature.h"
#include "runtime/op_domains.h"

namespace brisvox::piper {
namespace {

using runtime::dims_string;

struct WinogradConvKernel {
  std::unique_ptr<WinogradConv> conv;
  const OrtApi* api = nullptr;

  // Statuses, never exceptions, cross back into ONNX Runtime.
  OrtStatusPtr ComputeV2(OrtKernelContext* raw) noexcept {
    try {
      Ort::KernelContext context(raw);
      const Ort::ConstValue x = context.GetInput(0);
      const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
      const bool four_d = shape.size() == 4;
      if ((shape.size() != 3 && !four_d) || (four_d && shape[2] != 1) || shape[1] != conv->in_channels()) {
        return api->CreateStatus(ORT_INVALID_ARGUMENT,
                                 fmt::format("WinogradConv: input X has shape {}, expected [N, {}, 1, T] or [N, {}, T]",
                                             dims_string(shape), conv->in_channels(), conv->in_channels()).c_str());
      }
      std::vector<int64_t> out_shape = shape;
      out_shape[1] = conv->out_channels();
      const float* residual = nullptr;
      if (context.GetInputCount() > 3) {
        const Ort::ConstValue r = context.GetInput(3);
        if (r) {
          const std::vector<int64_t> rs = r.GetTensorTypeAndShapeInfo().GetShape();
          if (rs != out_shape) {
            return api->CreateStatus(ORT_INVALID_ARGUMENT,
                                     fmt::format("WinogradConv: residual R has shape {}, expected {}", dims_string(rs),
                                                 dims_string(out_shape)).c_str());
          }
          residual = r.GetTensorData<float>();
        }
      }
      Ort::UnownedValue y = context.GetOutput(0, out_shape);
      const int64_t length = shape.back();
      if (shape[0] > 0 && length > 0) {
        conv->run(x.GetTensorData<float>(), residual, y.GetTensorMutableData<float>(), shape[0], length);
      }
      return nullptr;
    } catch (const std::exception& e) {
      return api->CreateStatus(ORT_FAIL, fmt::format("WinogradConv: {}", e.what()).c_str());
    } catch (...) {
      return api->CreateStatus(ORT_FAIL, "WinogradConv: unknown error");
    }
  }
};

// The constant tensor at input `index`, with its shape; throws with the reason otherwise.
std::span<const float> constant_input(const Ort::ConstKernelInfo& info, size_t index, const char* what,
                                      std::vector<int64_t>& shape) {
  int is_constant = 0;
  const Ort::ConstValue value = info.GetTensorConstantInput(index, &is_constant);
  if (!is_constant || !value) {
    throw std::invalid_argument(fmt::format("WinogradConv: input {} ({}) must be a constant initializer", index, what));
  }
  const auto type = value.GetTensorTypeAndShapeInfo();
  if (type.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    throw std::invalid_argument(fmt::format("WinogradConv: input {} ({}) must be float32", index, what));
  }
  shape = type.GetShape();
  return {value.GetTensorData<float>(), type.GetElementCount()};
}

struct WinogradConvOp : Ort::CustomOpBase<WinogradConvOp, WinogradConvKernel, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi& api, const OrtKernelInfo* raw, void** kernel) const noexcept {
    try {
      Ort::ConstKernelInfo info(raw);
      std::vector<int64_t> ws, bs;
      const std::span<const float> w = constant_input(info, 1, "the weight", ws);
      const std::span<const float> b = constant_input(info, 2, "the bias", bs);
      const bool w4 = ws.size() == 4 && ws[2] == 1;
      if (!w4 && ws.size() != 3) {
        throw std::invalid_argument(fmt::format("WinogradConv: weight W has shape {}, expected [O, C, 1, r] or [O, C, r]",
                                                dims_string(ws)));
      }
      if (bs.size() != 1 || bs[0] != ws[0]) {
        throw std::invalid_argument(fmt::format("WinogradConv: bias B has shape {}, expected [{}]", dims_string(bs), ws[0]));
      }
      const int64_t dilation = info.GetAttribute<int64_t>("dilation");
      std::optional<float> alpha;
      float value = 0.f;
      if (OrtStatus* missing = api.KernelInfoGetAttribute_float(raw, "alpha", &value)) {
        api.ReleaseStatus(missing);
      } else {
        alpha = value;
      }
      auto made = std::make_unique<WinogradConvKernel>();
      made->conv = std::make_unique<WinogradConv>(w, b, ws[0], ws[1], ws.back(), dilation, alpha);
      made->api = &api;
      *kernel = made.release();
      return nullptr;
    } catch (const std::exception& e) {
      return api.CreateStatus(ORT_INVALID_GRAPH, e.what());
    } catch (...) {
      return api.CreateStatus(ORT_FAIL, "WinogradConv: unknown error");
    }
  }
  const char* GetName() const { return "WinogradConv"; }
  size_t GetInputTypeCount() const { return 4; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  OrtCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t index) const {
    return index == 3 ? OrtCustomOpInputOutputCharacteristic::INPUT_OUTPUT_OPTIONAL
                      : OrtCustomOpInputOutputCharacteristic::INPUT_OUTPUT_REQUIRED;
  }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
};

}  // namespace

bool winograd_vectorised() { return WinogradConv::available().front() != WinogradIsa::kGeneric; }

void register_winograd_op() {
  // Sessions keep pointers to the domain and its operators: both live until the process ends.
  static Ort::CustomOpDomain* const domain = [] {
    static WinogradConvOp* const winograd = new WinogradConvOp();
    auto* d = new Ort::CustomOpDomain(kPiperOpDomain);
    d->Add(winograd);
    runtime::register_op_domain(*d);
    return d;
  }();
  (void)domain;
}

}  // namespace brisvox::piper
