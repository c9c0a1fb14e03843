#include "meshlm/train/train_data.h"

#include <ostream>

#include "meshlm/core/error.h"
#include "meshlm/data/data_source.h"
#include "meshlm/data/prepare.h"
#include "meshlm/train/evaluate.h"

namespace meshlm {
namespace {

// The training split of the prepared `data.dir`, said on `out` and checked against the model.
void open_train_split(const TrainJob& job, Comm& world, TrainData& data, std::ostream& out) {
    // Rank 0 prepares raw inputs into the cache first; the others then find them there.
    const bool writer = world.rank() == 0;
    if (!writer) world.barrier();
    data.dir = resolve_prepared_data(job.data, *data.tokenizer, out);
    if (writer && world.size() > 1) world.barrier();
    PreparedMeta meta = read_prepared_meta(data.dir);
    data.loader = DataLoader::open_split(data.dir, "train", data.options);
    if (data.loader->vocab_size() > job.model.vocab_size)
        MESHLM_INVALID("the data in ", data.dir, " has a vocabulary of ", data.loader->vocab_size(),
                       " but model.vocab_size is ", job.model.vocab_size);
    out << "data: " << data.dir << " (" << meta.tokenizer_name << " tokens): train "
        << meta.splits["train"].documents << " docs / " << meta.splits["train"].tokens
        << " tokens, validation " << meta.splits["val"].documents << " docs / "
        << meta.splits["val"].tokens << " tokens; packing " << job.data.packing << "\n";
    if (data.loader->units_per_epoch() == 0)
        MESHLM_INVALID("the training split of ", data.dir, " has no ",
                       job.data.packing == "pad" ? "document of two tokens or more"
                                                 : "window of train.seq_len + 1 tokens",
                       " (", meta.splits["train"].tokens, " tokens)");
}

}  // namespace

TrainData open_train_data(const TrainJob& job, Comm& world, const TrainerState* resume,
                          std::ostream& out) {
    TrainData data;
    data.tokenizer = make_tokenizer(job.data.tokenizer);
    if (data.tokenizer->vocab_size() > job.model.vocab_size)
        MESHLM_INVALID("tokenizer '", data.tokenizer->name(), "' has ",
                       data.tokenizer->vocab_size(), " tokens but model.vocab_size is ",
                       job.model.vocab_size);
    data.options.packing = parse_packing(job.data.packing);
    data.options.seq_len = job.train.seq_len;
    data.options.seed = job.train.seed;
    if (job.data.synthetic) {
        out << "data: synthetic (uniformly random tokens)\n";
    } else {
        open_train_split(job, world, data, out);
        if (resume) {
            if (resume->loader.is_null())
                MESHLM_INVALID("the checkpoint ", job.resume_from,
                               " was written by a run on synthetic data; resume it with "
                               "data.synthetic=true");
            data.loader->restore(resume->loader);
        }
    }
    data.token_bytes = token_byte_lengths(*data.tokenizer, job.model.vocab_size);
    return data;
}

}  // namespace meshlm
