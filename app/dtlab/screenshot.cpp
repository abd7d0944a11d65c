// screenshot.cpp: glReadPixels of the back buffer, flipped to top-down rows,
// written as an RGB PNG (see screenshot.hpp).
#include "screenshot.hpp"

#include <GL/gl.h>
#include <stb_image_write.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace dt::app {

bool writeFramebufferPng(int width, int height, const std::string& path, std::string& error) {
    if (width <= 0 || height <= 0) {
        error = "the window has no pixels to read";
        return false;
    }
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty())
        std::filesystem::create_directories(parent, ec);
    if (ec) {
        error = "cannot create the folder '" + parent.string() + "': " + ec.message();
        return false;
    }
    // OpenGL rows run bottom-up; PNG rows top-down.
    const size_t stride = size_t(width) * 3;
    std::vector<unsigned char> pixels(stride * size_t(height));
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
    std::vector<unsigned char> flipped(pixels.size());
    for (int y = 0; y < height; ++y)
        std::memcpy(&flipped[size_t(y) * stride], &pixels[size_t(height - 1 - y) * stride], stride);
    errno = 0;
    if (!stbi_write_png(path.c_str(), width, height, 3, flipped.data(), int(stride))) {
        error = "cannot write '" + path + "'" + (errno != 0 ? std::string(": ") + std::strerror(errno) : "");
        return false;
    }
    return true;
}

} // namespace dt::app
