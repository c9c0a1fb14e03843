// Typical sampling and eta-sampling: two filters over the candidates that temperature, top-k and
// top-p leave (sampler.cpp), with Hugging Face transformers' definitions (TypicalLogitsWarper,
// EtaLogitsWarper), applied in its order: typical, then eta, each on the distribution the
// filters before it left, renormalized.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace meshlm {

// A candidate: (weight, id). A filter reads cand[0..n) with weights proportional to the
// probabilities, moves the kept candidates to the front (in no promised order) and returns how
// many it kept (at least 1).
using Candidate = std::pair<float, std::int32_t>;

// Typical sampling (Meister et al. 2022): with p the renormalized probabilities and H = -sum p
// log p, order candidates by |-log p - H| (ties by id) and keep the shortest prefix whose mass
// reaches `mass` -- every candidate as close to H as the prefix's last one. 0 < mass < 1.
int typical_filter(std::vector<Candidate>& cand, int n, double mass);

// Eta-sampling (Hewitt et al. 2022): keep the candidates with p >= min(eta, sqrt(eta) exp(-H)),
// and always the most likely one. 0 < eta < 1.
int eta_filter(std::vector<Candidate>& cand, int n, double eta);

}  // namespace meshlm
