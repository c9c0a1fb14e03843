#include "meshlm/cli/hf_export.h"

#include "meshlm/io/hf_tokenizer_files.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {

HfExport export_hf_dir(const std::string& dir, const RunDir& run, const float* params,
                       HfExportOptions opt, std::string& tokenizer_note) {
    const ModelConfig& m = run.config.model;
    opt.eot_id = run.tokenizer->eot_id();
    auto ex = write_hf_model(dir, m, transformer_layout(m), params, opt);
    HfTokenizerSource src;
    src.spec = run.tokenizer_spec;
    src.eot_id = opt.eot_id;
    src.model_max_length = m.max_seq_len;
    src.dirs = chat_config_dirs(run);
    tokenizer_note = write_hf_tokenizer_files(dir, src);
    return ex;
}

}  // namespace meshlm
