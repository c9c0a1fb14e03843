#include "meshlm/data/jinja/parser.h"

#include <set>

namespace meshlm::jinja {
namespace {

// A recursive-descent parser with jinja2's precedence (lowest first): `x if c else y`, or,
// and, not, comparisons and `in`, + -, ~, * / // %, **, unary - +, then postfix (.attr, [i],
// call) and filters / tests, which bind tighter than any operator: `'a' + s | trim` trims s.
class Parser {
  public:
    explicit Parser(const Lexed& l) : src_(l.source), t_(l.tokens) {}

    Body parse_all() {
        std::string end;
        Body b = parse_body({}, end);
        return b;
    }

  private:
    const std::string& src_;
    const std::vector<Token>& t_;
    std::size_t i_ = 0;

    [[noreturn]] void fail(std::size_t pos, const std::string& what) const {
        throw TemplateError("chat template: " + what + " at " + where(src_, pos));
    }
    const Token& cur() const {
        static const Token kEnd{Tok::text, "", 0};
        return i_ < t_.size() ? t_[i_] : kEnd;
    }
    std::size_t pos() const { return i_ < t_.size() ? t_[i_].pos : src_.size(); }
    bool at_op(const char* op) const { return cur().type == Tok::op && cur().s == op; }
    bool at_name(const char* n) const { return cur().type == Tok::name && cur().s == n; }
    void expect_op(const char* op) {
        if (!at_op(op)) fail(pos(), std::string("expected '") + op + "'");
        ++i_;
    }
    std::string expect_name() {
        if (cur().type != Tok::name) fail(pos(), "expected a name");
        return t_[i_++].s;
    }
    void expect_end() {
        if (cur().type != Tok::end) fail(pos(), "expected the end of the tag");
        ++i_;
    }

    static ExprP node(Expr::Kind k, std::size_t pos, std::string name = "") {
        auto e = std::make_unique<Expr>();
        e->kind = k;
        e->pos = pos;
        e->name = std::move(name);
        return e;
    }
    static ExprP binary(std::string op, ExprP a, ExprP b, std::size_t pos) {
        auto e = node(Expr::Kind::binary, pos, std::move(op));
        e->args.push_back(std::move(a));
        e->args.push_back(std::move(b));
        return e;
    }

    // ---- statements ----
    Body parse_body(const std::set<std::string>& ends, std::string& end) {
        Body body;
        while (i_ < t_.size()) {
            const Token& t = t_[i_];
            if (t.type == Tok::text) {
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::text;
                s->pos = t.pos;
                s->text = t.s;
                body.push_back(std::move(s));
                ++i_;
            } else if (t.type == Tok::expr_begin) {
                ++i_;
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::output;
                s->pos = t.pos;
                s->expr = parse_expression();
                expect_end();
                body.push_back(std::move(s));
            } else {
                const std::size_t at = t.pos;
                ++i_;
                const std::string kw = expect_name();
                if (ends.count(kw)) {
                    end = kw;
                    return body;
                }
                body.push_back(parse_statement(kw, at));
            }
        }
        if (!ends.empty()) fail(src_.size(), "missing '{% " + *ends.rbegin() + " %}'");
        return body;
    }

    StmtP parse_statement(const std::string& kw, std::size_t at) {
        auto s = std::make_unique<Stmt>();
        s->pos = at;
        std::string end;
        if (kw == "if") {
            s->kind = Stmt::Kind::if_;
            ExprP cond = parse_expression();
            expect_end();
            while (true) {
                Body b = parse_body({"elif", "else", "endif"}, end);
                s->arms.emplace_back(std::move(cond), std::move(b));
                if (end != "elif") break;
                cond = parse_expression();
                expect_end();
            }
            if (end == "else") {
                expect_end();
                s->else_body = parse_body({"endif"}, end);
            }
        } else if (kw == "for") {
            s->kind = Stmt::Kind::for_;
            s->targets = parse_targets();
            if (!at_name("in")) fail(pos(), "expected 'in'");
            ++i_;
            s->expr = parse_or();
            if (at_name("if")) {
                ++i_;
                s->filter = parse_or();
            }
            if (at_name("recursive")) fail(pos(), "unsupported construct 'recursive' loop");
            expect_end();
            s->body = parse_body({"else", "endfor"}, end);
            if (end == "else") {
                expect_end();
                s->else_body = parse_body({"endfor"}, end);
            }
        } else if (kw == "set") {
            s->kind = Stmt::Kind::set;
            s->targets = parse_targets();
            if (s->targets.size() == 1 && at_op(".")) {
                ++i_;
                s->attr = expect_name();
            }
            if (!at_op("=")) fail(at, "unsupported construct 'set' block (set without '=')");
            ++i_;
            s->expr = parse_expression();
        } else if (kw == "break" || kw == "continue") {
            s->kind = kw == "break" ? Stmt::Kind::break_ : Stmt::Kind::continue_;
        } else if (kw == "generation") {  // transformers' AssistantTracker: renders its body
            s->kind = Stmt::Kind::generation;
            expect_end();
            s->body = parse_body({"endgeneration"}, end);
        } else {
            fail(at, "unsupported statement '" + kw + "'");
        }
        expect_end();
        return s;
    }

    std::vector<std::string> parse_targets() {
        std::vector<std::string> names;
        const bool paren = at_op("(");
        if (paren) ++i_;
        names.push_back(expect_name());
        while (at_op(",")) {
            ++i_;
            names.push_back(expect_name());
        }
        if (paren) expect_op(")");
        return names;
    }

    // ---- expressions ----
    ExprP parse_expression() {
        ExprP e = parse_or();
        while (at_name("if")) {
            const std::size_t at = pos();
            ++i_;
            auto c = node(Expr::Kind::cond, at);
            c->args.push_back(std::move(e));
            c->args.push_back(parse_or());
            if (at_name("else")) {
                ++i_;
                c->args.push_back(parse_expression());
            } else {
                c->args.push_back(nullptr);
            }
            e = std::move(c);
        }
        return e;
    }
    ExprP parse_or() {
        ExprP e = parse_and();
        while (at_name("or")) {
            const std::size_t at = pos();
            ++i_;
            e = binary("or", std::move(e), parse_and(), at);
        }
        return e;
    }
    ExprP parse_and() {
        ExprP e = parse_not();
        while (at_name("and")) {
            const std::size_t at = pos();
            ++i_;
            e = binary("and", std::move(e), parse_not(), at);
        }
        return e;
    }
    ExprP parse_not() {
        if (at_name("not")) {
            auto e = node(Expr::Kind::unary, pos(), "not");
            ++i_;
            e->args.push_back(parse_not());
            return e;
        }
        return parse_compare();
    }
    ExprP parse_compare() {
        static const std::set<std::string> kCmp = {"==", "!=", "<", ">", "<=", ">="};
        ExprP e = parse_math1();
        while (true) {
            const std::size_t at = pos();
            if (cur().type == Tok::op && kCmp.count(cur().s)) {
                const std::string op = t_[i_++].s;
                e = binary(op, std::move(e), parse_math1(), at);
            } else if (at_name("in")) {
                ++i_;
                e = binary("in", std::move(e), parse_math1(), at);
            } else if (at_name("not") && i_ + 1 < t_.size() && t_[i_ + 1].type == Tok::name &&
                       t_[i_ + 1].s == "in") {
                i_ += 2;
                e = binary("not in", std::move(e), parse_math1(), at);
            } else {
                return e;
            }
        }
    }
    // One left-associative level of binary operators.
    template <class Next>
    ExprP parse_level(std::initializer_list<const char*> ops, Next next) {
        ExprP e = (this->*next)();
        while (true) {
            const char* found = nullptr;
            for (const char* op : ops)
                if (at_op(op)) found = op;
            if (!found) return e;
            const std::size_t at = pos();
            ++i_;
            e = binary(found, std::move(e), (this->*next)(), at);
        }
    }
    ExprP parse_math1() { return parse_level({"+", "-"}, &Parser::parse_concat); }
    ExprP parse_concat() { return parse_level({"~"}, &Parser::parse_math2); }
    ExprP parse_math2() { return parse_level({"*", "/", "//", "%"}, &Parser::parse_pow); }
    ExprP parse_pow() { return parse_level({"**"}, &Parser::parse_unary_filtered); }
    ExprP parse_unary_filtered() { return parse_unary(true); }

    ExprP parse_unary(bool with_filter) {
        ExprP e;
        if (at_op("-") || at_op("+")) {
            e = node(Expr::Kind::unary, pos(), t_[i_].s);
            ++i_;
            e->args.push_back(parse_unary(false));
        } else {
            e = parse_postfix(parse_primary());
        }
        return with_filter ? parse_filters(std::move(e)) : std::move(e);
    }

    ExprP parse_primary() {
        const Token& t = cur();
        const std::size_t at = pos();
        if (t.type == Tok::name) {
            ++i_;
            auto e = node(Expr::Kind::literal, at);
            if (t.s == "true" || t.s == "True")
                e->lit = true;
            else if (t.s == "false" || t.s == "False")
                e->lit = false;
            else if (t.s == "none" || t.s == "None")
                e->lit = nullptr;
            else
                e = node(Expr::Kind::name, at, t.s);
            return e;
        }
        if (t.type == Tok::string) {
            auto e = node(Expr::Kind::literal, at);
            std::string s;
            while (cur().type == Tok::string) s += t_[i_++].s;  // adjacent literals join
            e->lit = s;
            return e;
        }
        if (t.type == Tok::integer || t.type == Tok::floating) {
            ++i_;
            auto e = node(Expr::Kind::literal, at);
            if (t.type == Tok::integer)
                e->lit = std::stoll(t.s);
            else
                e->lit = std::stod(t.s);
            return e;
        }
        if (at_op("(")) {  // a parenthesized expression, or a tuple (a list here)
            ++i_;
            if (at_op(")")) {
                ++i_;
                return node(Expr::Kind::list, at);
            }
            ExprP e = parse_expression();
            if (!at_op(",")) {
                expect_op(")");
                return e;
            }
            auto l = node(Expr::Kind::list, at);
            l->args.push_back(std::move(e));
            while (at_op(",")) {
                ++i_;
                if (at_op(")")) break;
                l->args.push_back(parse_expression());
            }
            expect_op(")");
            return l;
        }
        if (at_op("[") || at_op("{")) {
            const bool dict = at_op("{");
            ++i_;
            auto e = node(dict ? Expr::Kind::dict : Expr::Kind::list, at);
            const char* close = dict ? "}" : "]";
            while (!at_op(close)) {
                e->args.push_back(parse_expression());
                if (dict) {
                    expect_op(":");
                    e->args.push_back(parse_expression());
                }
                if (!at_op(",")) break;
                ++i_;
            }
            expect_op(close);
            return e;
        }
        fail(at, t.type == Tok::end ? "expected an expression" : "unexpected '" + t.s + "'");
    }

    ExprP parse_postfix(ExprP e) {
        while (true) {
            const std::size_t at = pos();
            if (at_op(".")) {
                ++i_;
                if (cur().type == Tok::integer) {  // x.0 is x[0]
                    auto it = node(Expr::Kind::item, at);
                    it->args.push_back(std::move(e));
                    auto lit = node(Expr::Kind::literal, at);
                    lit->lit = std::stoll(t_[i_++].s);
                    it->args.push_back(std::move(lit));
                    e = std::move(it);
                    continue;
                }
                std::string attr = expect_name();
                auto a = node(Expr::Kind::attr, at, std::move(attr));
                a->args.push_back(std::move(e));
                e = std::move(a);
            } else if (at_op("[")) {
                ++i_;
                e = parse_subscript(std::move(e), at);
            } else if (at_op("(")) {
                e = parse_call(std::move(e), at);
            } else {
                return e;
            }
        }
    }

    ExprP parse_subscript(ExprP obj, std::size_t at) {
        ExprP parts[3];
        int colons = 0;
        for (int k = 0; k < 3; ++k) {
            if (!at_op(":") && !at_op("]")) parts[k] = parse_expression();
            if (k < 2 && at_op(":")) {
                ++i_;
                ++colons;
            } else {
                break;
            }
        }
        expect_op("]");
        auto e = node(colons ? Expr::Kind::slice : Expr::Kind::item, at);
        e->args.push_back(std::move(obj));
        if (!colons) {
            if (!parts[0]) fail(at, "expected a subscript");
            e->args.push_back(std::move(parts[0]));
        } else {
            for (auto& p : parts) e->args.push_back(std::move(p));
        }
        return e;
    }

    void parse_args(Expr& e) {
        expect_op("(");
        while (!at_op(")")) {
            if (at_op("*") || at_op("**")) fail(pos(), "unsupported construct '*args'");
            if (cur().type == Tok::name && i_ + 1 < t_.size() && t_[i_ + 1].type == Tok::op &&
                t_[i_ + 1].s == "=") {
                std::string k = t_[i_].s;
                i_ += 2;
                e.kwargs.emplace_back(std::move(k), parse_expression());
            } else {
                e.args.push_back(parse_expression());
            }
            if (!at_op(",")) break;
            ++i_;
        }
        expect_op(")");
    }

    ExprP parse_call(ExprP callee, std::size_t at) {
        if (callee->kind == Expr::Kind::name && !known_function(callee->name))
            fail(at, "unsupported function '" + callee->name + "'");
        if (callee->kind == Expr::Kind::attr && !known_method(callee->name))
            fail(at, "unsupported method '" + callee->name + "'");
        if (callee->kind != Expr::Kind::name && callee->kind != Expr::Kind::attr)
            fail(at, "unsupported call of an expression");
        auto e = node(Expr::Kind::call, at);
        e->args.push_back(std::move(callee));
        parse_args(*e);
        return e;
    }

    ExprP parse_filters(ExprP e) {
        while (true) {
            const std::size_t at = pos();
            if (at_op("|")) {
                ++i_;
                const std::size_t name_at = pos();
                auto f = node(Expr::Kind::filter, name_at, expect_name());
                if (!known_filter(f->name)) fail(f->pos, "unsupported filter '" + f->name + "'");
                f->args.push_back(std::move(e));
                if (at_op("(")) parse_args(*f);
                e = std::move(f);
            } else if (at_name("is")) {
                ++i_;
                bool neg = false;
                if (at_name("not")) {
                    ++i_;
                    neg = true;
                }
                const std::size_t name_at = pos();
                auto t = node(Expr::Kind::test, name_at, expect_name());
                if (!known_test(t->name)) fail(t->pos, "unsupported test '" + t->name + "'");
                t->negated = neg;
                t->args.push_back(std::move(e));
                const Tok k = cur().type;
                if (at_op("(")) {
                    parse_args(*t);
                } else if ((k == Tok::name && !at_name("else") && !at_name("or") &&
                            !at_name("and")) ||
                           k == Tok::string || k == Tok::integer || k == Tok::floating ||
                           at_op("[") || at_op("{")) {
                    t->args.push_back(parse_postfix(parse_primary()));
                }
                e = std::move(t);
            } else if (at_op("(")) {
                e = parse_call(std::move(e), at);
            } else {
                return e;
            }
        }
    }
};

}  // namespace

Body parse(const Lexed& lexed) {
    return Parser(lexed).parse_all();
}

}  // namespace meshlm::jinja
