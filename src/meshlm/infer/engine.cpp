#include "meshlm/infer/engine.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "meshlm/core/error.h"
#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/infer/stop_strings.h"

namespace meshlm {
namespace {
constexpr std::uint64_t kChoiceStream = 0x5A3913;  // RNG stream of choice 0 (as generate.cpp)

// Bytes of `s` that end before an incomplete UTF-8 character at its end.
std::size_t complete_utf8(const std::string& s) {
    const std::size_t n = s.size();
    for (std::size_t back = 1; back <= 4 && back <= n; ++back) {
        const unsigned char c = static_cast<unsigned char>(s[n - back]);
        if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
        const std::size_t len = c < 0x80         ? 1
                                : (c >> 5) == 6  ? 2
                                : (c >> 4) == 14 ? 3
                                : (c >> 3) == 30 ? 4
                                                 : 1;
        return len > back ? n - back : n;
    }
    return n;
}
}  // namespace

struct Engine::Seq {
    std::shared_ptr<Job> job;
    int choice = 0;
    SeqSpec spec;
    std::vector<std::int32_t> tokens;  // prompt, then the generated tokens
    int prompt_len = 0, computed = 0, generated = 0;
    std::vector<std::int32_t> blocks;
    Philox rng{0, 0};
    std::vector<std::int32_t> seen;  // ids present, for the repetition penalty
    std::vector<char> is_seen;
    StopStrings stops{{}};
    std::string utf8;  // decoded bytes held back until their character is complete
    bool done = false;

    // Positions the sequence needs in the cache: all of them when generating (the last one's
    // logits give the next token), all but the last when only scoring the prompt.
    int target() const {
        return spec.max_tokens > 0 ? static_cast<int>(tokens.size()) : prompt_len - 1;
    }
    bool wants_logits(int p) const {
        return (spec.prompt_logprobs && p < prompt_len - 1) ||
               (spec.max_tokens > 0 && p == static_cast<int>(tokens.size()) - 1);
    }
};

Engine::Engine(const ModelConfig& cfg, const float* params, const Tokenizer& tokenizer,
               const EngineOptions& opt, Metrics* metrics)
    : cfg_(cfg),
      tok_(tokenizer),
      opt_(opt),
      metrics_(metrics),
      decoder_(cfg,
               opt.num_blocks > 0
                   ? opt.num_blocks
                   : opt.max_running * ((cfg.max_seq_len + opt.block_size - 1) / opt.block_size),
               opt.block_size, std::max(opt.max_rows, opt.max_running), opt.precision) {
    MESHLM_CHECK(opt.max_running >= 1 && opt.max_waiting >= 0 && opt.max_rows >= 1,
                 "engine limits must be positive");
    opt_.num_blocks = decoder_.num_blocks();
    if (opt_.threads <= 0) opt_.threads = thread_count();
    opt_.max_rows = decoder_.max_rows();
    decoder_.set_params(params);
    free_blocks_.resize(opt_.num_blocks);
    // Lowest ids first (popped from the back).
    std::iota(free_blocks_.rbegin(), free_blocks_.rend(), 0);
    scratch_row_.resize(cfg.vocab_size);
    if (metrics_) metrics_->set("meshlm_kv_blocks_total", opt_.num_blocks);
    thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
        cancel_all_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

SubmitStatus Engine::submit(std::shared_ptr<Job> job, std::vector<SeqSpec> specs) {
    MESHLM_CHECK(job->choices.size() == specs.size(), "a job needs one spec per choice");
    for (const SeqSpec& sp : specs) {
        MESHLM_CHECK(!sp.prompt.empty(), "a sequence needs a prompt");
        const int len = static_cast<int>(sp.prompt.size()) + sp.max_tokens;
        MESHLM_CHECK(len <= context(), "prompt + max_tokens exceed the context");
        if (blocks_for(len) > opt_.num_blocks) return SubmitStatus::too_large;
    }
    std::vector<std::unique_ptr<Seq>> seqs;
    for (std::size_t i = 0; i < specs.size(); ++i) {
        auto s = std::make_unique<Seq>();
        s->job = job;
        s->choice = static_cast<int>(i);
        s->spec = std::move(specs[i]);
        s->tokens = s->spec.prompt;
        s->prompt_len = static_cast<int>(s->tokens.size());
        s->rng = Philox(s->spec.sampling.seed, kChoiceStream + s->spec.stream);
        s->stops = StopStrings(s->spec.stop);
        if (s->spec.sampling.repetition_penalty != 1.f) {
            s->is_seen.assign(cfg_.vocab_size, 0);
            for (std::int32_t id : s->tokens)
                if (!s->is_seen[id]) s->is_seen[id] = 1, s->seen.push_back(id);
        }
        seqs.push_back(std::move(s));
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (draining_) return SubmitStatus::draining;
        // Room for max_running in the batch and max_waiting behind it (counting sequences
        // queued but not yet admitted against the batch's free slots).
        if (static_cast<int>(waiting_.size() + seqs.size()) + running_count_ >
            opt_.max_running + opt_.max_waiting)
            return SubmitStatus::queue_full;
        for (auto& s : seqs) waiting_.push_back(std::move(s));
        if (metrics_) metrics_->set("meshlm_queue_depth", static_cast<double>(waiting_.size()));
    }
    cv_.notify_all();
    return SubmitStatus::ok;
}

void Engine::drain() {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
}

void Engine::cancel_all() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        cancel_all_ = true;
    }
    cv_.notify_all();
}

bool Engine::idle() const {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_.empty() && running_count_ == 0;
}
int Engine::waiting() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(waiting_.size());
}
int Engine::running() const {
    std::lock_guard<std::mutex> lock(mu_);
    return running_count_;
}
int Engine::blocks_free() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(free_blocks_.size());
}

void Engine::finish(Seq& s, const char* reason) {
    if (s.done) return;
    s.done = true;
    const bool cut = s.stops.stopped();
    std::string tail;
    if (!cut) {
        tail = s.stops.feed(s.utf8);
        tail += s.stops.flush();
    }
    {
        std::lock_guard<std::mutex> lock(s.job->mu);
        ChoiceResult& c = s.job->choices[s.choice];
        c.text += tail;
        c.prompt_done = true;
        c.finish_reason = reason;
        ++s.job->finished;
    }
    s.job->cv.notify_all();
    {
        std::lock_guard<std::mutex> lock(mu_);
        free_blocks_.insert(free_blocks_.end(), s.blocks.rbegin(), s.blocks.rend());
    }
    s.blocks.clear();
    if (metrics_) {
        metrics_->add("meshlm_sequences_finished", 1, std::string("reason=\"") + reason + "\"");
        metrics_->add("meshlm_prompt_tokens",
                      s.computed < s.prompt_len ? s.computed : s.prompt_len);
    }
}

TokenLogprob Engine::logprob_of(const float* z, std::int32_t id, int top) const {
    const int V = cfg_.vocab_size;
    const float mx = *std::max_element(z, z + V);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[v]) - mx);
    const double lse = mx + std::log(sum);
    auto lp = [&](std::int32_t v) { return static_cast<float>(static_cast<double>(z[v]) - lse); };
    TokenLogprob r;
    r.id = id;
    r.logprob = lp(id);
    if (top > 0) {
        top = std::min(top, V);
        std::vector<std::int32_t> idx(V);
        std::iota(idx.begin(), idx.end(), 0);
        std::partial_sort(
            idx.begin(), idx.begin() + top, idx.end(),
            [&](std::int32_t a, std::int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
        for (int i = 0; i < top; ++i) r.top.emplace_back(idx[i], lp(idx[i]));
    }
    return r;
}

void Engine::emit_token(Seq& s, const float* logits) {
    const int V = cfg_.vocab_size;
    const float* z = logits;
    if (s.spec.sampling.repetition_penalty != 1.f) {
        std::copy_n(logits, V, scratch_row_.data());
        apply_repetition_penalty(scratch_row_.data(), s.seen, s.spec.sampling.repetition_penalty);
        z = scratch_row_.data();
    }
    const std::int32_t tok = sample_token(z, V, s.spec.sampling, s.rng, scratch_);
    TokenLogprob lp;
    lp.id = tok;
    if (s.spec.logprobs >= 0) lp = logprob_of(logits, tok, s.spec.logprobs);
    const bool eot =
        (tok == tok_.eot_id() ||
         std::find(s.spec.stop_ids.begin(), s.spec.stop_ids.end(), tok) != s.spec.stop_ids.end()) &&
        !s.spec.ignore_eos;
    ++s.generated;
    std::string out;
    if (!eot) {
        s.tokens.push_back(tok);
        if (!s.is_seen.empty() && !s.is_seen[tok]) s.is_seen[tok] = 1, s.seen.push_back(tok);
        s.utf8 += tok_.decode({tok});
        const std::size_t n = complete_utf8(s.utf8);
        out = s.stops.feed(std::string_view(s.utf8).substr(0, n));
        s.utf8.erase(0, n);
    }
    {
        std::lock_guard<std::mutex> lock(s.job->mu);
        ChoiceResult& c = s.job->choices[s.choice];
        c.prompt_done = true;
        c.tokens.push_back(std::move(lp));
        c.text += out;
        if (!s.job->first_token && metrics_)
            metrics_->observe(
                "meshlm_time_to_first_token_seconds",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - s.job->start)
                    .count());
        s.job->first_token = true;
    }
    s.job->cv.notify_all();
    if (metrics_) metrics_->add("meshlm_generation_tokens", 1);
    if (eot || s.stops.stopped())
        finish(s, "stop");
    else if (s.generated >= s.spec.max_tokens || static_cast<int>(s.tokens.size()) >= context())
        finish(s, "length");
}

bool Engine::admit() {
    std::vector<std::unique_ptr<Seq>> now, dropped;
    {
        std::lock_guard<std::mutex> lock(mu_);
        while (!waiting_.empty()) {
            Seq& s = *waiting_.front();
            if (s.job->cancelled || cancel_all_) {
                dropped.push_back(std::move(waiting_.front()));
                waiting_.pop_front();
                continue;
            }
            if (running_count_ >= opt_.max_running) break;
            const int need = blocks_for(s.prompt_len + s.spec.max_tokens);
            if (need > static_cast<int>(free_blocks_.size())) break;
            for (int b = 0; b < need; ++b) {
                s.blocks.push_back(free_blocks_.back());
                free_blocks_.pop_back();
            }
            ++running_count_;
            now.push_back(std::move(waiting_.front()));
            waiting_.pop_front();
        }
        if (metrics_) metrics_->set("meshlm_queue_depth", static_cast<double>(waiting_.size()));
    }
    for (auto& s : dropped) finish(*s, "cancelled");
    for (auto& s : now) running_.push_back(std::move(s));
    return !now.empty();
}

void Engine::loop() {
    set_thread_count(opt_.threads);
    for (;;) {
        bool cancel;
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] {
                return stop_ || cancel_all_ || !waiting_.empty() || running_count_ > 0;
            });
            if (stop_ && waiting_.empty() && running_count_ == 0) return;
            cancel = cancel_all_;
        }
        admit();
        for (auto& s : running_) {
            if (cancel || s->job->cancelled) finish(*s, "cancelled");
            // Nothing to compute: a one-token prompt only scored.
            else if (s->target() <= s->computed)
                finish(*s, "length");
        }
        if (cancel) {
            std::lock_guard<std::mutex> lock(mu_);
            if (waiting_.empty()) cancel_all_ = false;
        }
        std::erase_if(running_, [&](const std::unique_ptr<Seq>& s) { return s->done; });
        {
            std::lock_guard<std::mutex> lock(mu_);
            running_count_ = static_cast<int>(running_.size());
        }
        if (!running_.empty()) step();
        std::erase_if(running_, [&](const std::unique_ptr<Seq>& s) { return s->done; });
        {
            std::lock_guard<std::mutex> lock(mu_);
            running_count_ = static_cast<int>(running_.size());
            if (metrics_) {
                metrics_->set("meshlm_running_sequences", running_count_);
                metrics_->set("meshlm_kv_blocks_used",
                              opt_.num_blocks - static_cast<double>(free_blocks_.size()));
            }
        }
    }
}

void Engine::step() {
    const auto t0 = std::chrono::steady_clock::now();
    rows_.clear();
    row_seq_.clear();
    int budget = opt_.max_rows;
    auto add_rows = [&](Seq& s, int n) {
        for (int i = 0; i < n; ++i) {
            const int p = s.computed + i;
            rows_.push_back({s.tokens[p], p, s.blocks.data(), s.wants_logits(p)});
            row_seq_.emplace_back(&s, p);
        }
        budget -= n;
    };
    // Decoding sequences first (one row each), then prompt chunks in arrival order.
    int seqs = 0;
    for (auto& s : running_)
        if (s->computed >= s->prompt_len && s->target() - s->computed == 1) add_rows(*s, 1), ++seqs;
    for (auto& s : running_) {
        if (budget <= 0) break;
        if (s->computed >= s->prompt_len && s->target() - s->computed == 1) continue;
        const int n = std::min(budget, s->target() - s->computed);
        if (n > 0) add_rows(*s, n), ++seqs;
    }
    if (rows_.empty()) return;
    const float* logits = decoder_.forward(rows_.data(), static_cast<int>(rows_.size()));
    const std::size_t V = cfg_.vocab_size;
    std::size_t li = 0;
    for (std::size_t r = 0; r < rows_.size(); ++r) {
        Seq& s = *row_seq_[r].first;
        const int p = row_seq_[r].second;
        s.computed = p + 1;
        if (!rows_[r].logits) continue;
        const float* z = logits + li++ * V;
        if (s.done) continue;
        if (s.spec.prompt_logprobs && p < s.prompt_len - 1) {
            TokenLogprob lp = logprob_of(z, s.tokens[p + 1], std::max(s.spec.logprobs, 0));
            {
                std::lock_guard<std::mutex> lock(s.job->mu);
                s.job->choices[s.choice].prompt.push_back(std::move(lp));
            }
        }
        if (s.spec.max_tokens > 0 && p == static_cast<int>(s.tokens.size()) - 1) emit_token(s, z);
    }
    for (auto& s : running_)
        if (!s->done && s->spec.max_tokens == 0 && s->computed >= s->target()) finish(*s, "length");
    if (metrics_) {
        metrics_->observe("meshlm_batch_rows", static_cast<double>(rows_.size()));
        metrics_->observe("meshlm_batch_sequences", seqs);
        metrics_->observe(
            "meshlm_step_seconds",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
}

}  // namespace meshlm
