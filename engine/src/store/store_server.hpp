// store_server.hpp: the Session's rendezvous store: a key-value store that
// ranks (and Gloo, through them) rendezvous on, bound to one address and open
// only to holders of the run's token. Protocol: store_protocol.hpp.
//
// It replaces c10d::TCPStore's server, which binds every interface and admits
// anyone; the client side is store_client.hpp (c10d_store.hpp adapts it to
// c10d::Store for Gloo).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace dt::store {

struct StoreServerOptions {
    std::string host = "127.0.0.1";        // the one address it binds (dtrun --listen)
    int port = 0;                          // 0 = any free port
    std::string token;                     // clients must prove it; may be empty (loopback, no token given)
    int64_t handshake_timeout_ms = 10'000; // a connection that has not proved the token by then is closed
    size_t max_connections = 4096;
    size_t max_total_bytes = size_t(256) << 20; // keys + values; a Set past it is an Error reply
};

class StoreServer {
  public:
    // on_refused(why) runs on the server's thread for each connection refused
    // (wrong token, not a dtlab store client, too slow to introduce itself).
    explicit StoreServer(StoreServerOptions options, std::function<void(const std::string&)> on_refused = {});
    ~StoreServer(); // stop()s
    StoreServer(const StoreServer&) = delete;
    StoreServer& operator=(const StoreServer&) = delete;

    // Binds host:port and starts the thread. Throws UsageError when the
    // address cannot be bound (not this machine's, or the port is taken).
    void start();
    void stop();
    [[nodiscard]] int port() const;

    // The Session's own access, no socket: a set wakes clients waiting for the key.
    void set(const std::string& key, const std::string& value);
    [[nodiscard]] std::optional<std::string> get(const std::string& key) const;
    [[nodiscard]] size_t connectionCount() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace dt::store
