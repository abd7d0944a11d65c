// lighthouse_detail.hpp: small pure helpers shared by the lighthouse server,
// its client and the tests (not part of the public API in dtlab/lighthouse.hpp).
//   nextQuorumId       the quorum id rule: +1 when membership changed or some
//                      participant reported commit_failures > 0
//   formatQuorumLine   Quorum -> "QUORUM <id> <highest_step> <n> {entry}*n",
//                      entry = <replica>.<incarnation>:<step>:<address|->
//   parseQuorumLine    the reverse; false on a malformed line
//   helloProof         the HMAC a HELLO carries: hex of HMAC-SHA256(token,
//                      "dtlab lighthouse <nonce> <replica> <incarnation>"), nonce
//                      from the server's "CHALLENGE <nonce>" line
#pragma once

#include "dtlab/lighthouse.hpp"

#include <cstdint>
#include <string>

namespace dt::ft {

[[nodiscard]] int64_t nextQuorumId(int64_t last_issued_id, const QuorumDecision& decision);

[[nodiscard]] std::string formatQuorumLine(const Quorum& quorum); // without the trailing '\n'
[[nodiscard]] bool parseQuorumLine(const std::string& line, Quorum& out);

[[nodiscard]] std::string helloProof(const std::string& token, const std::string& nonce_hex, int replica,
                                     int incarnation);

} // namespace dt::ft
