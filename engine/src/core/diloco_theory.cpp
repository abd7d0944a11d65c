// diloco_theory.cpp: the byte formulas of diloco_theory.hpp.
#include "dtlab/diloco_theory.hpp"

#include "dtlab/diloco_schedule.hpp"
#include "dtlab/pseudo_gradient_format.hpp"
#include "dtlab/sharding_theory.hpp"

#include <algorithm>

namespace dt {

DilocoTheory dilocoTheory(const Scenario& s) {
    const UnitLayout layout = unitLayout(s.model);
    const int F = std::max(1, s.diloco.fragments);
    const int64_t N = s.topology.ranks;
    const PseudoGradientFormat format = parsePseudoGradientFormat(s.diloco.pseudo_gradient);
    DilocoTheory t;
    t.fragment_numel.assign(size_t(F), 0);
    t.fragment_numel[size_t(diloco::fragmentOfUnit(-1, F))] += layout.root_numel;
    for (size_t u = 0; u < layout.unit_numel.size(); ++u)
        t.fragment_numel[size_t(diloco::fragmentOfUnit(int(u), F))] += layout.unit_numel[u];
    for (int64_t numel : t.fragment_numel) {
        const int64_t bytes = format == PseudoGradientFormat::Fp32
                                  ? 2 * (N - 1) * (4 * numel) / N
                                  : (N - 1) * ((encodedBytes(numel, format) + 3) / 4 * 4); // whole fp32 words
        t.bytes_per_sync.push_back(bytes);
        t.peak_bytes_per_sync = std::max(t.peak_bytes_per_sync, bytes);
        t.bytes_per_period += bytes;
    }
    t.ddp_bytes_per_step = 2 * (N - 1) * (4 * layout.total()) / N;
    return t;
}

} // namespace dt
