// Errors: typed exceptions thrown inside the library, caught once in main.
// MESHLM_CHECK(cond, msg...) throws meshlm::Error with file:line and the failing expression.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace meshlm {

// Internal invariant broken or a system call failed.
class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The user gave something invalid (config, flag, file): message says what would be valid.
class InvalidInput : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
    std::ostringstream os;
    (os << ... << args);
    return os.str();
}
}  // namespace detail

}  // namespace meshlm

#define MESHLM_CHECK(cond, ...)                                                                  \
    do {                                                                                         \
        if (!(cond))                                                                             \
            throw ::meshlm::Error(::meshlm::detail::concat(__FILE__, ":", __LINE__, ": check `", \
                                                           #cond, "` failed: ", __VA_ARGS__));   \
    } while (0)

#define MESHLM_INVALID(...) throw ::meshlm::InvalidInput(::meshlm::detail::concat(__VA_ARGS__))
