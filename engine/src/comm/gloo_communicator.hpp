// gloo_communicator.hpp: the Communicator over c10d's ProcessGroupGloo (TCP).
#pragma once

#include "comm/communicator.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace c10d {
class Store;
class ProcessGroupGloo;
} // namespace c10d

namespace dt {

struct GlooOptions {
    std::string prefix = "dtlab/world";       // store prefix; a fresh one per group incarnation
    std::string interface_host = "127.0.0.1"; // address this rank's Gloo device binds to
    std::chrono::milliseconds timeout{30000};
};

// Builds the process group (rendezvous through `store`; blocks until every
// rank of the group has joined or the timeout passes).
[[nodiscard]] std::unique_ptr<Communicator> makeGlooCommunicator(c10::intrusive_ptr<c10d::Store> store,
                                                                 int rank, int size,
                                                                 const GlooOptions& options, EventSink* sink);

} // namespace dt
