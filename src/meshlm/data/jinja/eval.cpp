#include "meshlm/data/jinja/eval.h"

#include <cmath>

#include "meshlm/data/jinja/builtins.h"
#include "meshlm/data/jinja/lexer.h"
#include "meshlm/data/jinja/parser.h"

namespace meshlm::jinja {

Scopes::Scopes(const Json& context) : frames_(1) {
    for (const char* fn : {"raise_exception", "namespace", "range", "strftime_now", "dict"})
        frames_[0][fn] = Value::function(fn);
    for (auto it = context.begin(); it != context.end(); ++it)
        frames_[0][it.key()] = Value(it.value());
}

Value Scopes::get(const std::string& name) const {
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f)
        if (auto it = f->find(name); it != f->end()) return it->second;
    return Value::undefined(name);
}

Value* Scopes::find(const std::string& name) {
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f)
        if (auto it = f->find(name); it != f->end()) return &it->second;
    return nullptr;
}

namespace {

[[noreturn]] void fail(const std::string& what) {
    throw TemplateError(what);
}

double num(const Value& v) {
    return v.is_bool() ? v.data.get<bool>() : v.data.get<double>();
}
bool numeric(const Value& v) {
    return v.is_number() || v.is_bool();
}
bool integral(const Value& v) {
    return v.is_int() || v.is_bool();
}
long long inum(const Value& v) {
    return v.is_bool() ? v.data.get<bool>() : v.data.get<long long>();
}

// Python's a[i] on lists and strings (negative counts from the end); out of range: Undefined.
Value index_of(const Value& obj, const Value& key, const std::string& label) {
    if (obj.is_dict()) {
        if (key.is_string() && obj.data.contains(key.str())) return Value(obj.data[key.str()]);
        return Value::undefined(key.is_string() ? key.str() : label);
    }
    if ((obj.is_list() || obj.is_string()) && integral(key)) {
        const bool s = obj.is_string();
        const auto at = s ? code_point_starts(obj.str()) : std::vector<std::size_t>{};
        const long long n =
            s ? static_cast<long long>(at.size()) - 1 : static_cast<long long>(obj.data.size());
        long long i = inum(key);
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined(label);
        if (!s) return Value(obj.data[static_cast<std::size_t>(i)]);
        return Value(Json(obj.str().substr(at[i], at[i + 1] - at[i])));
    }
    return Value::undefined(label);
}

// Python's a[start:stop:step] on lists and strings.
Value slice_of(const Value& obj, const Value* parts[3]) {
    const bool s = obj.is_string();
    if (!s && !obj.is_list()) fail("cannot slice a " + type_name(obj));
    const auto at = s ? code_point_starts(obj.str()) : std::vector<std::size_t>{};
    const long long n =
        s ? static_cast<long long>(at.size()) - 1 : static_cast<long long>(obj.data.size());
    const long long step = parts[2] && !parts[2]->is_none() ? inum(*parts[2]) : 1;
    if (step == 0) fail("slice step cannot be zero");
    auto bound = [&](const Value* p, long long def) {
        if (!p || p->is_none()) return def;
        long long i = inum(*p);
        if (i < 0) i += n;
        return step > 0 ? std::clamp(i, 0LL, n) : std::clamp(i, -1LL, n - 1);
    };
    const long long b = bound(parts[0], step > 0 ? 0 : n - 1);
    const long long e = bound(parts[1], step > 0 ? n : -1);
    Json list = Json::array();
    std::string str;
    for (long long i = b; step > 0 ? i < e : i > e; i += step) {
        if (s)
            str += obj.str().substr(at[i], at[i + 1] - at[i]);
        else
            list.push_back(obj.data[static_cast<std::size_t>(i)]);
    }
    return s ? Value(Json(str)) : Value(list);
}

bool contains(const Value& container, const Value& x) {
    if (container.is_string()) {
        if (!x.is_string()) fail("'in <string>' requires a string on the left");
        return container.str().find(x.str()) != std::string::npos;
    }
    if (container.is_dict()) return x.is_string() && container.data.contains(x.str());
    for (const Value& v : iterate(container))
        if (equal(v, x)) return true;
    return false;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
    if (a.is_undefined()) undefined_error(a);
    if (b.is_undefined()) undefined_error(b);
    if (op == "+" && a.is_string() && b.is_string()) return Json(a.str() + b.str());
    if (op == "+" && a.is_list() && b.is_list()) {
        Json out = a.data;
        for (const Json& x : b.data) out.push_back(x);
        return out;
    }
    if (op == "*" && (a.is_string() || b.is_string()) && (integral(a) || integral(b))) {
        const std::string& s = a.is_string() ? a.str() : b.str();
        std::string out;
        for (long long k = integral(a) ? inum(a) : inum(b); k > 0; --k) out += s;
        return Json(out);
    }
    if (!numeric(a) || !numeric(b))
        fail("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" +
             type_name(b) + "'");
    const bool ints = integral(a) && integral(b);
    const double x = num(a), y = num(b);
    if ((op == "/" || op == "//" || op == "%") && y == 0) fail("division by zero");
    if (op == "/") return Json(x / y);
    if (ints) {
        const long long i = inum(a), j = inum(b);
        if (op == "+") return Json(i + j);
        if (op == "-") return Json(i - j);
        if (op == "*") return Json(i * j);
        if (op == "//") return Json(static_cast<long long>(std::floor(static_cast<double>(i) / j)));
        if (op == "%") return Json(((i % j) + j) % j);
        if (op == "**" && j >= 0) return Json(static_cast<long long>(std::llround(std::pow(x, y))));
    }
    if (op == "+") return Json(x + y);
    if (op == "-") return Json(x - y);
    if (op == "*") return Json(x * y);
    if (op == "//") return Json(std::floor(x / y));
    if (op == "%") return Json(x - y * std::floor(x / y));
    return Json(std::pow(x, y));
}

Value binary(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return Json(equal(a, b));
    if (op == "!=") return Json(!equal(a, b));
    if (op == "in") return Json(contains(b, a));
    if (op == "not in") return Json(!contains(b, a));
    if (op == "~") return Json(to_str(a) + to_str(b));
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
        int c;
        if (numeric(a) && numeric(b))
            c = num(a) < num(b) ? -1 : num(a) > num(b) ? 1 : 0;
        else if (a.is_string() && b.is_string())
            c = a.str().compare(b.str());
        else
            fail("'" + op + "' not supported between '" + type_name(a) + "' and '" + type_name(b) +
                 "'");
        return Json(op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0);
    }
    return arithmetic(op, a, b);
}

Value attribute(const Value& obj, const std::string& name) {
    if (obj.is_undefined()) undefined_error(obj);
    if (obj.is_dict() && obj.data.contains(name)) return Value(obj.data[name]);
    return Value::undefined(name);
}

struct Evaluator {
    Scopes& scopes;
    const std::string& source;

    Value operator()(const Expr& e) {
        try {
            return eval_node(e);
        } catch (const RaisedError& err) {
            throw;
        } catch (const TemplateError& err) {
            const std::string m = err.what();
            if (m.rfind("chat template: ", 0) == 0) throw;
            throw TemplateError("chat template: " + m + " at " + where(source, e.pos));
        }
    }

    void collect(const Expr& e, std::size_t from, Args& args, Kwargs& kw) {
        for (std::size_t i = from; i < e.args.size(); ++i) args.push_back((*this)(*e.args[i]));
        for (const auto& [k, v] : e.kwargs) kw.emplace_back(k, (*this)(*v));
    }

    Value eval_node(const Expr& e) {
        switch (e.kind) {
            case Expr::Kind::literal:
                return Value(e.lit);
            case Expr::Kind::name:
                return scopes.get(e.name);
            case Expr::Kind::list: {
                Json out = Json::array();
                for (const auto& x : e.args) out.push_back((*this)(*x).data);
                return out;
            }
            case Expr::Kind::dict: {
                Json out = Json::object();
                for (std::size_t i = 0; i + 1 < e.args.size(); i += 2)
                    out[to_str((*this)(*e.args[i]))] = (*this)(*e.args[i + 1]).data;
                return out;
            }
            case Expr::Kind::attr:
                return attribute((*this)(*e.args[0]), e.name);
            case Expr::Kind::item: {
                const Value obj = (*this)(*e.args[0]);
                if (obj.is_undefined()) undefined_error(obj);
                const Value key = (*this)(*e.args[1]);
                return index_of(obj, key, to_str(key));
            }
            case Expr::Kind::slice: {
                const Value obj = (*this)(*e.args[0]);
                Value vals[3];
                const Value* parts[3] = {nullptr, nullptr, nullptr};
                for (int k = 0; k < 3; ++k)
                    if (e.args[k + 1]) vals[k] = (*this)(*e.args[k + 1]), parts[k] = &vals[k];
                return slice_of(obj, parts);
            }
            case Expr::Kind::call:
                return call(e);
            case Expr::Kind::filter: {
                const Value v = (*this)(*e.args[0]);
                Args args;
                Kwargs kw;
                collect(e, 1, args, kw);
                return apply_filter(e.name, v, args, kw);
            }
            case Expr::Kind::test: {
                const Value v = (*this)(*e.args[0]);
                Args args;
                Kwargs kw;
                collect(e, 1, args, kw);
                return Json(apply_test(e.name, v, args) != e.negated);
            }
            case Expr::Kind::unary:
                return unary(e);
            case Expr::Kind::binary:
                return binary_node(e);
            case Expr::Kind::cond:
                if (truthy((*this)(*e.args[1]))) return (*this)(*e.args[0]);
                return e.args[2] ? (*this)(*e.args[2]) : Value::undefined();
        }
        fail("unknown expression");
    }

    Value call(const Expr& e) {
        const Expr& callee = *e.args[0];
        Args args;
        Kwargs kw;
        if (callee.kind == Expr::Kind::attr) {
            const Value obj = (*this)(*callee.args[0]);
            collect(e, 1, args, kw);
            return call_method(obj, callee.name, args, kw);
        }
        const Value fn = scopes.get(callee.name);
        if (fn.kind != Value::Kind::function) fail("'" + callee.name + "' is not callable");
        collect(e, 1, args, kw);
        return call_function(fn.data.get<std::string>(), args, kw);
    }

    Value unary(const Expr& e) {
        const Value v = (*this)(*e.args[0]);
        if (e.name == "not") return Json(!truthy(v));
        if (!numeric(v)) fail("bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
        if (e.name == "+") return v;
        return integral(v) ? Json(-inum(v)) : Json(-num(v));
    }

    Value binary_node(const Expr& e) {
        Value a = (*this)(*e.args[0]);
        if (e.name == "and") return truthy(a) ? (*this)(*e.args[1]) : a;
        if (e.name == "or") return truthy(a) ? a : (*this)(*e.args[1]);
        return binary(e.name, a, (*this)(*e.args[1]));
    }
};

}  // namespace

Value eval(const Expr& e, Scopes& scopes, const std::string& source) {
    return Evaluator{scopes, source}(e);
}

}  // namespace meshlm::jinja
