// Whole numbers read from JSON files of any origin (meta.json, trainer.json, layout.json).
// nlohmann's get<int>() casts a float such as 1e300 with undefined behaviour and silently
// truncates 2.5 or 2^40 (found by fuzz/trainer_json.cpp and its kin); json_int<T> accepts only an
// integer within T's range and otherwise throws nlohmann::json::type_error, which those files'
// readers already turn into an InvalidInput naming the file.
//
// exports: json_int
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace meshlm {

template <typename T>
T json_int(const nlohmann::json& v) {
    using L = std::numeric_limits<T>;
    if (v.is_number_unsigned()) {
        const std::uint64_t u = v.get<std::uint64_t>();
        if (u <= static_cast<std::uint64_t>(L::max())) return static_cast<T>(u);
    } else if (v.is_number_integer()) {
        const std::int64_t i = v.get<std::int64_t>();
        if (i >= static_cast<std::int64_t>(L::min()) &&
            (i < 0 || static_cast<std::uint64_t>(i) <= static_cast<std::uint64_t>(L::max())))
            return static_cast<T>(i);
    }
    throw nlohmann::json::type_error::create(302,
                                             "expected a whole number in [" +
                                                 std::to_string(L::min()) + ", " +
                                                 std::to_string(L::max()) + "], got " + v.dump(),
                                             &v);
}

}  // namespace meshlm
