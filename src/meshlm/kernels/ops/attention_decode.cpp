// attention_decode's and attention_paged's checks and device dispatch (ops/attention_decode.h).
#include "meshlm/kernels/ops/attention_decode.h"

#include <cstdint>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

constexpr int kMaxHeadDim = 256;  // cpu/attention_decode.cpp's and the CUDA kernel's limit

struct Dims {
    int M, W, Hkv, positions, D;  // positions: Tmax or block
};

// The checks both ops share; returns the sizes.
Dims check_decode(const char* op, const Tensor& out, const Tensor& q, const Tensor& k,
                  const Tensor& v, const Tensor& alibi, const DecodeHeads& h) {
    expect_f32(op, {{"out", out}, {"q", q}, {"k", k}, {"v", v}, {"alibi_slopes", alibi}});
    const auto [M, W] = expect_rows(op, {"q", q});
    const Shape& ks = expect_ndim(op, {"k", k}, 4);
    expect_shape(op, {"v", v}, ks);
    const Dims d{M, W, as_int(op, "Hkv", ks[1]), as_int(op, "positions", ks[2]),
                 as_int(op, "D", ks[3])};
    if (h.Hkv != d.Hkv)
        throw Error(detail::concat(op, ": heads.Hkv ", h.Hkv, " but k has ", d.Hkv, " heads"));
    if (h.H < 1 || h.Hkv < 1 || h.H % h.Hkv != 0)
        throw Error(detail::concat(op, ": H ", h.H, " must be a positive multiple of Hkv ", h.Hkv));
    if (d.D < 1 || d.D > kMaxHeadDim)
        throw Error(detail::concat(op, ": head dim ", d.D, " outside 1..", kMaxHeadDim));
    if (static_cast<std::int64_t>(h.H) * d.D > W)
        throw Error(
            detail::concat(op, ": ", h.H, " query heads of ", d.D, " do not fit q's rows of ", W));
    expect_shape(op, {"out", out}, Shape{M, h.H * d.D});
    if (present(alibi)) expect_shape(op, {"alibi_slopes", alibi}, Shape{h.H});
    return d;
}

const kernels::AttnActParams* act_of(const DecodeHeads& h) {
    return h.act.act == kernels::AttnAct::softmax ? nullptr : &h.act;
}

}  // namespace

void attention_decode(const Tensor& out, const Tensor& q, const Tensor& k_cache,
                      const Tensor& v_cache, const Tensor& seq, int T, const Tensor& alibi,
                      const DecodeHeads& h) {
    constexpr const char* op = "attention_decode";
    const Device d =
        common_device(op, {{"q", q}, {"out", out}, {"k_cache", k_cache}, {"v_cache", v_cache}},
                      {{"seq", seq}, {"alibi_slopes", alibi}});
    const Dims s = check_decode(op, out, q, k_cache, v_cache, alibi, h);
    if (present(seq)) {
        expect_dtype(op, {"seq", seq}, DType::i32);
        expect_shape(op, {"seq", seq}, Shape{s.M});
    }
    if (T < 1 || T > s.positions)
        throw Error(
            detail::concat(op, ": T ", T, " outside 1..", s.positions, " (the cache's Tmax)"));
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::attention_decode(out.f32(), q.f32(), s.W, k_cache.f32(), v_cache.f32(),
                                         seq.i32(), s.M, T, s.positions, h.H, h.Hkv, s.D,
                                         alibi.f32(), h.scale, act_of(h), h.dist);
    MESHLM_ON_CUDA(op, kernels::cuda::attention_decode(
                           out.f32(), q.f32(), s.W, k_cache.f32(), v_cache.f32(), seq.i32(), s.M, T,
                           s.positions, h.H, h.Hkv, s.D, alibi.f32(), h.scale, act_of(h), h.dist));
}

void attention_paged(const Tensor& out, const Tensor& q, const Tensor& k_pool, const Tensor& v_pool,
                     const Tensor& tables, const Tensor& lens, const Tensor& alibi,
                     const DecodeHeads& h) {
    constexpr const char* op = "attention_paged";
    const Device d = common_device(op,
                                   {{"q", q},
                                    {"out", out},
                                    {"k_pool", k_pool},
                                    {"v_pool", v_pool},
                                    {"tables", tables},
                                    {"lens", lens}},
                                   {{"alibi_slopes", alibi}});
    const Dims s = check_decode(op, out, q, k_pool, v_pool, alibi, h);
    expect_dtype(op, {"tables", tables}, DType::i32);
    expect_dtype(op, {"lens", lens}, DType::i32);
    const Shape& ts = expect_ndim(op, {"tables", tables}, 2);
    if (ts[0] != s.M) expect_shape(op, {"tables", tables}, Shape{s.M, ts[1]});
    expect_shape(op, {"lens", lens}, Shape{s.M});
    const int stride = as_int(op, "blocks per row", ts[1]);
    kernels::require_device(d, op);
    if (d == Device::cpu) {
        std::vector<const std::int32_t*> rows(s.M);
        for (int m = 0; m < s.M; ++m) rows[m] = tables.i32() + static_cast<std::size_t>(m) * stride;
        return kernels::attention_paged(out.f32(), q.f32(), s.W, k_pool.f32(), v_pool.f32(),
                                        rows.data(), lens.i32(), s.M, s.positions, h.H, h.Hkv, s.D,
                                        alibi.f32(), h.scale, act_of(h), h.dist);
    }
    MESHLM_ON_CUDA(
        op, kernels::cuda::attention_paged(out.f32(), q.f32(), s.W, k_pool.f32(), v_pool.f32(),
                                           tables.i32(), stride, lens.i32(), s.M, s.positions, h.H,
                                           h.Hkv, s.D, alibi.f32(), h.scale, act_of(h), h.dist));
}

void kv_store(const Tensor& k_pool, const Tensor& v_pool, const Tensor& qkv, const Tensor& tables,
              const Tensor& pos, int H) {
    constexpr const char* op = "kv_store";
    const Device d = common_device(
        op,
        {{"k_pool", k_pool}, {"v_pool", v_pool}, {"qkv", qkv}, {"tables", tables}, {"pos", pos}});
    expect_f32(op, {{"k_pool", k_pool}, {"v_pool", v_pool}, {"qkv", qkv}});
    expect_dtype(op, {"tables", tables}, DType::i32);
    expect_dtype(op, {"pos", pos}, DType::i32);
    const auto [M, W] = expect_rows(op, {"qkv", qkv});
    const Shape& ks = expect_ndim(op, {"k_pool", k_pool}, 4);
    expect_shape(op, {"v_pool", v_pool}, ks);
    const Shape& ts = expect_ndim(op, {"tables", tables}, 2);
    if (ts[0] != M) expect_shape(op, {"tables", tables}, Shape{M, ts[1]});
    expect_shape(op, {"pos", pos}, Shape{M});
    const int blocks = as_int(op, "blocks", ks[0]), Hkv = as_int(op, "Hkv", ks[1]);
    const int block = as_int(op, "block", ks[2]), D = as_int(op, "D", ks[3]);
    if (static_cast<std::int64_t>(H + 2 * Hkv) * D > W)
        throw Error(detail::concat(op, ": ", H, " query and 2 x ", Hkv, " key/value heads of ", D,
                                   " do not fit qkv's rows of ", W));
    const int n = as_int(op, "blocks per row", ts[1]);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::kv_store(k_pool.f32(), v_pool.f32(), qkv.f32(), W, tables.i32(), n,
                                 pos.i32(), M, blocks, block, H, Hkv, D);
    MESHLM_ON_CUDA(op, kernels::cuda::kv_store(k_pool.f32(), v_pool.f32(), qkv.f32(), W,
                                               tables.i32(), n, pos.i32(), M, block, H, Hkv, D));
}

}  // namespace meshlm::ops
