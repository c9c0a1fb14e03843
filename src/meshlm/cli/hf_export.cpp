#include "meshlm/cli/hf_export.h"

#include <filesystem>

#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace fs = std::filesystem;

namespace meshlm {

HfExport export_hf_dir(const std::string& dir, const RunDir& run, const float* params,
                       HfExportOptions opt, std::string& tokenizer_note) {
    const ModelConfig& m = run.config.model;
    opt.eot_id = run.tokenizer->eot_id();
    auto ex = write_hf_model(dir, m, transformer_layout(m), params, opt);
    const std::string& spec = run.tokenizer_spec;
    if (spec.ends_with(".json")) {
        fs::copy_file(spec, dir + "/tokenizer.json");
        tokenizer_note = "tokenizer.json copied";
    } else {
        tokenizer_note = "no Hugging Face tokenizer file written (the run's tokenizer is " +
                         (spec == "byte" ? std::string("the built-in byte tokenizer") : spec) +
                         "; token ids are the same, give transformers a matching tokenizer "
                         "yourself)";
    }
    return ex;
}

}  // namespace meshlm
