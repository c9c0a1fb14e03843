// Types shared by the stages of the HF tokenizer pipeline (data/hf/): the text pieces that flow
// from the pre-tokenizer to the model, a non-owning callback, and Where, the location inside a
// tokenizer.json (file and JSON path) that load errors and refusals name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "meshlm/core/error.h"

namespace meshlm::hf {

// A non-owning reference to a callable, valid while the call that received it runs.
template <typename Sig>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
  public:
    template <typename F,
              typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
    FunctionRef(F&& f)  // NOLINT: implicit like std::function
        : obj_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, Args... a) -> R {
              return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
          }) {}
    R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

  private:
    void* obj_;
    R (*call_)(void*, Args...);
};

// String -> id with lookups by string_view.
struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIdMap = std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>>;

// Text between the pre-tokenizer's steps. at_start: the piece begins at offset 0 of the text
// given to encode (Metaspace's prepend_scheme "first" prepends only there).
struct Piece {
    std::string_view text;
    bool at_start;
};
using PieceSink = FunctionRef<void(const Piece&)>;

// A place in a tokenizer.json, for messages: "tok.json: pre_tokenizer.pretokenizers[1]: ...".
struct Where {
    std::string file;
    std::string path;

    Where at(std::string_view key) const {
        return {file, path.empty() ? std::string(key) : path + "." + std::string(key)};
    }
    Where at(std::size_t index) const { return {file, path + "[" + std::to_string(index) + "]"}; }

    std::string str() const { return file + ": " + (path.empty() ? "(top level)" : path); }

    template <typename... Args>
    [[noreturn]] void fail(Args&&... args) const {
        MESHLM_INVALID(file, ": ", path.empty() ? "(top level)" : path, ": ",
                       std::forward<Args>(args)...);
    }
    // A component type meshlm does not implement.
    [[noreturn]] void refuse(std::string_view kind, std::string_view type,
                             std::string_view supported) const {
        fail(kind, " type \"", type, "\" is not supported; supported: ", supported);
    }
};

}  // namespace meshlm::hf
