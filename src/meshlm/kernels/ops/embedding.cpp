// The embedding's checks and device dispatch (ops/embedding.h).
#include "meshlm/kernels/ops/embedding.h"

#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"
#include "meshlm/kernels/vocab_parallel.h"

namespace meshlm::ops {

namespace {

struct Sizes {
    int N, V, C;
};

// rows [N, C] and positions [P >= T, C], f32.
Rows check_positions(const char* op, const Arg& rows, const Arg& positions, int T) {
    expect_f32(op, {rows, positions});
    const Rows r = expect_rows(op, rows);
    const auto [P, Cp] = expect_rows(op, positions);
    if (Cp != r.C) expect_shape(op, positions, Shape{P, r.C});
    if (T < 1 || T > P)
        throw Error(detail::concat(op, ": T = ", T, " needs 1 <= T <= ", P, " (the rows of ",
                                   positions.name, ")"));
    return r;
}

// rows [N, C], table [V, C], positions [P >= T, C] when present.
Sizes check(const char* op, const Arg& rows, const Arg& tokens, const Arg& table,
            const Arg& positions, int T) {
    expect_f32(op, {rows, table, positions});
    expect_dtype(op, tokens, DType::i32);
    const auto [N, C] = expect_rows(op, rows);
    expect_shape(op, tokens, Shape{N});
    const auto [V, Ct] = expect_rows(op, table);
    if (Ct != C) expect_shape(op, table, Shape{V, C});
    if (present(positions.t)) check_positions(op, rows, positions, T);
    return {N, V, C};
}

}  // namespace

void embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& wte,
                       const Tensor& wpe, int T, int v0) {
    constexpr const char* op = "embedding_forward";
    const Device d =
        common_device(op, {{"out", out}, {"tokens", tokens}, {"wte", wte}}, {{"wpe", wpe}});
    const auto [N, V, C] =
        check(op, {"out", out}, {"tokens", tokens}, {"wte", wte}, {"wpe", wpe}, T);
    kernels::require_device(d, op);
    const auto* tok = tokens.i32();
    if (d == Device::cpu) {
        kernels::embedding_forward_vocab_range(out.f32(), tok, wte.f32(), v0, V, N, C);
        if (present(wpe)) kernels::position_embedding_forward(out.f32(), wpe.f32(), N, T, C);
        return;
    }
    MESHLM_ON_CUDA(op, {
        kernels::cuda::embedding_forward_vocab_range(out.f32(), tok, wte.f32(), v0, V, N, C);
        if (present(wpe)) kernels::cuda::position_embedding_forward(out.f32(), wpe.f32(), N, T, C);
    });
}

void embedding_backward(const Tensor& dwte, const Tensor& dwpe, const Tensor& dout,
                        const Tensor& tokens, int T, int v0) {
    constexpr const char* op = "embedding_backward";
    const Device d =
        common_device(op, {{"dout", dout}, {"tokens", tokens}, {"dwte", dwte}}, {{"dwpe", dwpe}});
    const auto [N, V, C] =
        check(op, {"dout", dout}, {"tokens", tokens}, {"dwte", dwte}, {"dwpe", dwpe}, T);
    kernels::require_device(d, op);
    const auto* tok = tokens.i32();
    if (d == Device::cpu) {
        kernels::embedding_backward_vocab_range(dwte.f32(), dout.f32(), tok, v0, V, N, C);
        if (present(dwpe)) kernels::position_embedding_backward(dwpe.f32(), dout.f32(), N, T, C);
        return;
    }
    MESHLM_ON_CUDA(op, {
        kernels::cuda::embedding_backward_vocab_range(dwte.f32(), dout.f32(), tok, v0, V, N, C);
        if (present(dwpe))
            kernels::cuda::position_embedding_backward(dwpe.f32(), dout.f32(), N, T, C);
    });
}

void position_embedding_forward(const Tensor& out, const Tensor& wpe, int T, bool round_bf16) {
    constexpr const char* op = "position_embedding_forward";
    const Device d = common_device(op, {{"out", out}, {"wpe", wpe}});
    const auto [N, C] = check_positions(op, {"out", out}, {"wpe", wpe}, T);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return round_bf16 ? kernels::position_embedding_forward_bf16(out.f32(), wpe.f32(), N, T, C)
                          : kernels::position_embedding_forward(out.f32(), wpe.f32(), N, T, C);
    MESHLM_ON_CUDA(
        op, round_bf16
                ? kernels::cuda::position_embedding_forward_bf16(out.f32(), wpe.f32(), N, T, C)
                : kernels::cuda::position_embedding_forward(out.f32(), wpe.f32(), N, T, C));
}

void position_embedding_backward(const Tensor& dwpe, const Tensor& dout, int T) {
    constexpr const char* op = "position_embedding_backward";
    const Device d = common_device(op, {{"dout", dout}, {"dwpe", dwpe}});
    const auto [N, C] = check_positions(op, {"dout", dout}, {"dwpe", dwpe}, T);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::position_embedding_backward(dwpe.f32(), dout.f32(), N, T, C);
    MESHLM_ON_CUDA(op, kernels::cuda::position_embedding_backward(dwpe.f32(), dout.f32(), N, T, C));
}

namespace {

// rows [N, C], table [P, C], scale [1], pos0 i32 [N / T] when present; N a multiple of T.
Rows check_sinusoid(const char* op, const Arg& rows, const Tensor& table, const Arg& scale,
                    const Tensor& pos0, int T) {
    expect_f32(op, {rows, {"table", table}, scale});
    const Rows r = expect_rows(op, rows);
    const auto [P, Cp] = expect_rows(op, {"table", table});
    if (Cp != r.C) expect_shape(op, {"table", table}, Shape{P, r.C});
    expect_shape(op, scale, Shape{1});
    if (T < 1 || r.N % T != 0)
        throw Error(detail::concat(op, ": T = ", T, " must divide the ", r.N, " rows"));
    if (present(pos0)) {
        expect_dtype(op, {"pos0", pos0}, DType::i32);
        expect_shape(op, {"pos0", pos0}, Shape{r.N / T});
    } else if (T > P) {
        throw Error(detail::concat(op, ": T = ", T, " positions but the table has ", P, " rows"));
    }
    return r;
}

}  // namespace

void sinusoid_position_forward(const Tensor& out, const Tensor& table, const Tensor& scale,
                               const Tensor& pos0, int T, bool round_scale) {
    constexpr const char* op = "sinusoid_position_forward";
    const Device d =
        common_device(op, {{"out", out}, {"table", table}, {"scale", scale}}, {{"pos0", pos0}});
    const auto [N, C] = check_sinusoid(op, {"out", out}, table, {"scale", scale}, pos0, T);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::sinusoid_position_forward(out.f32(), table.f32(), scale.f32(), pos0.i32(),
                                                  N, T, C, round_scale);
    MESHLM_ON_CUDA(op, kernels::cuda::sinusoid_position_forward(out.f32(), table.f32(), scale.f32(),
                                                                pos0.i32(), N, T, C, round_scale));
}

void sinusoid_position_backward(const Tensor& dscale, const Tensor& dout, const Tensor& table,
                                const Tensor& pos0, int T) {
    constexpr const char* op = "sinusoid_position_backward";
    const Device d =
        common_device(op, {{"dout", dout}, {"table", table}, {"dscale", dscale}}, {{"pos0", pos0}});
    const auto [N, C] = check_sinusoid(op, {"dout", dout}, table, {"dscale", dscale}, pos0, T);
    kernels::require_device(d, op);
    if (d == Device::cpu)
        return kernels::sinusoid_position_backward(dscale.f32(), dout.f32(), table.f32(),
                                                   pos0.i32(), N, T, C);
    MESHLM_ON_CUDA(op, kernels::cuda::sinusoid_position_backward(dscale.f32(), dout.f32(),
                                                                 table.f32(), pos0.i32(), N, T, C));
}

}  // namespace meshlm::ops
