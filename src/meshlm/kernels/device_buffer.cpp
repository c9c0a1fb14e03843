// DeviceBuffer and copy(): core/buffer.h's allocator and memcpy on the CPU, the CUDA runtime
// (cuda/runtime.cpp) on a GPU.
#include "meshlm/kernels/device_buffer.h"

#include <cstring>
#include <utility>

#include "meshlm/core/buffer.h"
#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/check.h"
#include "meshlm/kernels/ops/dispatch.h"

namespace meshlm::kernels {

DeviceBuffer::DeviceBuffer(Device device, DType dtype, Shape shape)
    : dtype_(dtype), shape_(shape), device_(device) {
    MESHLM_CHECK(shape.numel() >= 0, "negative size ", shape.str());
    bytes_ = static_cast<std::size_t>(shape.numel()) * dtype_size(dtype);
    if (bytes_ == 0) return;
    require_device(device, "DeviceBuffer");
    if (device == Device::cpu) {
        data_ = aligned_alloc_zeroed(bytes_);
        return;
    }
    MESHLM_ON_CUDA("DeviceBuffer", data_ = cuda::malloc_zeroed(bytes_));
}

DeviceBuffer::~DeviceBuffer() {
    release();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      dtype_(o.dtype_),
      shape_(o.shape_),
      device_(o.device_),
      bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        release();
        data_ = std::exchange(o.data_, nullptr);
        dtype_ = o.dtype_;
        shape_ = o.shape_;
        device_ = o.device_;
        bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
}

void DeviceBuffer::release() noexcept {
    if (!data_) return;
    if (device_ == Device::cpu) {
        AlignedFree{}(data_);
    } else {
#ifdef MESHLM_HAVE_CUDA
        cuda::free(data_);
#endif
    }
    data_ = nullptr;
}

void copy(const Tensor& dst, const Tensor& src) {
    MESHLM_CHECK(dst.dtype == src.dtype, "copy: dst is ", dtype_name(dst.dtype), ", src is ",
                 dtype_name(src.dtype));
    MESHLM_CHECK(dst.numel() == src.numel(), "copy: dst has shape ", dst.shape.str(), ", src has ",
                 src.shape.str(), " (the element counts differ)");
    ops::expect_dense("copy", {{"dst", dst}, {"src", src}});  // one block of bytes
    const std::size_t bytes = static_cast<std::size_t>(src.numel()) * dtype_size(src.dtype);
    if (bytes == 0) return;
    MESHLM_CHECK(dst.data && src.data, "copy: a view without data");
    if (dst.device == Device::cpu && src.device == Device::cpu) {
        std::memcpy(dst.data, src.data, bytes);
        return;
    }
    require_device(Device::cuda, "copy");
    MESHLM_ON_CUDA("copy", cuda::copy_bytes(dst.data, src.data, bytes));
}

const std::int32_t* DeviceIds::put(const std::int32_t* ids, std::size_t n) {
    if (device_ == Device::cpu || n == 0) return ids;
    if (n > capacity_) {
        buf_ = DeviceBuffer(device_, DType::i32, {static_cast<std::int64_t>(n)});
        capacity_ = n;
    }
    const auto len = static_cast<std::int64_t>(n);
    const auto* at = static_cast<const std::int32_t*>(buf_.data());
    copy(view(at, {len}, device_), view(ids, {len}, Device::cpu));
    return at;
}

}  // namespace meshlm::kernels
