// The fuzz targets' use of a DataLoader (token_shard, prepared_meta): a few batches in both
// packings, with every token checked to lie in the shard's vocabulary -- a token outside it would
// be read past the embedding table by the model. Throws what the loader throws.
#pragma once

#include <memory>

#include "meshlm/data/loader.h"

namespace meshlm::fuzz {

// Draws a few small batches from `open(options)` in concat and in pad packing.
template <typename Open>
void probe_loader(const Open& open);

void check_batch(const DataLoader& loader, const std::int32_t* tokens, int n);

template <typename Open>
void probe_loader(const Open& open) {
    for (const Packing packing : {Packing::Concat, Packing::Pad}) {
        LoaderOptions opt;
        opt.packing = packing;
        opt.seq_len = 8;
        opt.seed = 7;
        const std::unique_ptr<DataLoader> loader = open(opt);
        constexpr int B = 2, T = 8;
        std::int32_t tokens[B * T], targets[B * T];
        for (int step = 0; step < 3; ++step) {
            loader->next_batch(B, T, tokens, targets);
            check_batch(*loader, tokens, B * T);
        }
        loader->restore(loader->state());
        (void)loader->rows_left_in_epoch();
    }
}

}  // namespace meshlm::fuzz
