// DeviceBuffer: owning, zero-filled memory on a device, handed to the ops as a Tensor view.
// CPU memory is 64-byte aligned (core/buffer.h's allocator); CUDA memory comes from cudaMalloc
// and exists only in a CUDA build: asking for it elsewhere throws the error that names
// -DMESHLM_CUDA=ON, and a CUDA build without a GPU throws "no CUDA device".
//
//   DeviceBuffer x(Device::cuda, DType::f32, {N, C});
//   copy(x.view(), host_view);             // host -> device
//   ops::layernorm_forward(out.view(), ..., x.view(), ...);
//   copy(host_out, out.view());            // device -> host (waits for the device)
#pragma once

#include <cstddef>
#include <cstdint>

#include "meshlm/core/tensor.h"

namespace meshlm::kernels {

class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    DeviceBuffer(Device device, DType dtype, Shape shape);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& o) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    Tensor view() const { return Tensor{data_, dtype_, shape_, device_}; }
    void* data() const { return data_; }
    Device device() const { return device_; }
    std::size_t bytes() const { return bytes_; }

  private:
    void release() noexcept;

    void* data_ = nullptr;
    DType dtype_ = DType::f32;
    Shape shape_;
    Device device_ = Device::cpu;
    std::size_t bytes_ = 0;
};

// A flat float array on a device with Buffer<float>'s accessors: the learner's and the
// optimizer's flat buffers (parameters, gradients, moments), whose addresses the ops take as
// views on device().
class FloatArray {
  public:
    FloatArray() = default;
    FloatArray(Device device, std::size_t n)
        : buf_(device, DType::f32, {static_cast<std::int64_t>(n)}), n_(n) {}
    float* data() const { return static_cast<float*>(buf_.data()); }
    std::size_t size() const { return n_; }
    std::size_t bytes() const { return n_ * sizeof(float); }
    Device device() const { return buf_.device(); }

  private:
    DeviceBuffer buf_;
    std::size_t n_ = 0;
};

// dst = src byte for byte, between any two devices. The views must have the same dtype and
// number of elements (shapes may differ: a reshape on the way). A copy to the host returns once
// the data is there.
void copy(const Tensor& dst, const Tensor& src);

}  // namespace meshlm::kernels
