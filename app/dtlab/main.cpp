// dtlab: the desktop app. Dear ImGui 1.86 + GLFW + OpenGL 3.3, driving a real
// multi-process training run (a Session, the same engine as dtrun) and drawing
// it live.
//
//   dtlab [SCENARIO.toml]           start the scenario's ranks and show them
//   dtlab --replay FILE             show a saved run (dtrun run ... --record FILE)
//   dtlab ... --script FILE         scripted input, one command per line (script_runner.hpp)
//   dtlab ... --screenshot-dir DIR  where a script's relative screenshot paths go
//
// Exit codes: 0 the window was closed (or the script quit); 1 no display, no
// dtrun next to dtlab, the Session could not start, or a script command failed
// at run time; 2 a bad flag, scenario, recording or script (nothing started,
// no window opened); 128 + N interrupted by signal N (SIGINT: 130). The rank processes are workers `dtrun
// worker`, started from the dtrun found next to this executable. Closing the window, Ctrl+Q, SIGINT, SIGTERM
// or SIGHUP stop the Session: every rank process is killed.
//
// Index of this file
// [SECTION] Command line
// [SECTION] Signals and callbacks
// [SECTION] Main loop (Dear ImGui's numbered steps)
#include "app.hpp"
#include "draw_fingerprint.hpp"
#include "frame_pacer.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/recording.hpp"
#include "dtlab/scenario.hpp"

#include <CLI/CLI.hpp>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <malloc.h>
#include <memory>
#include <optional>
#include <thread>
#include <unistd.h>

namespace {

// [SECTION] Command line -------------------------------------------------------

struct Flags {
    std::string scenario_path;
    std::string replay_path;
    std::string script_path;
    std::string screenshot_dir;
};

std::string executableDir() {
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0)
        return ".";
    buf[n] = 0;
    return std::filesystem::path(buf).parent_path().string();
}

// The source tree's `name` folder (scenarios, assets): in the working
// directory, else beside the build tree that holds this binary (build/app/dtlab).
std::string findShippedFolder(const std::string& name) {
    std::error_code ec;
    if (std::filesystem::is_directory(name, ec))
        return name;
    for (const char* up : {"/../..", "/..", "/../share/dtlab"}) {
        const std::filesystem::path dir =
            std::filesystem::path(executableDir() + up + "/" + name).lexically_normal();
        if (std::filesystem::is_directory(dir, ec))
            return dir.string();
    }
    return "";
}

int usageError(const std::string& message) {
    std::cerr << "dtlab: " << message << "\n";
    return dt::kExitUsage;
}

// [SECTION] Signals and callbacks -------------------------------------------------

std::atomic<int> g_signal{0};
void onSignal(int signo) {
    g_signal.store(signo);
}

void onGlfwError(int code, const char* description) {
    std::fprintf(stderr, "dtlab: GLFW error %d: %s\n", code, description);
}

// Every kind of input counts for the frame pacer: a second of 60 fps after it.
dt::app::FramePacer g_pacer;
void noteInput() {
    g_pacer.noteInput(dt::app::FramePacer::Clock::now());
}
void onCursorPos(GLFWwindow*, double, double) {
    noteInput();
}
void onMouseButton(GLFWwindow*, int, int, int) {
    noteInput();
}
void onScroll(GLFWwindow*, double, double) {
    noteInput();
}
void onChar(GLFWwindow*, unsigned int) {
    noteInput();
}
void onWindowSize(GLFWwindow*, int, int) {
    noteInput();
}
// The window was uncovered or needs its pixels again: draw the next frame even if unchanged.
std::atomic<bool> g_must_redraw{true};
void onWindowRefresh(GLFWwindow*) {
    g_must_redraw.store(true);
}

// Dear ImGui's key callback first, then the app's shortcut queue.
void onKey(GLFWwindow* window, int key, int scancode, int action, int mods) {
    noteInput();
    ImGui_ImplGlfw_KeyCallback(window, key, scancode, action, mods);
    if (auto* app = static_cast<dt::app::AppContext*>(glfwGetWindowUserPointer(window)))
        app->onKey(key, action, mods);
}

void onDrop(GLFWwindow* window, int count, const char** paths) {
    auto* app = static_cast<dt::app::AppContext*>(glfwGetWindowUserPointer(window));
    std::vector<std::string> list(paths, paths + count);
    if (app)
        app->onDrop(list);
}

} // namespace

int main(int argc, char** argv) {
    // [SECTION] Main loop (Dear ImGui's numbered steps) ---------------------------

    // 1. Flags, then every input file is read and checked before any window opens.
    Flags flags;
    CLI::App cli{"dtlab: watch and break a real distributed training run.\n"
                 "With no SCENARIO, the window opens on the scenario gallery: click a card to start it."};
    cli.add_option("scenario", flags.scenario_path, "scenario TOML file to run (scenarios/*.toml)");
    cli.add_option("--replay", flags.replay_path, "open a saved run (dtrun run ... --record FILE) instead");
    cli.add_option("--script", flags.script_path, "scripted input: one command per line (see docs/gui.md)");
    cli.add_option("--screenshot-dir", flags.screenshot_dir,
                   "folder for the script's relative screenshot paths");
    cli.footer("Shortcuts: F1 help, F11 full screen, Ctrl+= / Ctrl+- text size, Ctrl+T theme, Space/Right "
               "next step.\n"
               "Without a display, run the same scenario headless: dtrun run SCENARIO.toml");
    try {
        cli.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return cli.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "dtlab: " << e.what() << "\nRun 'dtlab --help' for usage.\n";
        return dt::kExitUsage;
    }
    if (!flags.scenario_path.empty() && !flags.replay_path.empty())
        return usageError("give a SCENARIO or --replay FILE, not both");

    std::optional<dt::Scenario> scenario;
    std::optional<dt::RecordingLoad> recording;
    std::optional<dt::app::ScriptRunner> script;
    try {
        if (!flags.scenario_path.empty())
            scenario = dt::loadScenarioFile(flags.scenario_path);
        if (!flags.replay_path.empty())
            recording = dt::readRecording(flags.replay_path);
        if (!flags.script_path.empty()) {
            script = dt::app::ScriptRunner::load(flags.script_path);
            int world = 0;
            if (scenario)
                world = scenario->topology.ranks;
            if (recording)
                world = std::max<int>(int(recording->record.ranks.size()),
                                      recording->record.scenario.topology.ranks);
            if (scenario || recording)
                script->checkRanks(world);
        }
    } catch (const dt::UsageError& e) {
        return usageError(e.what());
    }
    if (!flags.screenshot_dir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(flags.screenshot_dir, ec);
        if (ec)
            return usageError("--screenshot-dir: cannot create '" + flags.screenshot_dir +
                              "': " + ec.message());
    }

    dt::app::AppOptions options;
    options.worker_executable = executableDir() + "/dtrun";
    options.screenshot_dir = flags.screenshot_dir;
    options.scenarios_dir = findShippedFolder("scenarios");
    const std::string assets = findShippedFolder("assets");
    options.gallery_toml = assets.empty() ? "" : assets + "/gallery.toml";
    options.assets_dir = assets;
    if (scenario && access(options.worker_executable.c_str(), X_OK) != 0) {
        std::cerr
            << "dtlab: cannot find the worker executable '" << options.worker_executable
            << "': dtlab starts every rank as `dtrun worker`, using the dtrun next to the dtlab binary.\n"
               "Build it with: cmake --build build --target dtrun\n";
        return 1;
    }

    // 2. A display: without one, point to the headless command line.
    const char* no_display_hint =
        "dtlab: no display: %s.\n"
        "Run the same scenario headless instead:  dtrun run SCENARIO.toml  (add --trace FILE for Perfetto,\n"
        "--record FILE to open it later with dtlab --replay FILE on a machine with a display).\n";
    const char* display = std::getenv("DISPLAY");
    const char* wayland = std::getenv("WAYLAND_DISPLAY");
    if ((!display || !*display) && (!wayland || !*wayland)) {
        std::fprintf(stderr, no_display_hint, "neither DISPLAY nor WAYLAND_DISPLAY is set");
        return 1;
    }
    glfwSetErrorCallback(onGlfwError);
    if (!glfwInit()) {
        std::fprintf(stderr, no_display_hint, "GLFW could not connect to it");
        return 1;
    }

    // Software OpenGL (Mesa's llvmpipe, no GPU) copies every frame's vertex
    // buffers into fresh heap memory. With glibc's defaults the heap's top was
    // given back to the kernel after each frame and faulted in again on the
    // next: 40 % of the main thread's time (perf, ddp_basics under Xvfb). Keep
    // freed memory for reuse instead.
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);

    // 3. A window with an OpenGL 3.3 core context.
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GL_TRUE);
    GLFWwindow* window = glfwCreateWindow(1600, 900, "dtlab", nullptr, nullptr);
    if (!window) {
        std::fprintf(stderr, no_display_hint, "the window (OpenGL 3.3 core) could not be created");
        glfwTerminate();
        return 1;
    }
    glfwMakeContextCurrent(window);
    glfwSwapInterval(1);

    // 4. Dear ImGui and its two backends. No imgui.ini: the app lays the views
    //    out itself (View > Reset layout), so runs look the same everywhere.
    // Input callbacks for the frame pacer first: ImGui's backend chains to them.
    glfwSetCursorPosCallback(window, onCursorPos);
    glfwSetMouseButtonCallback(window, onMouseButton);
    glfwSetScrollCallback(window, onScroll);
    glfwSetCharCallback(window, onChar);
    glfwSetWindowSizeCallback(window, onWindowSize);
    glfwSetWindowRefreshCallback(window, onWindowRefresh);
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;
    ImGui_ImplGlfw_InitForOpenGL(window, true);
    ImGui_ImplOpenGL3_Init("#version 330");

    // 5. The app: open what the command line asked for, then the script.
    auto app = std::make_unique<dt::app::AppContext>(options);
    app->attachWindow(window);
    glfwSetWindowUserPointer(window, app.get());
    glfwSetDropCallback(window, onDrop);
    glfwSetKeyCallback(window, onKey); // replaces ImGui's, which onKey calls
    int exit_code = 0;
    try {
        if (scenario)
            app->openScenario(*scenario);
        if (recording)
            app->openRecording(std::move(*recording), flags.replay_path);
    } catch (const std::exception& e) {
        std::cerr << "dtlab: cannot start the run: " << e.what() << "\n";
        exit_code = 1;
    }
    if (!scenario && !recording)
        app->openGallery(); // the start screen: pick a scenario
    if (script)
        app->setScript(std::move(*script));
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    std::signal(SIGHUP, onSignal);
    app->prepareFirstFrame();

    // 6. The loop: poll, update (never blocks on the engine), new frame, draw,
    //    render, screenshot if asked, swap (the last four only when the frame
    //    differs from the one on screen); then wait: 60 frames per second
    //    while the user interacts, 20 otherwise, so that software rendering
    //    (no GPU, Xvfb) leaves the CPU to the ranks (frame_pacer.hpp).
    uint64_t drawn_fingerprint = 0;
    std::chrono::steady_clock::time_point drawn_at{};
    while (exit_code == 0 && !glfwWindowShouldClose(window) && !app->quitRequested() &&
           g_signal.load() == 0) {
        const auto frame_start = std::chrono::steady_clock::now();
        glfwPollEvents();
        app->update();
        if (glfwGetWindowAttrib(window, GLFW_ICONIFIED)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        ImGui_ImplOpenGL3_NewFrame();
        ImGui_ImplGlfw_NewFrame();
        ImGui::NewFrame();
        app->draw();
        ImGui::Render();
        const auto built_at = std::chrono::steady_clock::now();
        int width = 0, height = 0;
        glfwGetFramebufferSize(window, &width, &height);
        const ImVec4 clear = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
        // Draw only a frame that differs from the one on screen (software
        // rendering costs about 30 ms of CPU per 1600x900 frame), a screenshot,
        // or after a second without drawing.
        const uint64_t fingerprint =
            dt::app::drawDataFingerprint(*ImGui::GetDrawData(), width, height, clear);
        const bool must_redraw = g_must_redraw.exchange(false); // read every frame: a refresh is taken once
        const bool same_pixels = !must_redraw && fingerprint == drawn_fingerprint &&
                                 frame_start - drawn_at < std::chrono::seconds(1) &&
                                 !app->screenshotPending();
        if (!same_pixels) {
            glViewport(0, 0, width, height);
            glClearColor(clear.x, clear.y, clear.z, 1.0f);
            glClear(GL_COLOR_BUFFER_BIT);
            ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
            app->afterRender(width, height);
            glfwSwapBuffers(window);
            drawn_fingerprint = fingerprint;
            drawn_at = frame_start;
        }
        using Ms = std::chrono::duration<double, std::milli>;
        app->noteFrameTimes(Ms(built_at - frame_start).count(),
                            Ms(std::chrono::steady_clock::now() - built_at).count(), !same_pixels);
        // Never faster than 60 frames per second; past that, input ends the wait.
        const auto fastest = frame_start + dt::app::FramePacer::kInteractiveFrame;
        std::this_thread::sleep_until(fastest);
        const auto next = frame_start + g_pacer.frameBudget(std::chrono::steady_clock::now());
        const auto left = next - std::chrono::steady_clock::now();
        if (left > std::chrono::milliseconds(1))
            glfwWaitEventsTimeout(std::chrono::duration<double>(left).count());
    }

    // 7. Shut down: the AppContext stops the Session (every rank is killed)
    //    before the window and ImGui go away.
    if (const int signo = g_signal.load()) {
        std::printf("dtlab: interrupted by %s: stopping the run\n", strsignal(signo));
        exit_code = 128 + signo;
    }
    if (exit_code == 0)
        exit_code = app->exitCode();
    app.reset();
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window);
    glfwTerminate();
    std::printf("dtlab: exit %d\n", exit_code);
    return exit_code;
}
