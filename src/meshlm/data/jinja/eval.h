// Expression evaluation with Python's operators and jinja2's lookups: a missing dict key or
// list index is Undefined (falsy, prints as nothing, fails when used as a value), an attribute
// is a dict key, `and` / `or` return an operand, `x if c` without else is Undefined.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "meshlm/data/jinja/ast.h"

namespace meshlm::jinja {

// Variables, innermost scope last. A for-loop iteration pushes a scope: what `set` assigns in
// it is gone after the iteration (jinja2's rule; namespace() objects carry values out).
class Scopes {
  public:
    explicit Scopes(const Json& context);
    Value get(const std::string& name) const;
    void set(const std::string& name, Value v) { frames_.back()[name] = std::move(v); }
    // The frame's value of `name` where it is defined (for `set ns.attr`), or null.
    Value* find(const std::string& name);
    void push() { frames_.emplace_back(); }
    void pop() { frames_.pop_back(); }

  private:
    std::vector<std::map<std::string, Value>> frames_;
};

Value eval(const Expr& e, Scopes& scopes, const std::string& source);

}  // namespace meshlm::jinja
