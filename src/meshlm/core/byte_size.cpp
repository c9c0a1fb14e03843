#include "meshlm/core/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "meshlm/core/error.h"

namespace meshlm {

std::uint64_t parse_byte_size(const std::string& text, const std::string& what) {
    struct Unit {
        const char* name;
        double factor;
    };
    static const Unit units[] = {{"", 1},
                                 {"b", 1},
                                 {"kb", 1e3},
                                 {"mb", 1e6},
                                 {"gb", 1e9},
                                 {"tb", 1e12},
                                 {"kib", 1024.0},
                                 {"mib", 1048576.0},
                                 {"gib", 1073741824.0},
                                 {"tib", 1099511627776.0}};
    const char* begin = text.c_str();
    char* end = nullptr;
    const double number = std::strtod(begin, &end);
    std::string unit;
    for (const char* p = end; *p; ++p)
        if (!std::isspace(static_cast<unsigned char>(*p)))
            unit += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
    if (end != begin && std::isfinite(number) && number >= 0)
        for (const Unit& u : units)
            if (unit == u.name) return static_cast<std::uint64_t>(std::llround(number * u.factor));
    MESHLM_INVALID(what, " '", text,
                   "' is not a size; write a number of bytes or a number with a unit: B, KB, MB, "
                   "GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. 5GB");
}

}  // namespace meshlm
