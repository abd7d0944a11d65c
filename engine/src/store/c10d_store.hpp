// c10d_store.hpp: the rendezvous store client as a c10d::Store, so Gloo's
// ProcessGroupGloo (and PrefixStore) rendezvous through the authenticated,
// single-address store instead of c10d::TCPStore.
//
// Semantics follow TCPStore's: get() and wait() block until the keys are set
// or the store's timeout (or the given one) passes, and then throw.
#pragma once

#include "store/store_client.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>

namespace dt::store {

class C10dStore : public c10d::Store {
  public:
    // Connects and authenticates (StoreClient's constructor; it throws).
    C10dStore(StoreClientOptions options, std::chrono::milliseconds timeout);

    void set(const std::string& key, const std::vector<uint8_t>& value) override;
    std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                    const std::vector<uint8_t>& desired) override;
    std::vector<uint8_t> get(const std::string& key) override;
    int64_t add(const std::string& key, int64_t value) override;
    bool deleteKey(const std::string& key) override;
    bool check(const std::vector<std::string>& keys) override;
    int64_t getNumKeys() override;
    void wait(const std::vector<std::string>& keys) override;
    void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  private:
    std::unique_ptr<StoreClient> m_client;
};

} // namespace dt::store
