// draw_fingerprint.cpp: see draw_fingerprint.hpp. The mix is a multiply-xorshift
// over 8-byte words (a frame of about 15,000 vertices and 35,000 indices is
// about 370 KB: some 50 microseconds), not a cryptographic hash.
#include "draw_fingerprint.hpp"

#include <imgui.h>

#include <cstring>

namespace dt::app {

namespace {

struct Mixer {
    uint64_t h = 0x9E3779B97F4A7C15ull;

    void word(uint64_t w) {
        h ^= w;
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    void bytes(const void* data, size_t size) {
        const auto* p = static_cast<const unsigned char*>(data);
        size_t i = 0;
        for (; i + 8 <= size; i += 8) {
            uint64_t w;
            std::memcpy(&w, p + i, 8);
            word(w);
        }
        uint64_t tail = 0;
        if (size > i)
            std::memcpy(&tail, p + i, size - i);
        word(tail ^ (uint64_t(size) << 56));
    }
    void number(float f) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        word(bits);
    }
};

} // namespace

uint64_t drawDataFingerprint(const ImDrawData& draw_data, int framebuffer_width, int framebuffer_height,
                             const ImVec4& clear_color) {
    Mixer mix;
    mix.word(uint64_t(uint32_t(framebuffer_width)) << 32 | uint32_t(framebuffer_height));
    mix.number(clear_color.x);
    mix.number(clear_color.y);
    mix.number(clear_color.z);
    mix.number(draw_data.DisplayPos.x);
    mix.number(draw_data.DisplayPos.y);
    mix.number(draw_data.DisplaySize.x);
    mix.number(draw_data.DisplaySize.y);
    mix.word(uint64_t(draw_data.CmdListsCount));
    for (int n = 0; n < draw_data.CmdListsCount; ++n) {
        const ImDrawList& list = *draw_data.CmdLists[n];
        mix.bytes(list.VtxBuffer.Data, size_t(list.VtxBuffer.Size) * sizeof(ImDrawVert));
        mix.bytes(list.IdxBuffer.Data, size_t(list.IdxBuffer.Size) * sizeof(ImDrawIdx));
        for (const ImDrawCmd& cmd : list.CmdBuffer) {
            mix.number(cmd.ClipRect.x);
            mix.number(cmd.ClipRect.y);
            mix.number(cmd.ClipRect.z);
            mix.number(cmd.ClipRect.w);
            mix.word(uint64_t(reinterpret_cast<uintptr_t>(cmd.TextureId)));
            mix.word(uint64_t(cmd.VtxOffset) << 32 | cmd.IdxOffset);
            mix.word(cmd.ElemCount);
            mix.word(uint64_t(reinterpret_cast<uintptr_t>(cmd.UserCallback)));
        }
    }
    return mix.h;
}

} // namespace dt::app
