// The view ops' argument checks (ops/check.h).
#include "meshlm/kernels/ops/check.h"

#include <climits>

#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::ops {

Device common_device(const char* op, std::initializer_list<Arg> required,
                     std::initializer_list<Arg> optional, Strides strides) {
    const Arg& first = *required.begin();
    for (const Arg& a : required)
        if (!present(a.t)) throw Error(detail::concat(op, ": ", a.name, " has no data"));
    const Device d = first.t.device;
    auto same = [&](const Arg& a) {
        if (present(a.t) && a.t.device != d)
            throw Error(detail::concat(op, ": ", a.name, " is on ",
                                       kernels::device_name(a.t.device), " but ", first.name,
                                       " is on ", kernels::device_name(d),
                                       " (every view of one op must be on the same device)"));
    };
    for (const Arg& a : required) same(a);
    for (const Arg& a : optional) same(a);
    if (strides == Strides::dense) {
        expect_dense(op, required);
        expect_dense(op, optional);
    }
    return d;
}

void expect_dense(const char* op, std::initializer_list<Arg> args) {
    for (const Arg& a : args)
        if (present(a.t) && !a.t.dense())
            throw Error(detail::concat(op, ": ", a.name, " has row stride ", a.t.ld,
                                       "; expected a dense view"));
}

std::int64_t row_stride(const char* op, const Arg& a) {
    const Shape& s = expect_ndim(op, a, 2);
    if (a.t.ld == 0) return s[1];
    if (a.t.ld < s[1])
        throw Error(detail::concat(op, ": ", a.name, " has row stride ", a.t.ld, ", less than its ",
                                   s[1], " columns"));
    return a.t.ld;
}

void expect_dtype(const char* op, const Arg& a, DType want) {
    if (a.t.dtype != want)
        throw Error(detail::concat(op, ": ", a.name, " is ", dtype_name(a.t.dtype), ", expected ",
                                   dtype_name(want)));
}

void expect_shape(const char* op, const Arg& a, const Shape& want) {
    if (!(a.t.shape == want))
        throw Error(detail::concat(op, ": ", a.name, " has shape ", a.t.shape.str(), ", expected ",
                                   want.str()));
}

const Shape& expect_ndim(const char* op, const Arg& a, int ndim) {
    if (a.t.shape.ndim != ndim)
        throw Error(detail::concat(op, ": ", a.name, " has shape ", a.t.shape.str(), ", expected ",
                                   ndim, " dimensions"));
    return a.t.shape;
}

int as_int(const char* op, const char* what, std::int64_t v) {
    if (v < 0 || v > INT_MAX)
        throw Error(detail::concat(op, ": ", what, " = ", v, " is outside the kernels' int range"));
    return static_cast<int>(v);
}

}  // namespace meshlm::ops
