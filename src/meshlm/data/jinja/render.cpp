#include "meshlm/data/jinja/render.h"

#include "meshlm/data/jinja/builtins.h"
#include "meshlm/data/jinja/eval.h"
#include "meshlm/data/jinja/lexer.h"

namespace meshlm::jinja {
namespace {

enum class Flow { normal, break_, continue_ };

class Renderer {
  public:
    Renderer(const std::string& source, const Json& context) : source_(source), scopes_(context) {}

    std::string run(const Body& body) {
        exec(body);
        return std::move(out_);
    }

  private:
    const std::string& source_;
    Scopes scopes_;
    std::string out_;

    [[noreturn]] void fail(const Stmt& s, const std::string& what) const {
        throw TemplateError("chat template: " + what + " at " + where(source_, s.pos));
    }
    Value eval_at(const Expr& e) { return eval(e, scopes_, source_); }

    Flow exec(const Body& body) {
        for (const StmtP& s : body) {
            const Flow f = exec_one(*s);
            if (f != Flow::normal) return f;
        }
        return Flow::normal;
    }

    Flow exec_one(const Stmt& s) {
        switch (s.kind) {
            case Stmt::Kind::text:
                out_ += s.text;
                break;
            case Stmt::Kind::output:
                out_ += to_str(eval_at(*s.expr));
                break;
            case Stmt::Kind::if_:
                for (const auto& [cond, body] : s.arms)
                    if (truthy(eval_at(*cond))) return exec(body);
                return exec(s.else_body);
            case Stmt::Kind::for_:
                return exec_for(s);
            case Stmt::Kind::set:
                exec_set(s);
                break;
            case Stmt::Kind::break_:
                return Flow::break_;
            case Stmt::Kind::continue_:
                return Flow::continue_;
            case Stmt::Kind::generation:
                return exec(s.body);
        }
        return Flow::normal;
    }

    void assign(const Stmt& s, const std::vector<std::string>& names, const Value& v) {
        if (names.size() == 1) return scopes_.set(names[0], v);
        std::vector<Value> parts;
        try {
            parts = iterate(v);
        } catch (const TemplateError& e) {
            fail(s, e.what());
        }
        if (parts.size() != names.size())
            fail(s, "cannot unpack " + std::to_string(parts.size()) + " values into " +
                        std::to_string(names.size()) + " names");
        for (std::size_t i = 0; i < names.size(); ++i) scopes_.set(names[i], parts[i]);
    }

    void exec_set(const Stmt& s) {
        Value v = eval_at(*s.expr);
        if (s.attr.empty()) return assign(s, s.targets, v);
        Value* ns = scopes_.find(s.targets[0]);
        if (!ns || ns->kind != Value::Kind::name_space)
            fail(s, "cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
        ns->data[s.attr] = v.data;
    }

    // jinja2's loop: the `if` filter drops items before the loop counts them, and `loop` has
    // index, index0, revindex, revindex0, first, last, length, previtem, nextitem.
    Flow exec_for(const Stmt& s) {
        std::vector<Value> items;
        try {
            items = iterate(eval_at(*s.expr));
        } catch (const TemplateError& e) {
            if (std::string(e.what()).rfind("chat template: ", 0) == 0) throw;
            fail(s, e.what());
        }
        if (s.filter) {
            std::vector<Value> kept;
            for (const Value& v : items) {
                scopes_.push();
                assign(s, s.targets, v);
                const bool keep = truthy(eval_at(*s.filter));
                scopes_.pop();
                if (keep) kept.push_back(v);
            }
            items.swap(kept);
        }
        if (items.empty()) return exec(s.else_body);
        const long long n = static_cast<long long>(items.size());
        for (long long i = 0; i < n; ++i) {
            Json loop = {{"index", i + 1},    {"index0", i},
                         {"revindex", n - i}, {"revindex0", n - i - 1},
                         {"first", i == 0},   {"last", i == n - 1},
                         {"length", n}};
            if (i > 0) loop["previtem"] = items[i - 1].data;
            if (i + 1 < n) loop["nextitem"] = items[i + 1].data;
            scopes_.push();
            scopes_.set("loop", Value(std::move(loop)));
            assign(s, s.targets, items[i]);
            const Flow f = exec(s.body);
            scopes_.pop();
            if (f == Flow::break_) break;
        }
        return Flow::normal;
    }
};

}  // namespace

std::string render(const Body& body, const std::string& source, const Json& context) {
    return Renderer(source, context).run(body);
}

}  // namespace meshlm::jinja
