// Transformer-VQ's checks and device dispatch (ops/vq_attention.h).
#include "meshlm/kernels/ops/vq_attention.h"

#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

// The tables and the shapes every attention call shares; returns N.
int check_attention(const char* op, const Tensor& q, const Tensor& z, const Tensor& v,
                    const VqTables& t, int B, int T, const kernels::VqAttnShape& s) {
    expect_f32(
        op,
        {{"q", q}, {"v", v}, {"codebook", t.codebook}, {"rel", t.rel}, {"u", t.u}, {"vb", t.vb}});
    expect_dtype(op, {"z", z}, DType::i32);
    if (B < 1 || T < 1 || s.L < 1 || s.S < 1 || s.dk < 1 || s.dv < 1)
        throw Error(detail::concat(op, ": B ", B, ", T ", T, ", L ", s.L, ", S ", s.S, ", dk ",
                                   s.dk, ", dv ", s.dv, ": every size must be positive"));
    const std::int64_t N = static_cast<std::int64_t>(B) * T;
    expect_shape(op, {"q", q}, Shape{N, s.dk});
    expect_shape(op, {"z", z}, Shape{N});
    expect_shape(op, {"v", v}, Shape{N, s.dv});
    expect_shape(op, {"codebook", t.codebook}, Shape{s.S, s.dk});
    expect_shape(op, {"rel", t.rel}, Shape{s.L + 1, s.dk});
    expect_shape(op, {"u", t.u}, Shape{s.dk});
    expect_shape(op, {"vb", t.vb}, Shape{s.dk});
    expect_dense(op,
                 {{"z", z}, {"codebook", t.codebook}, {"rel", t.rel}, {"u", t.u}, {"vb", t.vb}});
    return static_cast<int>(N);
}

}  // namespace

void vq_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& z,
                          const Tensor& v, const VqTables& t, int B, int T,
                          const kernels::VqAttnShape& s, kernels::VqAttnState* state) {
    constexpr const char* op = "vq_attention_forward";
    const Device d = common_device(op,
                                   {{"q", q},
                                    {"v", v},
                                    {"out", out},
                                    {"lse", lse},
                                    {"z", z},
                                    {"codebook", t.codebook},
                                    {"rel", t.rel},
                                    {"u", t.u},
                                    {"vb", t.vb}},
                                   {}, Strides::allowed);
    const int N = check_attention(op, q, z, v, t, B, T, s);
    expect_f32(op, {{"out", out}, {"lse", lse}});
    expect_shape(op, {"out", out}, Shape{N, s.dv});
    expect_shape(op, {"lse", lse}, Shape{N});
    expect_dense(op, {{"out", out}, {"lse", lse}});
    const int ldq = as_int(op, "q's row stride", row_stride(op, {"q", q}));
    const int ldv = as_int(op, "v's row stride", row_stride(op, {"v", v}));
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::vq_attention_forward(out.f32(), lse.f32(), q.f32(), ldq, z.i32(), v.f32(),
                                             ldv, t.codebook.f32(), t.rel.f32(), t.u.f32(),
                                             t.vb.f32(), B, T, s, state);
    MESHLM_ON_CUDA(op, kernels::cuda::vq_attention_forward(
                           out.f32(), lse.f32(), q.f32(), ldq, z.i32(), v.f32(), ldv,
                           t.codebook.f32(), t.rel.f32(), t.u.f32(), t.vb.f32(), B, T, s, state));
}

void vq_attention_backward(const VqGrads& g, const Tensor& dout, const Tensor& out,
                           const Tensor& lse, const Tensor& q, const Tensor& z, const Tensor& v,
                           const VqTables& t, int B, int T, const kernels::VqAttnShape& s,
                           const kernels::VqAttnState* state) {
    constexpr const char* op = "vq_attention_backward";
    const Device d = common_device(op,
                                   {{"q", q},
                                    {"v", v},
                                    {"dq", g.dq},
                                    {"dk", g.dk},
                                    {"dv", g.dv},
                                    {"dout", dout},
                                    {"out", out},
                                    {"lse", lse},
                                    {"z", z},
                                    {"du", g.du},
                                    {"dvb", g.dvb},
                                    {"drel", g.drel},
                                    {"codebook", t.codebook}},
                                   {}, Strides::allowed);
    const int N = check_attention(op, q, z, v, t, B, T, s);
    expect_f32(op, {{"dout", dout},
                    {"out", out},
                    {"lse", lse},
                    {"dq", g.dq},
                    {"dk", g.dk},
                    {"dv", g.dv},
                    {"du", g.du},
                    {"dvb", g.dvb},
                    {"drel", g.drel}});
    for (const Arg& a : {Arg{"dout", dout}, Arg{"out", out}}) expect_shape(op, a, Shape{N, s.dv});
    expect_shape(op, {"lse", lse}, Shape{N});
    expect_shape(op, {"dq", g.dq}, q.shape);
    expect_shape(op, {"dk", g.dk}, q.shape);
    expect_shape(op, {"dv", g.dv}, v.shape);
    expect_shape(op, {"du", g.du}, Shape{s.dk});
    expect_shape(op, {"dvb", g.dvb}, Shape{s.dk});
    expect_shape(op, {"drel", g.drel}, Shape{s.L + 1, s.dk});
    expect_dense(op, {{"dout", dout},
                      {"out", out},
                      {"lse", lse},
                      {"du", g.du},
                      {"dvb", g.dvb},
                      {"drel", g.drel}});
    const std::int64_t ldq = row_stride(op, {"q", q}), ldv = row_stride(op, {"v", v});
    if (row_stride(op, {"dq", g.dq}) != ldq || row_stride(op, {"dk", g.dk}) != ldq ||
        row_stride(op, {"dv", g.dv}) != ldv)
        throw Error(
            detail::concat(op, ": dq and dk need q's row stride ", ldq, " and dv needs v's ", ldv));
    const int ldq32 = as_int(op, "ldq", ldq), ldv32 = as_int(op, "ldv", ldv);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::vq_attention_backward(
            g.dq.f32(), g.dk.f32(), g.dv.f32(), g.du.f32(), g.dvb.f32(), g.drel.f32(), dout.f32(),
            out.f32(), lse.f32(), q.f32(), ldq32, z.i32(), v.f32(), ldv32, t.codebook.f32(),
            t.rel.f32(), t.u.f32(), t.vb.f32(), B, T, s, state);
    MESHLM_ON_CUDA(op,
                   kernels::cuda::vq_attention_backward(
                       g.dq.f32(), g.dk.f32(), g.dv.f32(), g.du.f32(), g.dvb.f32(), g.drel.f32(),
                       dout.f32(), out.f32(), lse.f32(), q.f32(), ldq32, z.i32(), v.f32(), ldv32,
                       t.codebook.f32(), t.rel.f32(), t.u.f32(), t.vb.f32(), B, T, s, state));
}

void vq_quantize(const Tensor& z, const Tensor& err, const Tensor& k, const Tensor& codebook) {
    constexpr const char* op = "vq_quantize";
    const Device d = common_device(op, {{"k", k}, {"z", z}, {"err", err}, {"codebook", codebook}},
                                   {}, Strides::allowed);
    expect_f32(op, {{"k", k}, {"err", err}, {"codebook", codebook}});
    expect_dtype(op, {"z", z}, DType::i32);
    const auto [N, dk] = expect_rows(op, {"k", k});
    const auto [S, dc] = expect_rows(op, {"codebook", codebook});
    if (dc != dk) expect_shape(op, {"codebook", codebook}, Shape{S, dk});
    expect_shape(op, {"z", z}, Shape{N});
    expect_shape(op, {"err", err}, Shape{N});
    expect_dense(op, {{"z", z}, {"err", err}, {"codebook", codebook}});
    const int ldk = as_int(op, "k's row stride", row_stride(op, {"k", k}));
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::vq_quantize(z.i32(), err.f32(), k.f32(), ldk, codebook.f32(), N, S, dk);
    MESHLM_ON_CUDA(
        op, kernels::cuda::vq_quantize(z.i32(), err.f32(), k.f32(), ldk, codebook.f32(), N, S, dk));
}

void vq_codebook(const Tensor& codebook, const Tensor& c_sum, const Tensor& c_count) {
    constexpr const char* op = "vq_codebook";
    const Device d =
        common_device(op, {{"codebook", codebook}, {"c_sum", c_sum}, {"c_count", c_count}});
    expect_f32(op, {{"codebook", codebook}, {"c_sum", c_sum}, {"c_count", c_count}});
    const auto [S, dk] = expect_rows(op, {"codebook", codebook});
    expect_shape(op, {"c_sum", c_sum}, codebook.shape);
    expect_shape(op, {"c_count", c_count}, Shape{S});
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::vq_codebook(codebook.f32(), c_sum.f32(), c_count.f32(), S, dk);
    MESHLM_ON_CUDA(op,
                   kernels::cuda::vq_codebook(codebook.f32(), c_sum.f32(), c_count.f32(), S, dk));
}
void vq_commit_grad(const Tensor& dk, const Tensor& k, const Tensor& codebook, const Tensor& z,
                    float scale) {
    constexpr const char* op = "vq_commit_grad";
    const Device d = common_device(op, {{"dk", dk}, {"k", k}, {"codebook", codebook}, {"z", z}}, {},
                                   Strides::allowed);
    expect_f32(op, {{"dk", dk}, {"k", k}, {"codebook", codebook}});
    expect_dtype(op, {"z", z}, DType::i32);
    const auto [N, w] = expect_rows(op, {"k", k});
    expect_shape(op, {"dk", dk}, k.shape);
    const auto [S, dc] = expect_rows(op, {"codebook", codebook});
    if (dc != w) expect_shape(op, {"codebook", codebook}, Shape{S, w});
    expect_shape(op, {"z", z}, Shape{N});
    expect_dense(op, {{"codebook", codebook}, {"z", z}});
    const int ldd = as_int(op, "dk's row stride", row_stride(op, {"dk", dk}));
    const int ldk = as_int(op, "k's row stride", row_stride(op, {"k", k}));
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::vq_commit_grad(dk.f32(), ldd, k.f32(), ldk, codebook.f32(), z.i32(), N, w,
                                       scale);
    MESHLM_ON_CUDA(op, kernels::cuda::vq_commit_grad(dk.f32(), ldd, k.f32(), ldk, codebook.f32(),
                                                     z.i32(), N, w, scale));
}

void vq_codebook_stats(const Tensor& c_sum, const Tensor& c_count, const Tensor& k,
                       const Tensor& z) {
    constexpr const char* op = "vq_codebook_stats";
    const Device d = common_device(op, {{"k", k}, {"c_sum", c_sum}, {"c_count", c_count}, {"z", z}},
                                   {}, Strides::allowed);
    expect_f32(op, {{"c_sum", c_sum}, {"c_count", c_count}, {"k", k}});
    expect_dtype(op, {"z", z}, DType::i32);
    const auto [N, dk] = expect_rows(op, {"k", k});
    const auto [S, dc] = expect_rows(op, {"c_sum", c_sum});
    if (dc != dk) expect_shape(op, {"c_sum", c_sum}, Shape{S, dk});
    expect_shape(op, {"c_count", c_count}, Shape{S});
    expect_shape(op, {"z", z}, Shape{N});
    expect_dense(op, {{"c_sum", c_sum}, {"c_count", c_count}, {"z", z}});
    const int ldk = as_int(op, "k's row stride", row_stride(op, {"k", k}));
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::vq_codebook_stats(c_sum.f32(), c_count.f32(), k.f32(), ldk, z.i32(), N, S,
                                          dk);
    MESHLM_ON_CUDA(op, kernels::cuda::vq_codebook_stats(c_sum.f32(), c_count.f32(), k.f32(), ldk,
                                                        z.i32(), N, S, dk));
}

}  // namespace meshlm::ops
