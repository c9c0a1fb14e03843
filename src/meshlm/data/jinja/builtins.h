// The filters, tests, string / dict methods and global functions of the subset, each behaving
// as its Python / jinja2 original does for the values chat templates pass. They throw
// TemplateError with a bare message; the renderer adds where in the template it happened.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "meshlm/data/jinja/value.h"

namespace meshlm::jinja {

using Args = std::vector<Value>;
using Kwargs = std::vector<std::pair<std::string, Value>>;

// raise_exception(message): the template refuses its input (transformers raises TemplateError).
class RaisedError : public TemplateError {
  public:
    using TemplateError::TemplateError;
};

Value apply_filter(const std::string& name, const Value& v, const Args& args, const Kwargs& kw);
bool apply_test(const std::string& name, const Value& v, const Args& args);
Value call_method(const Value& obj, const std::string& name, const Args& args, const Kwargs& kw);
Value call_function(const std::string& name, const Args& args, const Kwargs& kw);

// Items of a list, keys of a dict, code points of a string; Undefined: none. Throws otherwise.
std::vector<Value> iterate(const Value& v);
// "'x' is undefined" -- what jinja2 raises when Undefined is used as a value.
[[noreturn]] void undefined_error(const Value& v);

}  // namespace meshlm::jinja
