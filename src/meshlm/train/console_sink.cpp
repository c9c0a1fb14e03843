#include "meshlm/train/console_sink.h"

#include <cstdio>

#include "meshlm/train/progress.h"

namespace meshlm {

void ConsoleSink::train_line(const StepMetrics& m, const StepContext& c) {
    char line[320];
    std::snprintf(line, sizeof line,
                  "step %6ld/%ld | loss %.4f | lr %.3e | grad_norm %.3f | %s tok/s", m.step,
                  c.total_steps, m.loss.value_or(0.f), m.lr.value_or(0.f),
                  m.grad_norm.value_or(0.f), human_count(m.tokens_per_s.value_or(0)).c_str());
    out_ << line;
    // No MFU without a peak (a GPU without train.peak_gflops).
    if (m.mfu) std::snprintf(line, sizeof line, " | mfu %.1f%%", 100 * *m.mfu);
    out_ << (m.mfu ? line : " | mfu n/a");
    if (!m.vq.empty()) {  // commit, usage, entropy (trainer.cpp fills them in that order)
        std::snprintf(line, sizeof line, " | vq err %.3f use %.0f%% H %.2f", m.vq[0].second,
                      100 * m.vq[1].second, m.vq[2].second);
        out_ << line;
    }
    if (m.skipped_steps) out_ << " | skipped " << *m.skipped_steps;
    if (c.ranks > 1)
        out_ << " | sent " << human_bytes(static_cast<double>(m.comm_bytes.value_or(0))) << "/rank";
    out_ << " | " << human_duration(c.elapsed) << " elapsed";
    if (c.eta) out_ << ", ETA " << human_duration(*c.eta);
    out_ << "\n";
}

void ConsoleSink::validation(const StepMetrics& m, double bits_per_byte, long total_steps) {
    char line[128];
    std::snprintf(line, sizeof line, "step %6ld/%ld | val_loss %.4f (%.3f bits/byte)", m.step,
                  total_steps, m.val_loss.value_or(0.f), bits_per_byte);
    out_ << line << "\n";
}

void ConsoleSink::text(long, const std::string& tag, const std::string& text) {
    out_ << tag << ":\n" << text << "\n";
}

}  // namespace meshlm
