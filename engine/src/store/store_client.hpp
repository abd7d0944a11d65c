// store_client.hpp: a connection to the Session's rendezvous store
// (store_server.hpp; protocol in store_protocol.hpp). It proves the run's
// token and checks the store's proof in return, so a rank only trusts what a
// holder of the token wrote. Thread-safe: one request at a time.
//
// c10d_store.hpp wraps it as a c10d::Store for Gloo's rendezvous.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dt::store {

struct StoreClientOptions {
    std::string host;
    int port = 0;
    std::string token;
    int64_t connect_timeout_ms = 60'000; // retry the connection this long (the Session may still be starting)
    // A reply still missing this long after its own timeout (or, for a request
    // without one, this long) means the Session is gone or stopped: an error.
    int64_t reply_grace_ms = 60'000;
};

class StoreClient {
  public:
    // Connects and authenticates. Throws UsageError when the store refuses the
    // token or does not prove it, std::runtime_error when it cannot be reached.
    explicit StoreClient(StoreClientOptions options);
    ~StoreClient();
    StoreClient(const StoreClient&) = delete;
    StoreClient& operator=(const StoreClient&) = delete;

    void set(const std::string& key, const std::string& value);
    [[nodiscard]] std::string compareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired);
    // The value once the key is set; nullopt if it is not set within
    // timeout_ms (0 = wait without limit).
    [[nodiscard]] std::optional<std::string> get(const std::string& key, int64_t timeout_ms);
    int64_t add(const std::string& key, int64_t delta);
    bool deleteKey(const std::string& key);
    [[nodiscard]] bool check(const std::vector<std::string>& keys);
    [[nodiscard]] int64_t numKeys();
    // True once every key is set; false if not within timeout_ms (0 = no limit).
    [[nodiscard]] bool wait(const std::vector<std::string>& keys, int64_t timeout_ms);

    [[nodiscard]] std::string address() const {
        return m_options.host + ":" + std::to_string(m_options.port);
    }

  private:
    struct Reply {
        uint32_t status = 0;
        std::string body;
    };
    void handshake();
    Reply call(const std::string& frame, int64_t timeout_ms);
    Reply exchange(const std::string& frame, int64_t timeout_ms); // call()'s work, m_mutex held
    void receive(void* data, size_t size, int64_t deadline_ms);
    [[noreturn]] void fail(const std::string& why) const;

    StoreClientOptions m_options;
    std::mutex m_mutex;
    int m_fd = -1;
    bool m_reply_was_error = false; // the last reply was a whole Error frame (the stream is in step)
};

} // namespace dt::store
