// local_address.hpp: which of this host's addresses faces a given peer?
//
// A rank's Gloo device must bind to an address the other ranks can reach. On
// one host that is loopback; across hosts (or network namespaces) it is the
// address of the interface whose route leads to the Session. The kernel
// answers that question without sending a packet: connect() a UDP socket to
// the Session's address and read back the local address it chose
// (getsockname). No DNS name of this host is involved, so a host whose name
// resolves to a different interface (or not at all) still works.
#pragma once

#include <string>

namespace dt {

// The numeric IPv4 address of this host's interface routed towards `host`
// (a name or a numeric address). Throws UsageError naming `host` when it does
// not resolve or no route leads to it.
[[nodiscard]] std::string localAddressTowards(const std::string& host, int port);

} // namespace dt
