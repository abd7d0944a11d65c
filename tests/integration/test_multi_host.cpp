// test_multi_host.cpp: ranks on two hosts. The hosts are two Linux network
// namespaces joined by a veth pair (10.X.0.1 <-> 10.X.0.2), each rank in its
// own UTS namespace with the host name hostA or hostB:
//
//   namespace A: dtrun run --external --listen 10.X.0.1 --token-file T,
//                ranks 0 and 1
//   namespace B: ranks 2 and 3 (dtrun worker --join 10.X.0.1:PORT)
//
// Nothing is shared but the link, so everything the ranks say goes over it:
// the TCPStore, the authenticated telemetry, the Gloo ring. Then the link is
// taken down mid-run (after 20 MB of training traffic crossed it): for 1.5 s,
// which TCP rides out, and for good, which must end the run with a reason that
// names the silent host, and with every rank gone.
//
// Creating namespaces needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN); elsewhere the
// test says why and passes without running.
#include "process_helpers.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <memory>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

const std::vector<std::string> kLauncherVariables{
    "RANK",        "WORLD_SIZE",           "LOCAL_RANK",           "MASTER_ADDR",
    "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "DTLAB_TOKEN"};

it::ProcessResult ip(const std::vector<std::string>& args) {
    std::vector<std::string> argv{it::findInPath("ip")}; // the helpers exec a full path
    argv.insert(argv.end(), args.begin(), args.end());
    return it::runProcess(argv, it::ProcessOptions{{}, {}, 20.0, ""});
}

// Two namespaces and the veth pair between them; removed (with any process
// still inside) by the destructor.
class TwoHosts {
  public:
    TwoHosts() {
        const std::string id = std::to_string(getpid());
        m_ns = {"dtlab-" + id + "-a", "dtlab-" + id + "-b"};
        const std::string subnet = "10." + std::to_string(100 + getpid() % 150) + ".0.";
        m_address = {subnet + "1", subnet + "2"};
        m_link = {"dtv" + id + "a", "dtv" + id + "b"}; // at most 15 characters
        if (geteuid() != 0) {
            m_skip = "creating network namespaces needs root";
            return;
        }
        if (it::findInPath("ip").empty() || it::findInPath("unshare").empty()) {
            m_skip = "the ip and unshare commands (iproute2, util-linux) are not on PATH";
            return;
        }
        const std::vector<std::vector<std::string>> steps{
            {"netns", "add", m_ns[0]},
            {"netns", "add", m_ns[1]},
            {"link", "add", m_link[0], "type", "veth", "peer", "name", m_link[1]},
            {"link", "set", m_link[0], "netns", m_ns[0]},
            {"link", "set", m_link[1], "netns", m_ns[1]},
            {"-n", m_ns[0], "addr", "add", m_address[0] + "/24", "dev", m_link[0]},
            {"-n", m_ns[1], "addr", "add", m_address[1] + "/24", "dev", m_link[1]},
            {"-n", m_ns[0], "link", "set", "lo", "up"},
            {"-n", m_ns[1], "link", "set", "lo", "up"},
            {"-n", m_ns[0], "link", "set", m_link[0], "up"},
            {"-n", m_ns[1], "link", "set", m_link[1], "up"},
        };
        for (const auto& step : steps) {
            const auto r = ip(step);
            if (r.exit_code != 0) {
                std::string command = "ip";
                for (const auto& a : step)
                    command += " " + a;
                m_skip = "'" + command + "' failed (no permission to create network namespaces?): " + r.err;
                return;
            }
        }
    }
    ~TwoHosts() {
        for (const auto& ns : m_ns)
            (void)ip({"netns", "del", ns}); // also removes the veth pair
    }
    TwoHosts(const TwoHosts&) = delete;
    TwoHosts& operator=(const TwoHosts&) = delete;

    [[nodiscard]] const std::string& skipReason() const { return m_skip; }
    [[nodiscard]] const std::string& address(int host) const { return m_address[size_t(host)]; }

    // argv that runs `command` inside host `host` with the host name `name`.
    [[nodiscard]] std::vector<std::string> inHost(int host, const std::string& name,
                                                  const std::vector<std::string>& command) const {
        std::vector<std::string> argv{it::findInPath("ip"),
                                      "netns",
                                      "exec",
                                      m_ns[size_t(host)],
                                      "unshare",
                                      "--uts",
                                      "sh",
                                      "-c",
                                      "hostname \"$0\" && exec \"$@\"",
                                      name};
        argv.insert(argv.end(), command.begin(), command.end());
        return argv;
    }

    // Bytes host B has sent over its end of the link.
    [[nodiscard]] long long bytesSentByHostB() const {
        const auto r = it::runProcess({it::findInPath("ip"), "netns", "exec", m_ns[1], "cat",
                                       "/sys/class/net/" + m_link[1] + "/statistics/tx_bytes"},
                                      it::ProcessOptions{{}, {}, 10.0, ""});
        return r.exit_code == 0 ? std::atoll(r.out.c_str()) : -1;
    }

    // Takes host B's end of the link down (or up again).
    void setLinkUp(bool up) const {
        const auto r = ip({"-n", m_ns[1], "link", "set", m_link[1], up ? "up" : "down"});
        REQUIRE(r.exit_code == 0);
    }

  private:
    std::vector<std::string> m_ns, m_address, m_link;
    std::string m_skip;
};

// A 4-rank DDP run split over the two hosts: the Session and ranks 0, 1 on
// host A (hostA), ranks 2, 3 on host B (hostB).
struct SplitRun {
    std::string summary;
    std::unique_ptr<it::Process> session;
    std::vector<std::unique_ptr<it::Process>> ranks;

    SplitRun(const TwoHosts& hosts, const it::TempDir& dir, int steps, double timeout_s) {
        it::ScenarioSpec spec;
        spec.name = "two hosts";
        spec.ranks = 4;
        spec.steps = steps;
        spec.timeout_s = timeout_s;
        const std::string scenario = dir.write("two_hosts.toml", it::scenarioToml(spec));
        const std::string token = dir.write("token", "two-hosts-token-4711\n");
        REQUIRE(chmod(token.c_str(), 0600) == 0);
        summary = dir.file("summary.json");
        const it::ProcessOptions options{{}, kLauncherVariables, 180.0, ""};
        const int port = 29000 + getpid() % 1000; // the namespace is fresh: nothing else listens there
        session = std::make_unique<it::Process>(
            hosts.inHost(0, "hostA",
                         {it::dtrunPath(), "run", scenario, "--external", "--listen", hosts.address(0),
                          "--port", std::to_string(port), "--token-file", token, "--summary", summary}),
            options);
        REQUIRE(it::waitFor(
            [&] { return contains(session->stderrSoFar(), "waiting for ranks") || !session->running(); },
            60.0));
        INFO("dtrun: " << session->stderrSoFar());
        REQUIRE(session->running());
        const std::string join = hosts.address(0) + ":" + std::to_string(port);
        for (int rank = 0; rank < 4; ++rank) {
            const int host = rank < 2 ? 0 : 1;
            ranks.push_back(std::make_unique<it::Process>(
                hosts.inHost(host, host == 0 ? "hostA" : "hostB",
                             {it::dtrunPath(), "worker", "--rank", std::to_string(rank), "--world", "4",
                              "--join", join, "--token-file", token}),
                options));
        }
    }
};

} // namespace

TEST_CASE("Ranks on two hosts train together, ride out a short link loss and report a long one",
          "[multihost]") {
    TwoHosts hosts;
    if (!hosts.skipReason().empty()) {
        WARN("multi-host test not run: " << hosts.skipReason());
        return;
    }
    it::TempDir dir("dtlab-multihost");

    SECTION("Four ranks on two hosts finish with the same weights, each reporting its own host") {
        SplitRun run(hosts, dir, 5, 30.0);
        const auto result = run.session->wait(120.0);
        INFO(it::describe(result));
        REQUIRE(result.exit_code == 0);
        const auto summary = it::readJsonFile(run.summary);
        CHECK(summary["ok"] == true);
        CHECK(summary["steps"] == 5);
        std::vector<std::string> reported;
        for (const auto& e : summary["exit"])
            reported.push_back(e["host"]);
        CHECK(reported == std::vector<std::string>{"hostA", "hostA", "hostB", "hostB"});
        const auto& checksums = summary["params_checksum"];
        for (const auto& c : checksums)
            CHECK(c == checksums[0]);
        for (auto& rank : run.ranks)
            CHECK(rank->wait(30.0).exit_code == 0);
        CHECK(hosts.bytesSentByHostB() > 5'000'000); // the Gloo ring really crossed the link
    }

    SECTION("A link down for 1.5 s mid-run is ridden out: TCP retransmits and every step completes") {
        SplitRun run(hosts, dir, 16, 10.0);
        REQUIRE(it::waitFor([&] { return hosts.bytesSentByHostB() > 20'000'000 || !run.session->running(); },
                            120.0));
        REQUIRE(run.session->running());
        hosts.setLinkUp(false);
        it::sleepSeconds(1.5);
        hosts.setLinkUp(true);
        const auto result = run.session->wait(120.0);
        INFO(it::describe(result));
        CHECK(result.exit_code == 0);
        const auto summary = it::readJsonFile(run.summary);
        CHECK(summary["steps"] == 16);
        // The loss shows as one slow step: the longest gap between step ends.
        double longest = 0.0, previous = 0.0;
        for (const auto& end : summary["step_end_s_by_step"]) {
            longest = std::max(longest, end.get<double>() - previous);
            previous = end.get<double>();
        }
        CAPTURE(longest);
        CHECK(longest > 1.0);
    }

    SECTION("A link that stays down fails the run, names the silent host, and every rank exits on its own") {
        SplitRun run(hosts, dir, 200, 3.0);
        REQUIRE(it::waitFor([&] { return hosts.bytesSentByHostB() > 20'000'000 || !run.session->running(); },
                            120.0));
        REQUIRE(run.session->running());
        const double down_at = it::monotonicSeconds();
        hosts.setLinkUp(false);
        const auto result = run.session->wait(90.0);
        const double session_took = it::monotonicSeconds() - down_at;
        INFO(it::describe(result));
        CAPTURE(session_took);
        CHECK(result.exit_code == 1);
        CHECK_FALSE(result.timed_out);
        const auto summary = it::readJsonFile(run.summary);
        const std::string reason = summary["failure_reason"];
        CAPTURE(reason);
        INFO("each rank's exit: " << summary["exit"].dump()); // who failed first, and how
        CHECK(summary["ok"] == false);
        CHECK(contains(reason, "timed out"));
        CHECK(contains(reason, "no word from ranks 2, 3 on hostB"));
        // timeout_s for the collective, timeout_s + 5 s of grace, 3 s for joined ranks to leave.
        CHECK(session_took < 3.0 + 8.0 + 3.0 + 10.0);
        // Host B's ranks cannot be reached, so nobody kills them: their own
        // Gloo timeout must end them.
        for (int rank = 2; rank < 4; ++rank) {
            const auto r = run.ranks[size_t(rank)]->wait(60.0);
            INFO("rank " << rank << ": " << it::describe(r));
            CHECK_FALSE(r.timed_out);
            CHECK(r.exit_code != 0);
        }
    }
}

namespace {

// The TCP sockets listening in a host: "address:port" for IPv4 (from
// /proc/net/tcp, read inside the host's namespace), "[v6]:port" for IPv6.
std::vector<std::string> listeningSockets(const TwoHosts& hosts, int host) {
    std::vector<std::string> found;
    for (const std::string table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        const auto r = it::runProcess(hosts.inHost(host, "probe", {it::findInPath("cat"), table}),
                                      it::ProcessOptions{{}, {}, 10.0, ""});
        std::istringstream lines(r.out);
        std::string line;
        std::getline(lines, line); // header
        while (std::getline(lines, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state;
            fields >> slot >> local >> remote >> state;
            if (state != "0A") // TCP_LISTEN
                continue;
            const auto colon = local.find(':');
            const int port = std::stoi(local.substr(colon + 1), nullptr, 16);
            if (table == "/proc/net/tcp6") {
                found.push_back("[" + local.substr(0, colon) + "]:" + std::to_string(port));
                continue;
            }
            const unsigned long raw =
                std::stoul(local.substr(0, colon), nullptr, 16); // network order, as read
            found.push_back(std::to_string(raw & 0xff) + "." + std::to_string((raw >> 8) & 0xff) + "." +
                            std::to_string((raw >> 16) & 0xff) + "." + std::to_string(raw >> 24) + ":" +
                            std::to_string(port));
        }
    }
    return found;
}

// True if a TCP connection from host `from` to address:port succeeds.
bool canConnect(const TwoHosts& hosts, int from, const std::string& address, int port) {
    const auto r = it::runProcess(hosts.inHost(from, "probe",
                                               {it::findInPath("bash"), "-c",
                                                "exec 3<>/dev/tcp/" + address + "/" + std::to_string(port)}),
                                  it::ProcessOptions{{}, {}, 10.0, ""});
    return r.exit_code == 0;
}

} // namespace

TEST_CASE("A run's services listen on loopback only, and another host reaches none of them", "[multihost]") {
    TwoHosts hosts;
    if (!hosts.skipReason().empty()) {
        WARN("loopback test not run: " << hosts.skipReason());
        return;
    }
    it::TempDir dir("dtlab-loopback");
    // A fault-tolerant run, so every kind of service is up: the rendezvous
    // store, the telemetry collector, the lighthouse, and the ranks' Gloo pairs.
    it::ScenarioSpec spec;
    spec.name = "loopback only";
    spec.ranks = 2;
    spec.steps = 400;
    spec.extra_toml = "[fault_tolerance]\nenabled = true\nmin_replicas = 1\n";
    const std::string scenario = dir.write("loopback.toml", it::scenarioToml(spec));
    const std::string summary = dir.file("summary.json");
    const int store_port = 29000 + getpid() % 1000; // the namespace is fresh: nothing else listens there
    it::Process session(hosts.inHost(0, "hostA",
                                     {it::dtrunPath(), "run", scenario, "--port", std::to_string(store_port),
                                      "--summary", summary}),
                        it::ProcessOptions{{}, kLauncherVariables, 180.0, ""});
    // Wait until the store, the collector and the lighthouse listen, then
    // until the ranks train (anything they listen on is seen too).
    std::vector<std::string> listening;
    REQUIRE(it::waitFor(
        [&] {
            listening = listeningSockets(hosts, 0);
            return listening.size() >= 3 || !session.running();
        },
        60.0));
    it::sleepSeconds(2.0);
    listening = listeningSockets(hosts, 0);
    CHECK(listening.size() >= 3);
    INFO("dtrun: " << session.stderrSoFar());
    REQUIRE(session.running());
    CAPTURE(listening);
    // The probe itself works: the store answers on loopback inside host A.
    // (Only the store is probed from inside: a stray connection to a Gloo
    // pair's listener could break the ring.)
    CHECK(canConnect(hosts, 0, "127.0.0.1", store_port));
    for (const std::string& socket : listening) {
        CHECK(socket.rfind("127.0.0.1:", 0) == 0); // nothing on 0.0.0.0, 10.X.0.1 or IPv6
        const int port = std::stoi(socket.substr(socket.rfind(':') + 1));
        CHECK_FALSE(canConnect(hosts, 1, hosts.address(0), port)); // host B is refused on every port
    }
    // The ranks trained through those loopback services; the rest of the run
    // adds nothing, so it is stopped (as Ctrl-C does: exit 1, "interrupted").
    session.signal(SIGINT);
    const auto result = session.wait(120.0);
    INFO(it::describe(result));
    CHECK(result.exit_code == 1);
    CHECK(result.err.find("interrupted by") != std::string::npos);
    const auto s = it::readJsonFile(summary);
    CHECK(s["steps"].get<int>() >= 1);
    CHECK(it::waitForNoWorkers(10.0).empty());
}
