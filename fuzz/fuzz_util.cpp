// fuzz_util.h: the finding-or-refusal rule and the scratch directory of the fuzz targets.
#include "fuzz_util.h"

#include <cxxabi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <typeinfo>

#include "meshlm/core/error.h"

namespace meshlm::fuzz {
namespace {

std::string demangled(const char* name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> s(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                             std::free);
    return status == 0 && s ? s.get() : name;
}

[[noreturn]] void finding(const std::string& type, const char* what) {
    std::fprintf(stderr, "fuzz finding: %s escaped the parser: %s\n", type.c_str(), what);
    std::fflush(stderr);
    std::abort();
}

}  // namespace

void guard(const std::function<void()>& parse) {
    try {
        parse();
    } catch (const Error&) {
    } catch (const InvalidInput&) {
    } catch (const std::exception& e) {
        finding(demangled(typeid(e).name()), e.what());
    } catch (...) {
        const std::type_info* t = abi::__cxa_current_exception_type();
        finding(t ? demangled(t->name()) : "unknown", "(not a std::exception)");
    }
}

const std::string& scratch_dir() {
    namespace fs = std::filesystem;
    // Never destroyed: the atexit handler runs after static destructors registered later.
    static const std::string* dir = [] {
        // MESHLM_FUZZ_KEEP=DIR: work in DIR and leave it (fuzz/make_seeds.sh takes seeds there).
        if (const char* keep = std::getenv("MESHLM_FUZZ_KEEP")) {
            fs::create_directories(keep);
            return new std::string(keep);
        }
        const fs::path root =
            fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
        const fs::path d = root / ("meshlm-fuzz-" + std::to_string(::getpid()));
        fs::create_directories(d);
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(*dir, ec);
        });
        return new std::string(d.string());
    }();
    return *dir;
}

std::string write_input(const std::string& name, std::string_view data) {
    const std::string path = scratch_dir() + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    return path;
}

}  // namespace meshlm::fuzz
