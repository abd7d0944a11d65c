// param_compare.hpp: compare two parameter lists (as written by
// `dtrun run --params-out`), the measure every equivalence test uses.
#pragma once

#include "model/model.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace it {

// The largest |a - b| over every element of every parameter. The lists must
// match in names and shapes (a mismatch fails the test and names the parameter).
inline double maxAbsDifference(const std::vector<dt::NamedParameter>& a,
                               const std::vector<dt::NamedParameter>& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].name != b[i].name || a[i].tensor.sizes() != b[i].tensor.sizes())
            FAIL("parameter " << i << " differs in name or shape: " << a[i].name << " " << a[i].tensor.sizes()
                              << " vs " << b[i].name << " " << b[i].tensor.sizes());
        const auto ta = a[i].tensor.contiguous();
        const auto tb = b[i].tensor.contiguous();
        const float* pa = ta.data_ptr<float>();
        const float* pb = tb.data_ptr<float>();
        for (int64_t k = 0; k < ta.numel(); ++k)
            worst = std::max(worst, double(std::fabs(pa[k] - pb[k])));
    }
    return worst;
}

} // namespace it
