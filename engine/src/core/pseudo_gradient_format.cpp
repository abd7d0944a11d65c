// pseudo_gradient_format.cpp: sizes and bounds of pseudo_gradient_format.hpp.
#include "dtlab/pseudo_gradient_format.hpp"

#include "dtlab/errors.hpp"

#include <algorithm>
#include <cmath>

namespace dt {

namespace {

int64_t codeBytes(int64_t values, PseudoGradientFormat format) {
    return format == PseudoGradientFormat::Int8 ? values : (values + 1) / 2;
}

} // namespace

PseudoGradientFormat parsePseudoGradientFormat(const std::string& name) {
    if (name == "fp32")
        return PseudoGradientFormat::Fp32;
    if (name == "bf16")
        return PseudoGradientFormat::Bf16;
    if (name == "int8")
        return PseudoGradientFormat::Int8;
    if (name == "int4")
        return PseudoGradientFormat::Int4;
    throw UsageError("pseudo_gradient: expected one of \"fp32\", \"bf16\", \"int8\", \"int4\", got \"" +
                     name + "\"");
}

const char* pseudoGradientFormatName(PseudoGradientFormat format) {
    switch (format) {
    case PseudoGradientFormat::Fp32:
        return "fp32";
    case PseudoGradientFormat::Bf16:
        return "bf16";
    case PseudoGradientFormat::Int8:
        return "int8";
    case PseudoGradientFormat::Int4:
        return "int4";
    }
    return "?";
}

int64_t encodedBytes(int64_t n, PseudoGradientFormat format) {
    switch (format) {
    case PseudoGradientFormat::Fp32:
        return 4 * n;
    case PseudoGradientFormat::Bf16:
        return 2 * n;
    case PseudoGradientFormat::Int8:
    case PseudoGradientFormat::Int4: {
        const int64_t blocks = (n + kQuantBlock - 1) / kQuantBlock;
        int64_t bytes = 4 * blocks;
        for (int64_t b = 0; b < blocks; ++b)
            bytes += codeBytes(std::min(kQuantBlock, n - b * kQuantBlock), format);
        return bytes;
    }
    }
    return 0;
}

double roundTripErrorBound(double x, double block_max, PseudoGradientFormat format) {
    switch (format) {
    case PseudoGradientFormat::Fp32:
        return 0.0;
    case PseudoGradientFormat::Bf16:
        return std::ldexp(std::fabs(x), -8);
    case PseudoGradientFormat::Int8:
        return block_max / 254.0;
    case PseudoGradientFormat::Int4:
        return block_max / 14.0;
    }
    return 0.0;
}

} // namespace dt
