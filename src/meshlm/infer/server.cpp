#include "meshlm/infer/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "meshlm/core/error.h"
#include "meshlm/infer/chat_response.h"
#include "meshlm/infer/http_front.h"
#include "meshlm/infer/playground.h"
#include "meshlm/infer/request_fields.h"

namespace meshlm {
namespace {
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json error_body(const ApiError& e) {
    json err = {{"message", e.message}, {"type", e.type}};
    err["param"] = e.param.empty() ? json(nullptr) : json(e.param);
    err["code"] = e.code.empty() ? json(nullptr) : json(e.code);
    return {{"error", err}};
}

[[noreturn]] void bad(const std::string& param, const std::string& message, int status = 400) {
    throw ApiError{status, message, param};
}

// Code points in UTF-8 bytes (continuation bytes are not counted).
std::size_t code_points(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

// One completion request, validated.
struct CompletionRequest {
    std::vector<std::vector<std::int32_t>> prompts;
    std::vector<std::string> prompt_texts;  // for echo
    int n = 1, max_tokens = 16, logprobs = -1;
    bool echo = false, stream = false, include_usage = false;
    bool chat = false;  // /v1/chat/completions: chat.completion objects, deltas when streaming
    SeqSpec base;
};

bool is_int(const json& v) {
    return v.is_number_integer() || v.is_number_unsigned();
}

double number(const json& body, const char* key, double def, double lo, double hi,
              bool lo_open = false) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return def;
    if (!it->is_number()) bad(key, std::string("'") + key + "' must be a number");
    const double v = it->get<double>();
    if (v < lo || (lo_open && v == lo) || v > hi)
        bad(key, std::string("'") + key + "' must be in " + (lo_open ? "(" : "[") +
                     std::to_string(lo).substr(0, std::to_string(lo).find('.') + 2) + ", " +
                     std::to_string(hi).substr(0, std::to_string(hi).find('.') + 2) + "], got " +
                     it->dump());
    return v;
}

long long integer(const json& body, const char* key, long long def, long long lo, long long hi) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return def;
    if (!is_int(*it)) bad(key, std::string("'") + key + "' must be an integer");
    if (it->is_number_unsigned() &&
        it->get<unsigned long long>() > static_cast<unsigned long long>(hi))
        bad(key, std::string("'") + key + "' must be at most " + std::to_string(hi));
    const long long v = it->get<long long>();
    if (v < lo || v > hi)
        bad(key, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got " + std::to_string(v));
    return v;
}

bool boolean(const json& body, const char* key, bool def) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return def;
    if (!it->is_boolean()) bad(key, std::string("'") + key + "' must be true or false");
    return it->get<bool>();
}

// The connection limits: by default as many requests at once as the engine can hold sequences
// (each waits for its answer on a worker), plus some for the side endpoints.
HttpLimits http_limits(const ServerOptions& o, const EngineOptions& eo) {
    HttpLimits l;
    l.max_workers = o.threads > 0 ? o.threads : eo.max_running + eo.max_waiting + 16;
    l.min_workers = std::min(2, l.max_workers);
    l.request_timeout_s = o.request_timeout_s;
    l.idle_timeout_s = o.idle_timeout_s;
    l.max_connections = o.max_connections;
    return l;
}

}  // namespace

struct Server::Impl {
    Engine& engine;
    const Tokenizer& tok;
    ServerOptions opt;
    Metrics& metrics;
    HttpFront http;
    std::atomic<bool>* draining;
    std::atomic<int> inflight{0};  // completions submitted whose response is not written yet
    std::mt19937_64 seed_rng{std::random_device{}()};
    std::mutex seed_mu;
    long created = static_cast<long>(std::time(nullptr));

    Impl(Engine& e, const Tokenizer& t, ServerOptions o, Metrics& m, std::atomic<bool>* d)
        : engine(e),
          tok(t),
          opt(std::move(o)),
          metrics(m),
          http(http_limits(opt, e.options())),
          draining(d) {
        if (!opt.chat.tmpl) opt.chat = load_chat_setup({}, tok);  // ChatML, stopping at its end
    }

    std::string token_text(std::int32_t id) const { return logprob_token(tok, id); }

    // The paths routes() serves. A request to any other path -- a 404, or a 413 / 400 answered
    // before routing -- counts as "unmatched": a scan must not grow the series without bound.
    std::set<std::string> served;

    void get(const char* path, httplib::Server::Handler h) {
        served.insert(path);
        http.Get(path, std::move(h));
    }
    void post(const char* path, httplib::Server::Handler h) {
        served.insert(path);
        http.Post(path, std::move(h));
    }

    void count(const httplib::Request& req, int status) {
        const std::string path = served.count(req.path) ? req.path : "unmatched";
        metrics.add("meshlm_requests", 1,
                    "path=\"" + path + "\",status=\"" + std::to_string(status) + "\"");
    }

    void send_error(const httplib::Request& req, httplib::Response& res, const ApiError& e) {
        res.status = e.status;
        res.set_content(dump(error_body(e)), "application/json");
        count(req, e.status);
    }

    void send_json(const httplib::Request& req, httplib::Response& res, const json& j) {
        res.status = 200;
        res.set_content(dump(j), "application/json");
        count(req, 200);
    }

    bool authorized(const httplib::Request& req) const {
        if (opt.api_key.empty()) return true;
        const std::string want = "Bearer " + opt.api_key;
        const std::string got = req.get_header_value("Authorization");
        if (got.size() != want.size()) return false;
        unsigned char diff = 0;
        for (std::size_t i = 0; i < got.size(); ++i) diff |= got[i] ^ want[i];
        return diff == 0;
    }

    // The body as JSON; refused past opt.max_json_depth levels as the parser reaches them, so
    // a body of brackets costs no tree (and the chat template's parser never sees one).
    json parse_body(const httplib::Request& req) const {
        json body;
        const int max_depth = opt.max_json_depth;
        auto depth_guard = [max_depth](int depth, json::parse_event_t ev, json&) {
            if ((ev == json::parse_event_t::object_start ||
                 ev == json::parse_event_t::array_start) &&
                depth >= max_depth)
                bad("", "the request body nests arrays and objects deeper than " +
                            std::to_string(max_depth) + " levels");
            return true;
        };
        try {
            body = json::parse(req.body, depth_guard);
        } catch (const json::exception& e) {
            bad("", std::string("the request body is not valid JSON: ") + e.what());
        }
        if (!body.is_object()) bad("", "the request body must be a JSON object");
        return body;
    }

    std::vector<std::int32_t> ids_of(const json& list, const char* param) const {
        std::vector<std::int32_t> ids;
        const int V = engine.config().vocab_size;
        for (const json& v : list) {
            if (!is_int(v)) bad(param, std::string("'") + param + "' token ids must be integers");
            const long long id = v.get<long long>();
            if (id < 0 || id >= V)
                bad(param, "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                               std::to_string(V) + ")");
            ids.push_back(static_cast<std::int32_t>(id));
        }
        return ids;
    }

    CompletionRequest parse_completion(const json& body) {
        CompletionRequest r;
        if (body.contains("model") && !body["model"].is_null() && !body["model"].is_string())
            bad("model", "'model' must be a string");
        // prompt: a string, a list of strings, a list of token ids, or a list of those.
        auto it = body.find("prompt");
        if (it == body.end() || it->is_null()) bad("prompt", "'prompt' is required");
        const json& p = *it;
        // A text prompt is a document as the model sees one (the tokenizer's BOS, where it adds
        // one), as transformers and vLLM encode it; chat prompts carry BOS in their template.
        auto add_text = [&](const std::string& s) {
            std::vector<std::int32_t> ids = tok.encode_for_model(s);
            if (ids.empty()) ids = {tok.eot_id()};  // an empty prompt starts a new document
            r.prompts.push_back(std::move(ids));
            r.prompt_texts.push_back(s);
        };
        auto add_ids = [&](const json& list) {
            if (list.empty()) bad("prompt", "a token-id prompt must not be empty");
            r.prompts.push_back(ids_of(list, "prompt"));
            r.prompt_texts.push_back(tok.decode(r.prompts.back()));
        };
        if (p.is_string()) {
            add_text(p.get<std::string>());
        } else if (p.is_array()) {
            if (p.empty()) bad("prompt", "'prompt' must not be an empty list");
            if (p[0].is_string()) {
                for (const json& s : p) {
                    if (!s.is_string()) bad("prompt", "'prompt' mixes strings and other values");
                    add_text(s.get<std::string>());
                }
            } else if (is_int(p[0])) {
                add_ids(p);
            } else if (p[0].is_array()) {
                for (const json& l : p) {
                    if (!l.is_array()) bad("prompt", "'prompt' mixes token lists and other values");
                    add_ids(l);
                }
            } else {
                bad("prompt", "'prompt' must be a string, a list of strings or token ids");
            }
        } else {
            bad("prompt", "'prompt' must be a string, a list of strings or token ids");
        }
        parse_options(body, r);
        return r;
    }

    // The chat request: the prompt is the chat template over `messages` (the body parsed again
    // with its keys in order: a template's tojson writes them as the client sent them).
    CompletionRequest parse_chat(const httplib::Request& req, const json& body) {
        CompletionRequest r;
        r.chat = true;
        if (body.contains("model") && !body["model"].is_null() && !body["model"].is_string())
            bad("model", "'model' must be a string");
        if (!body.contains("messages")) bad("messages", "'messages' is required");
        for (const char* key : {"echo", "suffix", "best_of", "prompt"})
            if (body.contains(key) && !body[key].is_null())
                bad(key, std::string("'") + key + "' is not a chat completion parameter");
        const ChatSetup& chat = opt.chat;
        const std::string prompt =
            render_chat_prompt(jinja::Json::parse(req.body)["messages"], *chat.tmpl);
        std::vector<std::int32_t> ids = tok.encode(prompt);
        if (ids.empty()) ids = {tok.eot_id()};
        r.prompts.push_back(std::move(ids));
        r.prompt_texts.push_back(prompt);
        parse_options(body, r);
        r.base.stop_ids = chat.stop_ids;
        for (const std::string& s : chat.stop_strings) r.base.stop.push_back(s);
        return r;
    }

    // What completions and chat completions share: n, max_tokens, sampling, stop, logprobs.
    void parse_options(const json& body, CompletionRequest& r) {
        const int ctx = engine.context();
        r.n = static_cast<int>(integer(body, "n", 1, 1, opt.max_n));
        if (body.contains("best_of") && !body["best_of"].is_null() &&
            integer(body, "best_of", r.n, 1, opt.max_n) != r.n)
            bad("best_of", "'best_of' other than n is not supported");
        if (static_cast<long>(r.prompts.size()) * r.n > opt.max_choices)
            bad("n", std::to_string(r.prompts.size()) +
                         " prompts x n = " + std::to_string(r.prompts.size() * r.n) +
                         " completions exceed " + std::to_string(opt.max_choices) + " per request");
        if (r.chat) {
            // OpenAI's chat default: as many tokens as the context has room for.
            const int room = ctx - static_cast<int>(r.prompts[0].size());
            const char* key =
                body.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
            r.max_tokens = static_cast<int>(integer(body, key, std::max(room, 1), 1, ctx));
            const bool lp = boolean(body, "logprobs", false);
            const long long top = integer(body, "top_logprobs", 0, 0, opt.max_logprobs);
            if (top > 0 && !lp) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
            r.logprobs = lp ? static_cast<int>(top) : -1;
        } else {
            r.max_tokens = static_cast<int>(integer(body, "max_tokens", 16, 0, ctx));
            r.echo = boolean(body, "echo", false);
            r.logprobs = static_cast<int>(integer(body, "logprobs", -1, 0, opt.max_logprobs));
        }
        r.stream = boolean(body, "stream", false);
        if (r.max_tokens == 0 && !r.echo)
            bad("max_tokens", "'max_tokens' must be at least 1 (0 only with echo)");
        if (auto so = body.find("stream_options"); so != body.end() && !so->is_null()) {
            if (!so->is_object()) bad("stream_options", "'stream_options' must be an object");
            r.include_usage = boolean(*so, "include_usage", false);
        }
        fit_context(body, r);
        parse_sampling(body, r.base.sampling);
        parse_stop(body, r.base.stop);
        if (auto sf = body.find("suffix"); sf != body.end() && !sf->is_null() &&
                                           !(sf->is_string() && sf->get<std::string>().empty()))
            bad("suffix", "'suffix' is not supported");
        r.base.ignore_eos = boolean(body, "ignore_eos", false);
        r.base.max_tokens = r.max_tokens;
        r.base.logprobs = r.logprobs;
        r.base.prompt_logprobs = r.echo && r.logprobs >= 0;
    }

    // truncate_prompt_tokens applied; 400 when a prompt and max_tokens do not fit the context.
    void fit_context(const json& body, CompletionRequest& r) const {
        const int ctx = engine.context();
        const long long trunc = integer(body, "truncate_prompt_tokens", 0, 1, ctx);
        if (trunc > 0)
            for (auto& ids : r.prompts)
                if (static_cast<long long>(ids.size()) > trunc)
                    ids.erase(ids.begin(), ids.end() - trunc);
        for (std::size_t i = 0; i < r.prompts.size(); ++i) {
            const int P = static_cast<int>(r.prompts[i].size());
            if (P + r.max_tokens > ctx)
                bad(P > ctx ? "prompt" : "max_tokens",
                    "this model's maximum context length is " + std::to_string(ctx) +
                        " tokens, but " + std::to_string(P + r.max_tokens) + " were requested (" +
                        std::to_string(P) + " in the prompt, " + std::to_string(r.max_tokens) +
                        " for the completion); shorten the prompt, lower max_tokens, or set "
                        "truncate_prompt_tokens");
        }
    }

    void parse_sampling(const json& body, SamplingOptions& s) {
        s.temperature = static_cast<float>(number(body, "temperature", 1.0, 0, 10));
        s.top_p = static_cast<float>(number(body, "top_p", 1.0, 0, 1, true));
        s.typical_p = static_cast<float>(number(body, "typical_p", 1.0, 0, 1, true));
        s.eta_cutoff = static_cast<float>(number(body, "eta_cutoff", 0.0, 0, 1));
        if (s.eta_cutoff >= 1.f) bad("eta_cutoff", "'eta_cutoff' must be in [0, 1) (0 = off)");
        const long long top_k = integer(body, "top_k", 0, -1, 1LL << 31);
        s.top_k = top_k < 0 ? 0 : static_cast<int>(std::min<long long>(top_k, 1 << 30));
        s.repetition_penalty =
            static_cast<float>(number(body, "repetition_penalty", 1.0, 0, 100, true));
        // presence / frequency penalties: accepted, must be 0 (not implemented).
        for (const char* k : {"presence_penalty", "frequency_penalty"})
            if (number(body, k, 0, -2, 2) != 0)
                bad(k, std::string("'") + k + "' is not supported (use repetition_penalty)");
        if (auto sd = body.find("seed"); sd != body.end() && !sd->is_null()) {
            if (!is_int(*sd)) bad("seed", "'seed' must be an integer");
            s.seed = sd->is_number_unsigned() ? sd->get<std::uint64_t>()
                                              : static_cast<std::uint64_t>(sd->get<long long>());
        } else {
            std::lock_guard<std::mutex> lock(seed_mu);
            s.seed = seed_rng();
        }
    }

    void parse_stop(const json& body, std::vector<std::string>& stop) const {
        if (auto st = body.find("stop"); st != body.end() && !st->is_null()) {
            if (st->is_string()) {
                stop.push_back(st->get<std::string>());
            } else if (st->is_array()) {
                if (static_cast<int>(st->size()) > opt.max_stop)
                    bad("stop", "at most " + std::to_string(opt.max_stop) + " stop strings");
                for (const json& v : *st) {
                    if (!v.is_string()) bad("stop", "'stop' must be a string or a list of strings");
                    stop.push_back(v.get<std::string>());
                }
            } else {
                bad("stop", "'stop' must be a string or a list of strings");
            }
        }
    }

    json logprobs_json(const ChoiceResult& c, const CompletionRequest& r, std::size_t prompt_idx,
                       std::size_t tok_from, bool with_prompt, std::size_t& offset) const {
        json tokens = json::array(), lps = json::array(), tops = json::array(),
             offs = json::array();
        auto add = [&](std::int32_t id, const json& lp, const json& top) {
            const std::string s = token_text(id);
            tokens.push_back(s);
            lps.push_back(lp);
            tops.push_back(top);
            offs.push_back(offset);
            offset += code_points(tok.decode({id}));
        };
        auto top_json = [&](const TokenLogprob& t) {
            json o = json::object();
            for (const auto& [id, lp] : t.top) {
                const std::string s = token_text(id);
                if (!o.contains(s)) o[s] = lp;
            }
            return o;
        };
        if (with_prompt) {
            const auto& ids = r.prompts[prompt_idx];
            for (std::size_t i = 0; i < ids.size(); ++i) {
                if (i == 0) {
                    add(ids[0], nullptr, nullptr);
                } else {
                    const TokenLogprob& t = c.prompt[i - 1];
                    add(ids[i], t.logprob, top_json(t));
                }
            }
        }
        for (std::size_t i = tok_from; i < c.tokens.size(); ++i)
            add(c.tokens[i].id, c.tokens[i].logprob, top_json(c.tokens[i]));
        return {{"tokens", tokens},
                {"token_logprobs", lps},
                {"top_logprobs", tops},
                {"text_offset", offs}};
    }

    json usage_json(const Job& job, const CompletionRequest& r) const {
        long prompt = 0, completion = 0;
        for (const auto& p : r.prompts) prompt += static_cast<long>(p.size());
        for (const auto& c : job.choices) completion += static_cast<long>(c.tokens.size());
        return {{"prompt_tokens", prompt},
                {"completion_tokens", completion},
                {"total_tokens", prompt + completion}};
    }

    std::string new_id(bool chat) {
        std::lock_guard<std::mutex> lock(seed_mu);
        char buf[40];
        std::snprintf(buf, sizeof buf, "%s-%016llx", chat ? "chatcmpl" : "cmpl",
                      static_cast<unsigned long long>(seed_rng()));
        return buf;
    }

    // One choice of a whole (not streamed) answer.
    json choice_json(const ChoiceResult& c, const CompletionRequest& r, std::size_t i) const {
        const std::size_t p = i / r.n;
        std::size_t offset = 0;
        if (r.chat) return chat_choice(tok, c, i, r.logprobs >= 0);
        return {{"index", i},
                {"text", (r.echo ? r.prompt_texts[p] : "") + c.text},
                {"logprobs",
                 r.logprobs >= 0 ? logprobs_json(c, r, p, 0, r.echo, offset) : json(nullptr)},
                {"finish_reason", c.finish_reason}};
    }

    void completions(const httplib::Request& req, httplib::Response& res, bool chat) {
        CompletionRequest r;
        try {
            const json body = parse_body(req);
            if (const auto u = find_unknown_field(body, chat)) bad(u->field, u->message);
            r = chat ? parse_chat(req, body) : parse_completion(body);
        } catch (const ApiError& e) {
            return send_error(req, res, e);
        }
        respond(req, res, std::move(r));
    }

    // Submits the request's sequences; false when refused (the error is written).
    bool submit(const httplib::Request& req, httplib::Response& res,
                const std::shared_ptr<Job>& job, const CompletionRequest& r) {
        std::vector<SeqSpec> specs;
        for (std::size_t p = 0; p < r.prompts.size(); ++p)
            for (int k = 0; k < r.n; ++k) {
                SeqSpec s = r.base;
                s.prompt = r.prompts[p];
                s.stream = static_cast<std::uint64_t>(k);
                specs.push_back(std::move(s));
            }
        switch (engine.submit(job, std::move(specs))) {
            case SubmitStatus::ok:
                return true;
            case SubmitStatus::too_large:
                send_error(req, res,
                           ApiError{400,
                                    "the request needs more KV cache blocks than the server has "
                                    "(lower max_tokens or the prompt length)",
                                    "max_tokens"});
                return false;
            case SubmitStatus::queue_full:
            case SubmitStatus::draining:
                break;
        }
        const bool full = !*draining;
        res.set_header("Retry-After", full ? "1" : "5");
        send_error(req, res,
                   ApiError{503,
                            full ? "the server is at capacity: the queue is full, retry later"
                                 : "the server is shutting down",
                            "", "server_error", full ? "queue_full" : "shutting_down"});
        return false;
    }

    // What every object of one answer repeats.
    struct AnswerHead {
        std::string id, model;
        const char* object;
        long created;
    };

    // Submits the request's sequences and writes the answer: one JSON object, or server-sent
    // events as the text arrives.
    void respond(const httplib::Request& req, httplib::Response& res, CompletionRequest r) {
        auto job = std::make_shared<Job>(static_cast<int>(r.prompts.size()) * r.n);
        if (!submit(req, res, job, r)) return;
        const bool stream = r.stream;
        AnswerHead head{
            new_id(r.chat), opt.model_name,
            r.chat ? (stream ? "chat.completion.chunk" : "chat.completion") : "text_completion",
            static_cast<long>(std::time(nullptr))};
        auto rq = std::make_shared<const CompletionRequest>(std::move(r));
        count(req, 200);
        ++inflight;
        auto release = [this, job](bool) {
            job->cancelled = true;  // no effect once done; frees the sequences otherwise
            --inflight;
        };
        if (stream)
            write_stream(res, job, rq, std::move(head), release);
        else
            write_whole(res, job, rq, std::move(head), release);
    }

    void observe_latency(const Job& job) {
        metrics.observe("meshlm_request_latency_seconds",
                        std::chrono::duration<double>(Clock::now() - job.start).count());
    }

    // The JSON is written once the job is done; while waiting, a space (JSON allows leading
    // whitespace) goes out every second so a client that went away is noticed (the write fails)
    // and its sequences are freed. (With the charset the type is one cpp-httplib does not gzip:
    // its gzip of a response written in pieces this way breaks its own client.)
    void write_whole(httplib::Response& res, std::shared_ptr<Job> job,
                     std::shared_ptr<const CompletionRequest> rq, AnswerHead head,
                     httplib::ContentProviderResourceReleaser release) {
        res.set_chunked_content_provider(
            "application/json; charset=utf-8",
            [this, job, rq, head](std::size_t, httplib::DataSink& sink) {
                std::unique_lock<std::mutex> lock(job->mu);
                if (!job->cv.wait_for(lock, std::chrono::seconds(1), [&] { return job->done(); })) {
                    lock.unlock();
                    if (!sink.write(" ", 1)) {
                        job->cancelled = true;
                        return false;
                    }
                    return true;
                }
                json choices = json::array();
                for (std::size_t i = 0; i < job->choices.size(); ++i)
                    choices.push_back(choice_json(job->choices[i], *rq, i));
                json out = {{"id", head.id},           {"object", head.object},
                            {"created", head.created}, {"model", head.model},
                            {"choices", choices},      {"usage", usage_json(*job, *rq)}};
                lock.unlock();
                const std::string s = dump(out);
                observe_latency(*job);
                if (!sink.write(s.data(), s.size())) return false;
                sink.done();
                return true;
            },
            std::move(release));
    }

    // Where a streamed choice is: what its events have carried so far.
    struct Cursor {
        std::size_t text = 0, tokens = 0, offset = 0;
        bool started = false, finished = false;
    };

    // Whether some choice has something new to send (job->mu held).
    static bool has_news(const Job& job, const CompletionRequest& r,
                         const std::vector<Cursor>& cursors) {
        if (job.done()) return true;
        for (std::size_t i = 0; i < job.choices.size(); ++i) {
            const ChoiceResult& c = job.choices[i];
            const Cursor& k = cursors[i];
            if (c.text.size() > k.text || c.tokens.size() > k.tokens ||
                (!k.started && r.echo && c.prompt_done))
                return true;
        }
        return false;
    }

    // The event of choice i with what it has new, or nothing (job->mu held).
    std::string choice_event(const ChoiceResult& c, const CompletionRequest& r, std::size_t i,
                             Cursor& k, const AnswerHead& head) const {
        const bool echo_now = !k.started && r.echo && c.prompt_done;
        const bool fin = !c.finish_reason.empty();
        if (k.finished || (r.echo && !c.prompt_done)) return "";
        if (c.text.size() == k.text && c.tokens.size() == k.tokens && !echo_now && !fin) return "";
        json ch;
        if (r.chat) {
            ch = chat_delta_choice(tok, c, i, k.text, k.tokens, !k.started, r.logprobs >= 0);
        } else {
            const std::size_t p = i / r.n;
            ch = {{"index", i},
                  {"text", (echo_now ? r.prompt_texts[p] : "") + c.text.substr(k.text)}};
            ch["logprobs"] = r.logprobs >= 0 ? logprobs_json(c, r, p, k.tokens, echo_now, k.offset)
                                             : json(nullptr);
        }
        ch["finish_reason"] = fin ? json(c.finish_reason) : json(nullptr);
        k.text = c.text.size();
        k.tokens = c.tokens.size();
        k.started = true;
        k.finished = fin;
        return event(head, {{"choices", json::array({ch})}});
    }

    static std::string event(const AnswerHead& head, json fields) {
        json ev = {{"id", head.id},
                   {"object", head.object},
                   {"created", head.created},
                   {"model", head.model}};
        ev.update(fields);
        return "data: " + dump(ev) + "\n\n";
    }

    // Streaming: one event per choice with news (text, tokens, finish), then usage, [DONE].
    void write_stream(httplib::Response& res, std::shared_ptr<Job> job,
                      std::shared_ptr<const CompletionRequest> rq, AnswerHead head,
                      httplib::ContentProviderResourceReleaser release) {
        auto cursors = std::make_shared<std::vector<Cursor>>(job->choices.size());
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider(
            "text/event-stream",
            [this, job, rq, head, cursors](std::size_t, httplib::DataSink& sink) {
                std::string out;
                bool all_done;
                {
                    std::unique_lock<std::mutex> lock(job->mu);
                    job->cv.wait_for(lock, std::chrono::seconds(1),
                                     [&] { return has_news(*job, *rq, *cursors); });
                    all_done = job->done();
                    for (std::size_t i = 0; i < job->choices.size(); ++i)
                        out += choice_event(job->choices[i], *rq, i, (*cursors)[i], head);
                    if (all_done && rq->include_usage)
                        out += event(
                            head, {{"choices", json::array()}, {"usage", usage_json(*job, *rq)}});
                }
                if (all_done) out += "data: [DONE]\n\n";
                if (!out.empty() && !sink.write(out.data(), out.size())) {
                    job->cancelled = true;
                    return false;
                }
                if (all_done) {
                    observe_latency(*job);
                    sink.done();
                }
                return true;
            },
            std::move(release));
    }

    // The handler behind the API key (checked in the handler, once the body has been read, so
    // a refused request leaves a keep-alive connection usable).
    httplib::Server::Handler guarded(httplib::Server::Handler h) {
        return [this, h](const httplib::Request& req, httplib::Response& res) {
            if (!authorized(req))
                return send_error(req, res,
                                  ApiError{401,
                                           "missing or incorrect API key (send 'Authorization: "
                                           "Bearer KEY')",
                                           "", "invalid_request_error", "invalid_api_key"});
            h(req, res);
        };
    }

    void routes() {
        // A Content-Length over the limit gets 413 before the body is read (http_front.h's
        // request deadline bounds the reading of what the client sends anyway).
        http.set_payload_max_length(opt.max_body_bytes);

        http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
            if (!res.body.empty()) return;
            std::string msg = res.status == 404 ? "no such endpoint: " + req.method + " " + req.path
                              : res.status == 413
                                  ? "the request body is larger than " +
                                        std::to_string(opt.max_body_bytes) + " bytes"
                              : res.status == 405 ? "method not allowed"
                                                  : "the request could not be handled";
            ApiError e{res.status, msg, "",
                       res.status == 404 ? "not_found_error" : "invalid_request_error"};
            res.set_content(dump(error_body(e)), "application/json");
            count(req, res.status);
        });
        http.set_exception_handler(
            [this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
                std::string what = "internal error";
                try {
                    if (ep) std::rethrow_exception(ep);
                } catch (const ApiError& e) {
                    return send_error(req, res, e);
                } catch (const std::exception& e) {
                    what = e.what();
                } catch (...) {
                }
                send_error(req, res, ApiError{500, what, "", "server_error"});
            });

        post("/v1/completions",
             guarded([this](const httplib::Request& req, httplib::Response& res) {
                 completions(req, res, false);
             }));
        post("/v1/chat/completions",
             guarded([this](const httplib::Request& req, httplib::Response& res) {
                 completions(req, res, true);
             }));
        side_routes();
    }

    // /v1/models, /health, /metrics, the tokenizer endpoints and the playground page.
    void side_routes() {
        get("/v1/models", guarded([this](const httplib::Request& req, httplib::Response& res) {
                json m = {{"id", opt.model_name},
                          {"object", "model"},
                          {"created", created},
                          {"owned_by", "meshlm"},
                          {"max_model_len", engine.context()}};
                send_json(req, res, {{"object", "list"}, {"data", json::array({m})}});
            }));
        get("/health", [this](const httplib::Request& req, httplib::Response& res) {
            if (*draining) {
                res.status = 503;
                res.set_content(R"({"status":"draining"})", "application/json");
                return count(req, 503);
            }
            send_json(req, res, {{"status", "ok"}});
        });
        get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
            count(req, 200);
            metrics.set("meshlm_http_idle_connections",
                        static_cast<double>(http.idle_connections()));
            metrics.set("meshlm_http_open_connections",
                        static_cast<double>(http.open_connections()));
            metrics.set("meshlm_http_worker_threads", http.worker_threads());
            res.set_content(metrics.render(), "text/plain; version=0.0.4");
        });
        get("/tokenizer_info", guarded([this](const httplib::Request& req, httplib::Response& res) {
                send_json(req, res,
                          {{"tokenizer", tok.name()},
                           {"vocab_size", engine.config().vocab_size},
                           {"eos_token", token_text(tok.eot_id())},
                           {"eos_token_id", tok.eot_id()},
                           {"max_model_len", engine.context()}});
            }));
        post("/tokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
                 try {
                     json body = parse_body(req);
                     auto it = body.find("prompt");
                     if (it == body.end()) it = body.find("text");
                     if (it == body.end() || !it->is_string())
                         bad("prompt", "'prompt' must be a string");
                     const std::string text = it->get<std::string>();
                     std::vector<std::int32_t> ids = boolean(body, "add_special_tokens", false)
                                                         ? tok.encode_for_model(text)
                                                         : tok.encode(text);
                     send_json(req, res,
                               {{"tokens", ids},
                                {"count", ids.size()},
                                {"max_model_len", engine.context()}});
                 } catch (const ApiError& e) {
                     send_error(req, res, e);
                 }
             }));
        post("/detokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
                 try {
                     json body = parse_body(req);
                     auto it = body.find("tokens");
                     if (it == body.end() || !it->is_array())
                         bad("tokens", "'tokens' must be a list of token ids");
                     send_json(req, res, {{"prompt", tok.decode(ids_of(*it, "tokens"))}});
                 } catch (const ApiError& e) {
                     send_error(req, res, e);
                 }
             }));
        get("/", [this](const httplib::Request& req, httplib::Response& res) {
            count(req, 200);
            res.set_content(playground_html(), "text/html; charset=utf-8");
        });
    }
};

Server::Server(Engine& engine, const Tokenizer& tokenizer, ServerOptions opt, Metrics& metrics)
    : impl_(std::make_unique<Impl>(engine, tokenizer, std::move(opt), metrics, &draining_)) {
    impl_->routes();
}

Server::~Server() {
    impl_->http.finish();
}

std::string Server::answer(std::string_view request) {
    return impl_->http.answer(request);
}

namespace {
// cpp-httplib (Debian's 0.11, a compiled library) listens with a backlog of 5: a burst of clients
// -- an API server's normal load -- overflows the accept queue, the kernel drops their
// handshakes and they see read errors a second later. A second listen() on the bound socket
// raises its backlog; httplib keeps the socket to itself, so it is found by its port.
void widen_listen_backlog(int port) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        const int fd = std::atoi(e.path().filename().c_str());
        int accepting = 0;
        socklen_t len = sizeof accepting;
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting)
            continue;
        sockaddr_storage a{};
        socklen_t alen = sizeof a;
        if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &alen) != 0) continue;
        const int p =
            a.ss_family == AF_INET    ? ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port)
            : a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port)
                                      : -1;
        if (p == port) ::listen(fd, SOMAXCONN);
    }
}

// httplib's default socket options set SO_REUSEPORT, with which a second server binds a port
// that one already listens on and the kernel splits the connections between the two. Only
// SO_REUSEADDR: a restarted server still binds while the old one's connections linger in
// TIME_WAIT, and a busy port is refused.
void reuse_address_only(socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

// Why host:port cannot be bound, found by trying it with a plain socket (httplib says only that
// it failed).
std::string bind_failure(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0)
        return "cannot resolve " + host;
    int err = 0;
    for (const addrinfo* ai = found; ai; ai = ai->ai_next) {
        const int fd = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) continue;
        reuse_address_only(fd);
        err = ::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
        ::close(fd);
        if (err != EADDRNOTAVAIL) break;  // the first address this machine has decides
    }
    freeaddrinfo(found);
    switch (err) {
        case EADDRINUSE:
            return "the port is in use (another process listens there): stop that process or "
                   "choose another --port";
        case EADDRNOTAVAIL:
            return host + " is not an address of this machine";
        case EACCES:
            return "permission denied (ports below 1024 need privileges)";
        case 0:
            return "in use, or not an address of this machine";  // free again by now
        default:
            return std::strerror(err);
    }
}
}  // namespace

int Server::bind() {
    const auto& o = impl_->opt;
    int port = o.port;
    impl_->http.set_socket_options(reuse_address_only);
    if (port == 0) {
        port = impl_->http.bind_to_any_port(o.host.c_str());
        if (port < 0) MESHLM_INVALID("cannot bind ", o.host, " to a free port");
    } else if (!impl_->http.bind_to_port(o.host.c_str(), port)) {
        MESHLM_INVALID("cannot listen on ", o.host, ":", port, ": ", bind_failure(o.host, port));
    }
    widen_listen_backlog(port);
    return port;
}

void Server::run() {
    impl_->http.listen_after_bind();
    impl_->http.finish();  // before the handlers' state goes
}

void Server::begin_drain() {
    draining_ = true;
    impl_->engine.drain();
}

int Server::inflight() const {
    return impl_->inflight;
}

void Server::stop() {
    begin_drain();
    impl_->http.stop_listening();
}

}  // namespace meshlm
