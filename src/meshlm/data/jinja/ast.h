// The parsed template: expressions and statements of the Jinja subset (parser.h builds them,
// render.h runs them). One node type per kind keeps the tree small; `pos` is the byte offset
// of the construct in the template, for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "meshlm/data/jinja/value.h"

namespace meshlm::jinja {

struct Expr;
using ExprP = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        literal,  // lit
        name,     // name
        list,     // args: items
        dict,     // args: key, value, key, value, ...
        attr,     // args[0].name
        item,     // args[0][args[1]]
        slice,    // args[0][args[1]:args[2]:args[3]] (null: omitted)
        call,     // args[0](args[1..], kwargs)
        filter,   // args[0] | name(args[1..], kwargs)
        test,     // args[0] is [not] name(args[1..])
        unary,    // op args[0]: "-", "+", "not"
        binary,   // args[0] op args[1]: arithmetic, comparison, and, or, in, not in, ~
        cond,     // args[0] if args[1] else args[2] (null: Undefined)
    };
    Kind kind;
    std::size_t pos = 0;
    Json lit;
    std::string name;  // name, attribute, function, filter or test name; operator
    bool negated = false;
    std::vector<ExprP> args;
    std::vector<std::pair<std::string, ExprP>> kwargs;
};

struct Stmt;
using StmtP = std::unique_ptr<Stmt>;
using Body = std::vector<StmtP>;

struct Stmt {
    enum class Kind { text, output, if_, for_, set, break_, continue_, generation };
    Kind kind;
    std::size_t pos = 0;
    std::string text;                          // text
    ExprP expr;                                // output; set: value; for: iterable
    std::vector<std::pair<ExprP, Body>> arms;  // if / elif: condition and body
    Body body, else_body;                      // for / generation body; if / for else
    std::vector<std::string> targets;          // for / set: names (several: unpacked)
    std::string attr;                          // set ns.attr: the attribute
    ExprP filter;                              // for ... if filter
};

}  // namespace meshlm::jinja
