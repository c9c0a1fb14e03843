#include "meshlm/infer/task_eval.h"

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "meshlm/core/error.h"

namespace meshlm {
namespace {
using json = nlohmann::json;

std::string stem(const std::string& path) {
    std::string s = path.substr(path.find_last_of('/') + 1);
    const std::size_t dot = s.find('.');
    return dot == std::string::npos || dot == 0 ? s : s.substr(0, dot);
}

// Python's str.isspace() for the ASCII range (what str.rstrip() strips).
bool py_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

// Characters (code points) of UTF-8 text: Python's len() of the decoded string.
std::size_t py_len(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

const json* field(const json& j, const char* a, const char* b) {
    if (auto it = j.find(a); it != j.end()) return &*it;
    if (auto it = j.find(b); it != j.end()) return &*it;
    return nullptr;
}
}  // namespace

Task load_task(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) MESHLM_INVALID("cannot read the task file ", path);
    Task task;
    task.name = stem(path);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        json j;
        try {
            j = json::parse(line);
        } catch (const json::exception& e) {
            MESHLM_INVALID(path, ":", lineno, ": not JSON: ", e.what());
        }
        if (!j.is_object()) MESHLM_INVALID(path, ":", lineno, ": an example must be an object");
        const std::string kind = j.contains("choices") ? "multiple_choice" : "last_word";
        if (task.kind.empty()) task.kind = kind;
        if (kind != task.kind)
            MESHLM_INVALID(path, ":", lineno, ": a ", kind, " example in a ", task.kind,
                           " task (every line must have \"choices\", or none)");
        TaskExample ex;
        if (kind == "last_word") {
            auto it = j.find("text");
            if (it == j.end() || !it->is_string())
                MESHLM_INVALID(path, ":", lineno,
                               ": a last-word example needs \"text\" (a string), or \"choices\" "
                               "for multiple choice");
            const std::string text = it->get<std::string>();
            const std::size_t sp = text.rfind(' ');
            if (sp == std::string::npos || sp + 1 == text.size())
                MESHLM_INVALID(path, ":", lineno, ": \"text\" needs a last word after a space");
            ex.context = text.substr(0, sp);
            ex.choices = {text.substr(sp + 1)};
        } else {
            const json* ctx = field(j, "context", "query");
            const json* gold = field(j, "gold", "label");
            const json& ch = j["choices"];
            if (!ctx || !ctx->is_string())
                MESHLM_INVALID(path, ":", lineno, ": needs \"context\" (a string)");
            if (!ch.is_array() || ch.size() < 2)
                MESHLM_INVALID(path, ":", lineno, ": \"choices\" must list at least two strings");
            for (const json& c : ch) {
                if (!c.is_string() || c.get<std::string>().empty())
                    MESHLM_INVALID(path, ":", lineno, ": every choice must be a non-empty string");
                ex.choices.push_back(c.get<std::string>());
            }
            if (!gold || !gold->is_number_integer() || gold->get<long>() < 0 ||
                gold->get<long>() >= static_cast<long>(ex.choices.size()))
                MESHLM_INVALID(path, ":", lineno, ": \"gold\" must be the index of a choice (0..",
                               ex.choices.size() - 1, ")");
            ex.context = ctx->get<std::string>();
            ex.gold = gold->get<int>();
        }
        task.examples.push_back(std::move(ex));
    }
    if (task.examples.empty()) MESHLM_INVALID("the task file ", path, " has no examples");
    return task;
}

LoglikelihoodRequest make_request(const Tokenizer& tok, const std::string& context_in,
                                  const std::string& continuation_in, int max_length) {
    std::string context = context_in, continuation = continuation_in;
    std::vector<std::int32_t> ctx, cont;
    if (context.empty()) {
        ctx = {tok.eot_id()};
        cont = tok.encode(continuation);
    } else {
        std::size_t end = context.size();
        while (end > 0 && py_space(context[end - 1])) --end;
        continuation = context.substr(end) + continuation;
        context.resize(end);
        const std::vector<std::int32_t> whole = tok.encode(context + continuation);
        ctx = tok.encode(context);
        cont.assign(whole.begin() + std::min(ctx.size(), whole.size()), whole.end());
    }
    MESHLM_CHECK(!cont.empty(), "the continuation '", continuation_in, "' has no tokens");
    LoglikelihoodRequest r;
    r.tokens = ctx;
    r.tokens.insert(r.tokens.end(), cont.begin(), cont.end());
    const long over = static_cast<long>(r.tokens.size()) - max_length;
    r.ctxlen = static_cast<int>(ctx.size()) - static_cast<int>(std::max(0L, over));
    if (over > 0) r.tokens.erase(r.tokens.begin(), r.tokens.begin() + over);
    MESHLM_CHECK(r.ctxlen >= 1, "a continuation of ", cont.size(),
                 " tokens leaves no context within ", max_length, " tokens");
    return r;
}

std::vector<Loglikelihood> score_requests(Engine& engine,
                                          const std::vector<LoglikelihoodRequest>& requests,
                                          const std::function<void(int, int)>& progress) {
    const int total = static_cast<int>(requests.size());
    std::vector<std::shared_ptr<Job>> jobs;
    std::vector<Loglikelihood> out(total);
    // Queue as many as the engine takes, collect the finished in order, queue more.
    int next = 0, done = 0;
    auto finished = [&](int i) {
        const ChoiceResult& c = jobs[i]->choices[0];
        const LoglikelihoodRequest& r = requests[i];
        Loglikelihood ll;
        ll.greedy = true;
        for (std::size_t p = r.ctxlen; p < r.tokens.size(); ++p) {
            const TokenLogprob& t = c.prompt[p - 1];
            ll.logprob += t.logprob;
            if (t.top.empty() || t.logprob != t.top[0].second) ll.greedy = false;
        }
        out[i] = ll;
    };
    while (done < total) {
        while (next < total) {
            auto job = std::make_shared<Job>(1);
            SeqSpec s;
            s.prompt = requests[next].tokens;
            s.max_tokens = 0;
            s.logprobs = 1;
            s.prompt_logprobs = true;
            s.sampling.temperature = 0;
            if (engine.submit(job, {s}) != SubmitStatus::ok) break;
            jobs.push_back(job);
            ++next;
        }
        MESHLM_CHECK(done < next, "the engine took no request");
        Job& j = *jobs[done];
        {
            std::unique_lock<std::mutex> lock(j.mu);
            j.cv.wait(lock, [&] { return j.done(); });
        }
        finished(done);
        jobs[done].reset();
        ++done;
        if (progress) progress(done, total);
    }
    return out;
}

TaskResult evaluate_task(Engine& engine, const Tokenizer& tok, const Task& task, int max_length,
                         const std::function<void(int, int)>& progress) {
    std::vector<LoglikelihoodRequest> reqs;
    for (const TaskExample& ex : task.examples)
        for (const std::string& c : ex.choices)
            reqs.push_back(make_request(tok, ex.context, " " + c, max_length));
    const std::vector<Loglikelihood> lls = score_requests(engine, reqs, progress);
    TaskResult r;
    r.name = task.name;
    r.kind = task.kind;
    r.n = static_cast<int>(task.examples.size());
    std::size_t k = 0;
    double ll_sum = 0, hits = 0, hits_norm = 0;
    for (const TaskExample& ex : task.examples) {
        std::vector<double> v;
        int pred = 0, pred_norm = 0;
        double best = -INFINITY, best_norm = -INFINITY;
        for (std::size_t c = 0; c < ex.choices.size(); ++c, ++k) {
            v.push_back(lls[k].logprob);
            // numpy's argmax: the first of equal maxima.
            if (lls[k].logprob > best) best = lls[k].logprob, pred = static_cast<int>(c);
            const double norm = lls[k].logprob / static_cast<double>(py_len(ex.choices[c]));
            if (norm > best_norm) best_norm = norm, pred_norm = static_cast<int>(c);
        }
        if (task.kind == "last_word") {
            pred = lls[k - 1].greedy ? 1 : 0;
            pred_norm = pred;
            hits += pred;
            ll_sum += v[0];
        } else {
            hits += pred == ex.gold;
            hits_norm += pred_norm == ex.gold;
        }
        r.pred.push_back(pred);
        r.pred_norm.push_back(pred_norm);
        r.lls.push_back(std::move(v));
    }
    r.acc = hits / r.n;
    if (task.kind == "last_word")
        r.perplexity = std::exp(-ll_sum / r.n);
    else
        r.acc_norm = hits_norm / r.n;
    return r;
}

}  // namespace meshlm
