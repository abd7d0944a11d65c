// pseudo_gradient_codec.cpp: encode / decode of pseudo-gradients (pseudo_gradient_codec.hpp).
#include "strategy/pseudo_gradient_codec.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dt {

namespace {

int quantLevels(PseudoGradientFormat format) {
    return format == PseudoGradientFormat::Int8 ? 127 : 7;
}

int64_t codeBytes(int64_t values, PseudoGradientFormat format) {
    return format == PseudoGradientFormat::Int8 ? values : (values + 1) / 2;
}

} // namespace

void encodePseudoGradient(const at::Tensor& values, PseudoGradientFormat format, uint8_t* out) {
    const int64_t n = values.numel();
    const float* x = values.data_ptr<float>();
    if (format == PseudoGradientFormat::Fp32) {
        std::memcpy(out, x, size_t(n) * 4);
        return;
    }
    if (format == PseudoGradientFormat::Bf16) {
        const at::Tensor b = values.to(at::kBFloat16).contiguous();
        std::memcpy(out, b.data_ptr(), size_t(n) * 2);
        return;
    }
    const int levels = quantLevels(format);
    for (int64_t begin = 0; begin < n; begin += kQuantBlock) {
        const int64_t count = std::min(kQuantBlock, n - begin);
        float block_max = 0.0f;
        bool finite = true;
        for (int64_t i = 0; i < count; ++i) {
            finite = finite && std::isfinite(x[begin + i]);
            block_max = std::max(block_max, std::fabs(x[begin + i]));
        }
        // A NaN or Inf makes the block's scale NaN, so that every value of the
        // block decodes as NaN and the receiver sees it (std::max drops NaN).
        const float scale = finite ? block_max / float(levels) : std::nanf("");
        std::memcpy(out, &scale, 4);
        out += 4;
        const float inverse = finite && scale > 0.0f ? 1.0f / scale : 0.0f;
        const auto code = [&](int64_t i) {
            const long q = std::lround(double(x[begin + i]) * inverse);
            return int(std::clamp(q, long(-levels), long(levels)));
        };
        if (format == PseudoGradientFormat::Int8) {
            for (int64_t i = 0; i < count; ++i)
                out[i] = uint8_t(int8_t(code(i)));
        } else {
            for (int64_t i = 0; i < count; i += 2) {
                const int low = code(i) & 0xF;
                const int high = i + 1 < count ? (code(i + 1) & 0xF) : 0;
                out[i / 2] = uint8_t(low | (high << 4));
            }
        }
        out += codeBytes(count, format);
    }
}

void decodeAddPseudoGradient(const uint8_t* in, PseudoGradientFormat format, at::Tensor& sum) {
    const int64_t n = sum.numel();
    float* s = sum.data_ptr<float>();
    if (format == PseudoGradientFormat::Fp32) {
        const float* x = reinterpret_cast<const float*>(in);
        for (int64_t i = 0; i < n; ++i)
            s[i] += x[i];
        return;
    }
    if (format == PseudoGradientFormat::Bf16) {
        const uint16_t* x = reinterpret_cast<const uint16_t*>(in);
        for (int64_t i = 0; i < n; ++i) {
            const uint32_t bits = uint32_t(x[i]) << 16; // bf16 is the top half of an fp32
            float value;
            std::memcpy(&value, &bits, 4);
            s[i] += value;
        }
        return;
    }
    for (int64_t begin = 0; begin < n; begin += kQuantBlock) {
        const int64_t count = std::min(kQuantBlock, n - begin);
        float scale;
        std::memcpy(&scale, in, 4);
        in += 4;
        if (format == PseudoGradientFormat::Int8) {
            for (int64_t i = 0; i < count; ++i)
                s[begin + i] += float(int8_t(in[i])) * scale;
        } else {
            for (int64_t i = 0; i < count; ++i) {
                int q = (in[i / 2] >> (i % 2 == 0 ? 0 : 4)) & 0xF;
                if (q >= 8)
                    q -= 16; // two's complement nibble
                s[begin + i] += float(q) * scale;
            }
        }
        in += codeBytes(count, format);
    }
}

} // namespace dt
