#include "meshlm/train/chunked_losses.h"

#include <algorithm>
#include <string>
#include <utility>

#include "meshlm/core/error.h"

namespace meshlm {

void copy_row_chunk(const std::int32_t* rows_of_t, int rows, int T, int c, int U,
                    std::int32_t* out) {
    const std::size_t u = static_cast<std::size_t>(U), row = static_cast<std::size_t>(T);
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r)
        std::copy_n(rows_of_t + r * row + static_cast<std::size_t>(c) * u, u, out + r * u);
}

ChunkedLosses::ChunkedLosses(Transformer& model, int U, BatchLosses chunk)
    : model_(model), U_(U), chunk_(std::move(chunk)) {
    MESHLM_CHECK(model.config().vq(), "only Transformer-VQ carries a state across chunks");
    MESHLM_CHECK(U > 0, "chunk length ", U);
}

const float* ChunkedLosses::operator()(const std::int32_t* tokens, const std::int32_t* targets,
                                       int rows, int T) {
    if (T % U_ != 0)
        MESHLM_INVALID("rows of ", T, " tokens run in chunks of model.vq.update_len = ", U_,
                       " tokens: the row length must be a multiple of it (",
                       T / U_ > 0 ? std::to_string(T / U_ * U_) + " or " : std::string(),
                       (T / U_ + 1) * U_, ")");
    const int n = T / U_;
    if (rows == 0) {
        for (int c = 0; c < n; ++c) chunk_(nullptr, nullptr, 0, U_);
        return nullptr;
    }
    const std::size_t R = static_cast<std::size_t>(rows), U = static_cast<std::size_t>(U_),
                      row = static_cast<std::size_t>(T);
    states_.resize(static_cast<std::size_t>(model_.config().n_layer) * R);
    for (auto& st : states_) st.clear();  // every row starts afresh
    tokens_.resize(R * U), targets_.resize(R * U), losses_.resize(R * row);
    // The states must not outlive this call on the model, whatever the chunks throw.
    struct Detach {
        Transformer& m;
        ~Detach() { m.set_vq_states(nullptr, 0); }
    } detach{model_};
    model_.set_vq_states(states_.data(), rows);
    for (int c = 0; c < n; ++c) {
        const std::size_t at = static_cast<std::size_t>(c) * U;
        copy_row_chunk(tokens, rows, T, c, U_, tokens_.data());
        copy_row_chunk(targets, rows, T, c, U_, targets_.data());
        const float* l = chunk_(tokens_.data(), targets_.data(), rows, U_);
        for (std::size_t r = 0; r < R; ++r)
            std::copy_n(l + r * U, U, losses_.data() + r * row + at);
    }
    return losses_.data();
}

}  // namespace meshlm
