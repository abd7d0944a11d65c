// screenshot.hpp: the window's framebuffer to a PNG file (scripted
// `screenshot PATH`, tests, docs). Call after the frame is rendered and before
// the buffers are swapped: it reads the back buffer with glReadPixels and
// writes it with stb_image_write (Debian's libstb exports stbi_write_png).
#pragma once

#include <string>

namespace dt::app {

// Creates missing parent folders. Returns false with a message on failure.
bool writeFramebufferPng(int width, int height, const std::string& path, std::string& error);

} // namespace dt::app
