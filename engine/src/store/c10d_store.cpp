// c10d_store.cpp: c10d::Store over StoreClient (bytes <-> std::string).
#include "store/c10d_store.hpp"

#include <stdexcept>

namespace dt::store {

namespace {

std::string text(const std::vector<uint8_t>& bytes) {
    return std::string(bytes.begin(), bytes.end());
}

std::vector<uint8_t> bytes(const std::string& text) {
    return std::vector<uint8_t>(text.begin(), text.end());
}

std::string keyList(const std::vector<std::string>& keys) {
    std::string out;
    for (size_t i = 0; i < keys.size() && i < 4; ++i)
        out += (i ? ", " : "") + keys[i];
    if (keys.size() > 4)
        out += ", ... (" + std::to_string(keys.size()) + " keys)";
    return out;
}

} // namespace

C10dStore::C10dStore(StoreClientOptions options, std::chrono::milliseconds timeout)
    : c10d::Store(timeout), m_client(std::make_unique<StoreClient>(std::move(options))) {}

void C10dStore::set(const std::string& key, const std::vector<uint8_t>& value) {
    m_client->set(key, text(value));
}

std::vector<uint8_t> C10dStore::compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                           const std::vector<uint8_t>& desired) {
    return bytes(m_client->compareSet(key, text(expected), text(desired)));
}

std::vector<uint8_t> C10dStore::get(const std::string& key) {
    const auto value = m_client->get(key, timeout_.count());
    if (!value)
        throw std::runtime_error("rendezvous store at " + m_client->address() + ": key '" + key +
                                 "' not set within " + std::to_string(timeout_.count()) + " ms");
    return bytes(*value);
}

int64_t C10dStore::add(const std::string& key, int64_t value) {
    return m_client->add(key, value);
}

bool C10dStore::deleteKey(const std::string& key) {
    return m_client->deleteKey(key);
}

bool C10dStore::check(const std::vector<std::string>& keys) {
    return m_client->check(keys);
}

int64_t C10dStore::getNumKeys() {
    return m_client->numKeys();
}

void C10dStore::wait(const std::vector<std::string>& keys) {
    wait(keys, timeout_);
}

void C10dStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
    if (!m_client->wait(keys, timeout.count()))
        throw std::runtime_error("rendezvous store at " + m_client->address() + ": keys [" + keyList(keys) +
                                 "] not all set within " + std::to_string(timeout.count()) + " ms");
}

} // namespace dt::store
