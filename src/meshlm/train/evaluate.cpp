#include "meshlm/train/evaluate.h"

#include <cmath>

namespace meshlm {

double EvalResult::perplexity() const {
    return std::exp(loss());
}

double EvalResult::bits_per_byte() const {
    return bytes ? loss_sum / std::log(2.0) / static_cast<double>(bytes) : 0;
}

std::vector<std::uint32_t> token_byte_lengths(const Tokenizer& tok, int vocab_size) {
    std::vector<std::uint32_t> len(vocab_size, 0);
    for (int id = 0; id < vocab_size; ++id)
        len[id] = static_cast<std::uint32_t>(tok.decode({id}).size());
    if (tok.eot_id() >= 0 && tok.eot_id() < vocab_size) len[tok.eot_id()] = 1;
    return len;
}

EvalResult evaluate(Transformer& model, const float* params, DataLoader& loader, int B, int T,
                    long max_batches, const std::vector<std::uint32_t>& token_bytes,
                    std::int32_t* tokens, std::int32_t* targets, int rank, int world) {
    auto losses = [&](const std::int32_t* tok, const std::int32_t* tgt, int rows, int t) {
        if (rows == 0) return static_cast<const float*>(nullptr);
        model.forward(params, tok, tgt, rows, t);
        return model.losses();
    };
    return evaluate(losses, loader, B, T, max_batches, token_bytes, tokens, targets, rank, world);
}

EvalResult evaluate(const BatchLosses& model, DataLoader& loader, int B, int T, long max_batches,
                    const std::vector<std::uint32_t>& token_bytes, std::int32_t* tokens,
                    std::int32_t* targets, int rank, int world, const EvalProgress& progress) {
    EvalResult r;
    const std::uint64_t start_epoch = loader.epoch();
    const std::uint64_t global = static_cast<std::uint64_t>(B) * world;
    long total = static_cast<long>((loader.rows_left_in_epoch() + global - 1) / global);
    if (max_batches > 0 && max_batches < total) total = max_batches;
    for (long b = 0; max_batches == 0 || b < max_batches; ++b) {
        const std::uint64_t left = loader.rows_left_in_epoch();
        if (loader.epoch() != start_epoch || left == 0) break;
        const int all_rows = static_cast<int>(left < global ? left : global);
        loader.next_batch(all_rows, T, tokens, targets, rank, world);
        const auto [first, end] = DataLoader::rank_rows(all_rows, rank, world);
        const int rows = end - first;
        const float* losses = model(tokens, targets, rows, T);
        for (int n = 0; n < rows * T; ++n) {
            if (targets[n] < 0) continue;
            r.loss_sum += losses[n];
            r.tokens += 1;
            r.bytes += token_bytes[targets[n]];
        }
        if (progress) progress(b + 1, total);
    }
    return r;
}

}  // namespace meshlm
