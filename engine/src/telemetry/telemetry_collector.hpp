// telemetry_collector.hpp: the Session's side of telemetry. Accepts one TCP
// connection per rank, answers the clock pings, and hands every frame to a
// sink on the connection's reader thread.
#pragma once

#include "dtlab/events.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <map>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dt {

class TelemetrySink {
  public:
    virtual ~TelemetrySink() = default;
    // Return false to refuse the rank (unknown rank, duplicate).
    virtual bool onHello(int rank, int pid, const std::string& host) = 0;
    virtual void onEvents(int rank, const Event* events, size_t count) = 0;
    virtual void onLog(int rank, LogLevel level, const std::string& text) = 0;
    // clean = the rank said Bye; otherwise the stream broke (rank died?).
    // pid: the process whose stream ended (its Hello's), so that a late end of
    // an earlier incarnation's stream is not taken for the current one's.
    virtual void onDisconnect(int rank, int pid, bool clean) = 0;
    virtual void onProtocolError(const std::string& what) = 0;
};

class TelemetryCollector {
  public:
    // `token`: the shared secret every rank must prove it holds (the
    // handshake in telemetry_wire.hpp); "" is a valid (loopback) token.
    TelemetryCollector(const std::string& host, int port, TelemetrySink& sink, std::string token = "");
    ~TelemetryCollector();
    [[nodiscard]] int port() const { return m_port; }
    void start();
    void stop();
    // Send a control message to one rank; false if it is not connected.
    bool sendControl(int rank, const wire::ControlMessage& message);

  private:
    void acceptLoop();
    void readLoop(int fd);

    // The challenge-response of one connection; false = refused (logged).
    bool authenticate(int fd, wire::Hello& hello);

    TelemetrySink& m_sink;
    std::string m_token;
    int m_listen_fd = -1;
    int m_port = 0;
    std::atomic<bool> m_stopping{false};
    std::thread m_accept_thread;
    std::mutex m_mutex;
    std::vector<std::thread> m_readers;
    std::vector<int> m_fds;
    std::map<int, int> m_rank_fd; // rank -> fd, once the hello is accepted
    std::mutex m_write_mutex;     // one writer at a time per socket
};

} // namespace dt
