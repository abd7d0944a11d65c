// lighthouse_server.cpp: the lighthouse, one thread with a poll() loop.
//
// Each turn of the loop:
//   1. poll() the wake eventfd, the listening socket and every client socket,
//      waking at least every quorum_tick_ms.
//   2. Accept new connections (non-blocking sockets); each is sent
//      "CHALLENGE <nonce>" (16 random bytes, hex): its HELLO must carry
//      HMAC-SHA256(token, "dtlab lighthouse <nonce> <replica> <incarnation>"),
//      so only a holder of the run's token can speak for a replica (a HELLO
//      without it is refused, and onRefused says so). STATUS needs no HELLO.
//   3. Read what each client sent; split it into '\n'-terminated lines and
//      handle them: HELLO (who it is), HB (heartbeat), QUORUM (a request:
//      the member now waits), STATUS (answered at once), BYE (the member
//      is done: it left, and is not reported lost). Any line counts as
//      a heartbeat. A closed connection drops its member's request; with
//      lost_on_close (detection = "connection") it also marks the member not
//      connected and lost ("connection closed": seen within a millisecond),
//      else (detection = "heartbeat", TorchFT's way) only step 4 judges it.
//   4. Check heartbeats: a member whose last line is older than
//      heartbeat_timeout_ms is reported lost once (again only after it came
//      back); a member neither connected nor heartbeating for 10 heartbeat
//      timeouts is forgotten.
//   5. If someone waits, run computeQuorum; when it says issue, answer every
//      participant with the QUORUM line, clear their requests, remember the
//      quorum (nextQuorumId: the id moves only on a membership change or a
//      commit failure) and tell onQuorum.
// Callbacks run on this thread after the state mutex is released, so they
// may call status(). Writes are small lines on non-blocking sockets: a client
// whose socket buffer is full is dropped rather than allowed to block the loop.
#include "core/sha256.hpp"
#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/lighthouse.hpp"
#include "ft/lighthouse_detail.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dt::ft {

namespace {

int64_t nowMs() {
    return dt::monotonicNowNs() / 1'000'000;
}

constexpr size_t kMaxLineBytes = 64 * 1024; // a client that sends more without '\n' is dropped
// Fairness against a flooding client: at most this many lines of one
// connection per turn (the rest wait for the next turn, which then does not
// sleep in poll), and no more reading from it while this much waits unread.
constexpr int kMaxLinesPerTurn = 256;
constexpr size_t kMaxInboxBytes = 1 << 20;
constexpr int kForgetAfterHeartbeatTimeouts = 10;

// One client connection.
struct Connection {
    std::string nonce;   // the CHALLENGE sent on accept (hex); its HELLO must prove the token with it
    std::string inbox;   // bytes received, not yet a whole line
    int replica = -1;    // set by HELLO; -1 = not introduced yet
    std::string refused; // set when its HELLO was refused: every later line gets this ERROR
};

// What the lighthouse knows about one replica (one entry per replica).
struct MemberRecord {
    QuorumMember member;
    int fd = -1; // its connection; -1 = not connected
    int64_t last_heartbeat_ms = 0;
    bool waiting = false;
    int64_t waiting_since_ms = 0;
    bool loss_reported = false; // onMemberLost already called for this loss
    bool left = false;          // said BYE (the job finished): not lost when it goes
};

} // namespace

struct LighthouseServer::Impl {
    LighthouseOptions options;

    mutable std::mutex mutex; // guards everything below
    bool is_running = false;
    int bound_port = 0; // the port of the first start(); later starts rebind it
    int listen_fd = -1;
    int wake_fd = -1;
    std::atomic<bool> stop_requested{false};
    std::thread loop_thread;

    std::map<int, Connection> connections; // by fd
    std::map<int, MemberRecord> members;   // by replica
    Quorum last_quorum;                    // of this run (empty after a restart)
    int64_t last_issued_id = 0;            // survives stop()/start()
    int64_t quorums_issued = 0;
    int64_t highest_step = 0;
    std::string last_reason;
    bool held = false; // setJobHeld: the join timeout's clock stands still
    // setJobFrozen: the lighthouse's clock (heartbeat ages, join timeouts)
    // stands still while the job is paused; jobNowMs() is wall time minus the
    // pauses, so a held moment is the moment the unpaused run had.
    int64_t frozen_total_ms = 0;
    int64_t frozen_since_ms = -1; // wall ms when the current pause began; -1: not frozen
    bool lines_pending = false;   // some connection has whole lines left for the next turn (fairness)
    std::vector<AliveHolder> alive_holders; // setAliveHolders: the supervisor's view (rule 5b)

    std::function<void(const Quorum&, const QuorumDecision&)> on_quorum;
    std::function<void(const QuorumMember&, const std::string&)> on_member_lost;
    std::function<void(const std::string&)> on_refused;
    std::vector<std::function<void()>> pending_callbacks; // run after the mutex is released

    void loop();
    void acceptClients();
    void readClient(int fd, int64_t now);
    void handleLine(int fd, const std::string& line, int64_t now);
    void handleHello(int fd, std::istringstream& in, int64_t now);
    void closeConnection(int fd, const std::string& why);
    void memberLost(MemberRecord& record, const std::string& why);
    [[nodiscard]] bool connectedForQuorum(const MemberRecord& record) const;
    void checkHeartbeats(int64_t now);
    void decide(int64_t now);
    bool sendLine(int fd, const std::string& line);
    LighthouseStatus statusLocked(int64_t now) const;
    [[nodiscard]] int64_t jobNowMs() const;
};

int64_t LighthouseServer::Impl::jobNowMs() const {
    const int64_t wall = nowMs();
    return wall - frozen_total_ms - (frozen_since_ms >= 0 ? wall - frozen_since_ms : 0);
}

// ---- the loop ----

void LighthouseServer::Impl::loop() {
    while (!stop_requested) {
        std::vector<pollfd> fds;
        {
            std::lock_guard<std::mutex> lock(mutex);
            fds.push_back({wake_fd, POLLIN, 0});
            fds.push_back({listen_fd, POLLIN, 0});
            for (const auto& entry : connections)
                fds.push_back({entry.first, POLLIN, 0});
        }
        // Lines already read and not yet handled: poll would not report them.
        ::poll(fds.data(), nfds_t(fds.size()),
               lines_pending ? 0 : int(std::max<int64_t>(1, options.quorum_tick_ms)));
        if (stop_requested)
            break;

        std::vector<std::function<void()>> callbacks;
        {
            std::lock_guard<std::mutex> lock(mutex);
            const int64_t now = jobNowMs();
            if (fds[0].revents & POLLIN) {
                uint64_t count = 0;
                [[maybe_unused]] ssize_t ignored = ::read(wake_fd, &count, sizeof(count));
            }
            if (fds[1].revents & POLLIN)
                acceptClients();
            // Accept first, then read: a fd closed below cannot be reused by an accept in this turn.
            lines_pending = false;
            for (size_t i = 2; i < fds.size(); ++i) {
                const auto c = connections.find(fds[i].fd);
                const bool waiting =
                    c != connections.end() && c->second.inbox.find('\n') != std::string::npos;
                if (waiting || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                    readClient(fds[i].fd, now);
            }
            checkHeartbeats(now);
            decide(now);
            callbacks.swap(pending_callbacks);
        }
        for (auto& callback : callbacks)
            callback();
    }
}

void LighthouseServer::Impl::acceptClients() {
    while (true) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; // EAGAIN: no more waiting connections
        Connection c;
        const auto nonce = randomNonce();
        c.nonce = toHex(nonce.data(), nonce.size());
        connections[fd] = c;
        sendLine(fd, "CHALLENGE " + c.nonce);
    }
}

void LighthouseServer::Impl::readClient(int fd, int64_t now) {
    if (connections.count(fd) == 0)
        return; // closed earlier in this turn
    char buffer[4096];
    bool closed = false;
    while (connections[fd].inbox.size() < kMaxInboxBytes) { // a flood waits in the kernel's buffer
        const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
        if (n > 0) {
            connections[fd].inbox.append(buffer, size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        closed = true; // n == 0: EOF, or an error; its last lines (a BYE) are still read below
        break;
    }
    // Handle up to kMaxLinesPerTurn whole lines (checking the connection is
    // still open before each); the consumed prefix is erased once.
    size_t consumed = 0;
    for (int handled = 0; connections.count(fd) != 0; ++handled) {
        std::string& inbox = connections[fd].inbox;
        const auto newline = inbox.find('\n', consumed);
        if (newline == std::string::npos || handled == kMaxLinesPerTurn) {
            inbox.erase(0, consumed);
            if (newline != std::string::npos) {
                lines_pending = true; // the rest next turn, after the others
                return;
            }
            if (closed)
                closeConnection(fd, "connection closed");
            else if (inbox.size() > kMaxLineBytes) {
                sendLine(fd, "ERROR line longer than 64 KiB");
                closeConnection(fd, "connection closed (line too long)");
            }
            return;
        }
        std::string line = inbox.substr(consumed, newline - consumed);
        consumed = newline + 1;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        handleLine(fd, line, now);
    }
}

void LighthouseServer::Impl::handleLine(int fd, const std::string& line, int64_t now) {
    std::istringstream in(line);
    std::string command;
    in >> command;
    if (command.empty())
        return;
    if (command == "HELLO" && !connections[fd].refused.empty()) {
        sendLine(fd, "ERROR " + connections[fd].refused); // refused once, reported once
        return;
    }
    if (command == "HELLO")
        return handleHello(fd, in, now);
    if (command == "STATUS") {
        sendLine(fd, "STATUS " + statusToJson(statusLocked(now)));
        return;
    }
    if (!connections[fd].refused.empty()) {
        sendLine(fd, "ERROR " + connections[fd].refused);
        return;
    }

    const int replica = connections[fd].replica;
    if (replica < 0 || members.count(replica) == 0) {
        sendLine(fd, "ERROR say HELLO <replica> <incarnation> first");
        return;
    }
    MemberRecord& record = members[replica];
    record.last_heartbeat_ms = now; // any line is a sign of life
    record.loss_reported = false;   // it is back: a later loss is reported again

    if (command == "HB")
        return;
    if (command == "BYE") {
        record.left = true;
        record.waiting = false;
        return;
    }
    if (command == "QUORUM") {
        int64_t step = 0;
        int commit_failures = 0;
        std::string address;
        if (!(in >> step >> commit_failures >> address) || step < 0 || commit_failures < 0) {
            sendLine(fd, "ERROR expected QUORUM <step> <commit_failures> <address|->");
            return;
        }
        record.member.step = step;
        record.member.commit_failures = commit_failures;
        record.member.address = address == "-" ? "" : address;
        highest_step = std::max(highest_step, step);
        if (!record.waiting)
            record.waiting_since_ms = now; // a repeated request keeps its place
        record.waiting = true;
        return;
    }
    sendLine(fd, "ERROR unknown command '" + command + "'");
}

// HELLO <replica> <incarnation>: this connection now speaks for that replica.
// A newer (or equal) incarnation takes the replica over from an older
// connection (which is closed); an older incarnation than the one known is
// refused: the connection stays open and every later line gets the ERROR
// (closing it at once could reset the socket before the client reads why).
void LighthouseServer::Impl::handleHello(int fd, std::istringstream& in, int64_t now) {
    int replica = -1, incarnation = -1;
    std::string proof;
    if (!(in >> replica >> incarnation >> proof) || replica < 0 || incarnation < 0) {
        sendLine(fd, "ERROR expected HELLO <replica> <incarnation> <proof>");
        return;
    }
    // The proof: HMAC-SHA256(token, this connection's nonce, replica, incarnation).
    const std::string expected = helloProof(options.token, connections[fd].nonce, replica, incarnation);
    if (proof.size() != expected.size() ||
        !constantTimeEqual(reinterpret_cast<const uint8_t*>(proof.data()),
                           reinterpret_cast<const uint8_t*>(expected.data()), expected.size())) {
        connections[fd].refused = "HELLO as replica " + std::to_string(replica) +
                                  " refused: wrong or missing token (DTLAB_TOKEN or --token-file)";
        sendLine(fd, "ERROR " + connections[fd].refused);
        if (on_refused)
            pending_callbacks.push_back([cb = on_refused, why = connections[fd].refused] { cb(why); });
        return;
    }
    if (connections[fd].replica >= 0 && connections[fd].replica != replica) {
        sendLine(fd, "ERROR this connection already said HELLO as replica " +
                         std::to_string(connections[fd].replica));
        return;
    }
    auto known = members.find(replica);
    if (known != members.end() && incarnation < known->second.member.incarnation) {
        connections[fd].refused = "replica " + std::to_string(replica) + " incarnation " +
                                  std::to_string(incarnation) + " is stale: incarnation " +
                                  std::to_string(known->second.member.incarnation) + " has joined";
        sendLine(fd, "ERROR " + connections[fd].refused);
        return;
    }
    if (known != members.end() && known->second.fd >= 0 && known->second.fd != fd) {
        const int old_fd = known->second.fd;
        connections[old_fd].replica = -1; // its close must not touch the member
        sendLine(old_fd,
                 "ERROR replica " + std::to_string(replica) + " was taken over by a newer connection");
        closeConnection(old_fd, "taken over");
    }
    MemberRecord& record = members[replica];
    if (record.member.incarnation != incarnation || record.member.replica != replica) {
        // The old incarnation is gone. Detection by heartbeat may not have judged it yet (a quick
        // restart): it is lost now, once, so the loss is never silent.
        if (record.member.replica == replica && !record.left && !record.loss_reported)
            memberLost(record, "replaced by incarnation " + std::to_string(incarnation));
        record = MemberRecord{}; // a restarted process is a new member
        record.member.replica = replica;
        record.member.incarnation = incarnation;
    }
    record.fd = fd;
    record.waiting = false; // a reconnected client sends its request again
    record.last_heartbeat_ms = now;
    record.loss_reported = false;
    record.left = false;
    connections[fd].replica = replica;
    connections[fd].refused.clear();
}

void LighthouseServer::Impl::closeConnection(int fd, const std::string& why) {
    auto it = connections.find(fd);
    if (it == connections.end())
        return;
    const int replica = it->second.replica;
    connections.erase(it);
    ::close(fd);
    auto member = members.find(replica);
    if (member == members.end() || member->second.fd != fd)
        return;
    member->second.fd = -1;
    member->second.waiting = false;
    if (options.lost_on_close) // else its heartbeats stop, and checkHeartbeats reports it
        memberLost(member->second, why);
}

// Connected, as the quorum counts it: its socket is open; in heartbeat mode
// (TorchFT's lighthouse) also a member whose socket closed, unless it said
// BYE: then only its heartbeat's age (computeQuorum's healthy rule) judges it.
bool LighthouseServer::Impl::connectedForQuorum(const MemberRecord& record) const {
    return record.fd >= 0 || (!options.lost_on_close && !record.left);
}

void LighthouseServer::Impl::memberLost(MemberRecord& record, const std::string& why) {
    if (record.loss_reported || record.left)
        return;
    record.loss_reported = true;
    if (!on_member_lost)
        return;
    pending_callbacks.push_back(
        [callback = on_member_lost, member = record.member, why] { callback(member, why); });
}

void LighthouseServer::Impl::checkHeartbeats(int64_t now) {
    const int64_t forget_after_ms = kForgetAfterHeartbeatTimeouts * options.heartbeat_timeout_ms;
    for (auto it = members.begin(); it != members.end();) {
        MemberRecord& record = it->second;
        const int64_t age = now - record.last_heartbeat_ms;
        if (age >= options.heartbeat_timeout_ms)
            memberLost(record, "heartbeat " + std::to_string(age) + " ms old");
        if (record.fd < 0 && age > forget_after_ms) {
            it = members.erase(it); // gone for good: it no longer counts anywhere
            continue;
        }
        ++it;
    }
}

void LighthouseServer::Impl::decide(int64_t now) {
    const bool someone_waits =
        std::any_of(members.begin(), members.end(), [](const auto& entry) { return entry.second.waiting; });
    if (!someone_waits)
        return;
    // While the job is held, a request waits without ageing: the join timeout
    // counts from when the job runs again.
    if (held)
        for (auto& entry : members)
            if (entry.second.waiting)
                entry.second.waiting_since_ms = now;

    std::vector<MemberHealth> health;
    for (const auto& entry : members) {
        const MemberRecord& record = entry.second;
        MemberHealth h;
        h.member = record.member;
        h.heartbeat_age_ms = now - record.last_heartbeat_ms;
        h.connected = connectedForQuorum(record);
        h.waiting = record.waiting;
        h.waiting_since_ms = record.waiting_since_ms;
        health.push_back(h);
    }
    const QuorumDecision decision = computeQuorum(now, health, last_quorum, options, alive_holders);
    last_reason = decision.reason;
    if (!decision.issue)
        return;

    Quorum quorum;
    quorum.quorum_id = nextQuorumId(last_issued_id, decision);
    quorum.highest_step = highest_step;
    quorum.members = decision.participants;
    const std::string line = formatQuorumLine(quorum);

    std::vector<int> unwritable;
    for (const QuorumMember& participant : quorum.members) {
        MemberRecord& record = members[participant.replica];
        record.waiting = false;
        if (!sendLine(record.fd, line))
            unwritable.push_back(record.fd);
    }
    for (auto& entry : members) // a request left out carries over into the next round
        if (entry.second.waiting)
            entry.second.waiting_since_ms = now;
    for (int fd : unwritable)
        closeConnection(fd, "connection closed (cannot write)");

    last_quorum = quorum;
    last_issued_id = quorum.quorum_id;
    ++quorums_issued;
    if (on_quorum)
        pending_callbacks.push_back([callback = on_quorum, quorum, decision] { callback(quorum, decision); });
}

bool LighthouseServer::Impl::sendLine(int fd, const std::string& line) {
    const std::string bytes = line + "\n";
    // Non-blocking socket: a full socket buffer fails here instead of stalling the loop.
    return fd >= 0 && wire::sendAll(fd, bytes.data(), bytes.size());
}

LighthouseStatus LighthouseServer::Impl::statusLocked(int64_t now) const {
    LighthouseStatus status;
    status.running = is_running;
    status.quorum_id = last_quorum.quorum_id;
    status.highest_step = highest_step;
    status.quorums_issued = quorums_issued;
    status.quorum_members = last_quorum.members;
    for (const auto& entry : members) {
        const MemberRecord& record = entry.second;
        MemberHealth h;
        h.member = record.member;
        h.heartbeat_age_ms = now - record.last_heartbeat_ms;
        h.connected = connectedForQuorum(record);
        h.waiting = record.waiting;
        h.waiting_since_ms = record.waiting_since_ms;
        status.members.push_back(h);
    }
    status.last_reason = last_reason;
    return status;
}

// ---- the public class ----

LighthouseServer::LighthouseServer(LighthouseOptions options) : m_impl(std::make_unique<Impl>()) {
    m_impl->options = std::move(options);
}

LighthouseServer::~LighthouseServer() {
    stop();
}

void LighthouseServer::start() {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    Impl& s = *m_impl;
    if (s.is_running)
        return;
    int port = 0;
    s.listen_fd = wire::listenTcp(s.options.host, s.bound_port != 0 ? s.bound_port : s.options.port, &port);
    s.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s.wake_fd < 0) {
        ::close(s.listen_fd);
        s.listen_fd = -1;
        throw std::runtime_error("lighthouse: cannot create its wake eventfd");
    }
    ::fcntl(s.listen_fd, F_SETFL, ::fcntl(s.listen_fd, F_GETFL) | O_NONBLOCK);
    s.bound_port = port;
    // A restarted lighthouse knows nobody; only the quorum id counter survives.
    s.connections.clear();
    s.members.clear();
    s.last_quorum = Quorum{};
    s.quorums_issued = 0;
    s.highest_step = 0;
    s.last_reason.clear();
    s.stop_requested = false;
    s.is_running = true;
    s.loop_thread = std::thread([&s] { s.loop(); });
}

void LighthouseServer::stop() {
    Impl& s = *m_impl;
    DT_ENFORCE(std::this_thread::get_id() != s.loop_thread.get_id(),
               "LighthouseServer::stop() called from an onQuorum/onMemberLost callback; call it from another "
               "thread");
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        if (!s.is_running)
            return;
        s.stop_requested = true;
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t ignored = ::write(s.wake_fd, &one, sizeof(one));
    }
    s.loop_thread.join();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (const auto& entry : s.connections)
        ::close(entry.first);
    s.connections.clear();
    for (auto& entry : s.members)
        entry.second.fd = -1;
    ::close(s.listen_fd);
    ::close(s.wake_fd);
    s.listen_fd = s.wake_fd = -1;
    s.pending_callbacks.clear();
    s.is_running = false;
}

bool LighthouseServer::running() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->is_running;
}

int LighthouseServer::port() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->bound_port;
}

std::string LighthouseServer::address() const {
    return m_impl->options.host + ":" + std::to_string(port());
}

void LighthouseServer::setJobHeld(bool held) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    m_impl->held = held;
}

void LighthouseServer::setJobFrozen(bool frozen) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    Impl& impl = *m_impl;
    if (frozen && impl.frozen_since_ms < 0)
        impl.frozen_since_ms = nowMs();
    if (!frozen && impl.frozen_since_ms >= 0) {
        impl.frozen_total_ms += nowMs() - impl.frozen_since_ms;
        impl.frozen_since_ms = -1;
    }
}

void LighthouseServer::setAliveHolders(std::vector<AliveHolder> holders) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    m_impl->alive_holders = std::move(holders);
}

LighthouseStatus LighthouseServer::status() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->statusLocked(m_impl->jobNowMs());
}

void LighthouseServer::onQuorum(std::function<void(const Quorum&, const QuorumDecision&)> callback) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    m_impl->on_quorum = std::move(callback);
}

void LighthouseServer::onMemberLost(
    std::function<void(const QuorumMember&, const std::string& why)> callback) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    m_impl->on_member_lost = std::move(callback);
}

void LighthouseServer::onRefused(std::function<void(const std::string& why)> callback) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    m_impl->on_refused = std::move(callback);
}

} // namespace dt::ft
