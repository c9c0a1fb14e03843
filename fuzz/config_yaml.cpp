// Fuzz target: the run config (cli/config.h): a YAML file and --config.a.b=v overrides through
// split_config_overrides and load_config, as `meshlm train --config FILE --config.x.y=v` reads
// them. Input: the YAML text; from the first line that starts with "--config." on, each line is
// one command-line argument (seeds: configs/*.yaml, some with override lines appended).
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "meshlm/cli/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace meshlm;
    const std::string_view in = fuzz::text(data, size);
    std::size_t cut = in.starts_with("--config.") ? 0 : in.find("\n--config.");
    if (cut != std::string_view::npos && cut > 0) ++cut;  // the override lines start after '\n'
    const std::string_view yaml = in.substr(0, std::min(cut, in.size()));
    std::vector<std::string> args{"meshlm"};
    for (std::size_t at = yaml.size(); at < in.size();) {
        const std::size_t end = std::min(in.find('\n', at), in.size());
        args.emplace_back(in.substr(at, end - at));
        at = end + 1;
    }
    fuzz::guard([&] {
        std::vector<const char*> argv;
        for (const auto& a : args) argv.push_back(a.c_str());
        const SplitArgs split = split_config_overrides(static_cast<int>(argv.size()), argv.data());
        const Config c = load_config(fuzz::write_input("config.yaml", yaml), split.overrides);
        (void)config_to_yaml(c);
    });
    return 0;
}
