// test_gloo_communicator.cpp: the Communicator over Gloo, ranks as threads of
// this process on one HashStore: every collective against a reference computed
// here, the Work records each rank emits, and failures surfacing as CommError.
#include "comm/communicator.hpp"
#include "comm/gloo_communicator.hpp"
#include "telemetry/event_sink.hpp"

#include "inprocess_gloo.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using dt::CommError;
using dt::CommErrorKind;
using dt::Communicator;
using dt::Event;
using dt::EventKind;
using dt::EventPhase;

namespace {

// Rank r's payload: distinct per rank and per element, exact in float32.
at::Tensor payload(int rank, int64_t numel) {
    return at::arange(numel, at::kFloat) * float(rank + 1) + float(100 * rank);
}

// Not exactly representable sums (the ring adds in another order than we do).
at::Tensor wavyPayload(int rank, int64_t numel) {
    return at::sin(at::arange(numel, at::kFloat) * 0.37f + float(rank) * 1.3f) * float(rank + 1);
}

std::vector<Event> workEvents(const dt::RecordingEventSink& sink, EventKind kind) {
    std::vector<Event> out;
    for (const auto& e : sink.events())
        if (e.kind == kind && dt::isWorkPhase(e.phase))
            out.push_back(e);
    return out;
}

// One recording sink per rank, handed to the group's options.
void recordEveryRank(int world, std::vector<std::unique_ptr<dt::RecordingEventSink>>& sinks,
                     dttest::GroupOptions& options) {
    for (int r = 0; r < world; ++r) {
        sinks.push_back(std::make_unique<dt::RecordingEventSink>());
        options.sinks.push_back(sinks.back().get());
    }
}

double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

} // namespace

TEST_CASE("Gloo collectives match a reference computed by hand", "[comm]") {
    const int world = GENERATE(1, 2, 3, 4);
    CAPTURE(world);

    SECTION("allReduce leaves the sum over ranks in every rank's tensor") {
        const int64_t n = 37;
        std::vector<at::Tensor> got(static_cast<size_t>(world));
        dttest::runGlooRanks(world, "allreduce", [&](int r, std::unique_ptr<Communicator>& comm) {
            auto x = payload(r, n);
            comm->allReduce(x)->wait();
            got[size_t(r)] = x;
        });
        auto expected = at::zeros({n}, at::kFloat);
        for (int r = 0; r < world; ++r)
            expected += payload(r, n);
        for (int r = 0; r < world; ++r) {
            CAPTURE(r);
            CHECK(at::equal(got[size_t(r)], expected));
        }
    }

    SECTION("allGather concatenates every rank's tensor in rank order") {
        const int64_t n = 5;
        std::vector<at::Tensor> got(static_cast<size_t>(world));
        dttest::runGlooRanks(world, "allgather", [&](int r, std::unique_ptr<Communicator>& comm) {
            auto out = at::full({world * n}, -1.0f, at::kFloat);
            comm->allGather(out, payload(r, n))->wait();
            got[size_t(r)] = out;
        });
        std::vector<at::Tensor> parts;
        for (int r = 0; r < world; ++r)
            parts.push_back(payload(r, n));
        const auto expected = at::cat(parts);
        for (int r = 0; r < world; ++r) {
            CAPTURE(r);
            CHECK(at::equal(got[size_t(r)], expected));
        }
    }

    SECTION("reduceScatter leaves rank r with chunk r of the sum") {
        const int64_t chunk = 6;
        const int64_t n = chunk * world;
        std::vector<at::Tensor> got(static_cast<size_t>(world));
        dttest::runGlooRanks(world, "reducescatter", [&](int r, std::unique_ptr<Communicator>& comm) {
            auto out = at::full({chunk}, -1.0f, at::kFloat);
            auto x = wavyPayload(r, n);
            const auto before = x.clone();
            comm->reduceScatter(out, x)->wait();
            got[size_t(r)] = out;
            if (!at::equal(x, before))
                throw std::runtime_error("reduceScatter modified its input");
        });
        auto sum = at::zeros({n}, at::kFloat);
        for (int r = 0; r < world; ++r)
            sum += wavyPayload(r, n);
        for (int r = 0; r < world; ++r) {
            CAPTURE(r);
            const auto expected = sum.narrow(0, r * chunk, chunk);
            const double max_diff = (got[size_t(r)] - expected).abs().max().item<double>();
            CAPTURE(max_diff);
            CHECK(max_diff < 1e-5); // float32 sums of <= 4 terms of magnitude <= 4
        }
    }

    SECTION("broadcast copies the root's tensor to every rank, from a non-zero root") {
        const int root = world - 1;
        const int64_t n = 11;
        std::vector<at::Tensor> got(static_cast<size_t>(world));
        dttest::runGlooRanks(world, "broadcast", [&](int r, std::unique_ptr<Communicator>& comm) {
            auto x = payload(r, n);
            comm->broadcast(x, root)->wait();
            got[size_t(r)] = x;
        });
        for (int r = 0; r < world; ++r) {
            CAPTURE(r, root);
            CHECK(at::equal(got[size_t(r)], payload(root, n)));
        }
    }

    SECTION("barrier holds every rank until the last one arrives") {
        // rank 0 arrives ~200 ms late; no rank may leave before rank 0 has called barrier().
        using Clock = std::chrono::steady_clock;
        Clock::time_point rank0_arrived;
        std::vector<Clock::time_point> left(static_cast<size_t>(world));
        dttest::runGlooRanks(world, "barrier", [&](int r, std::unique_ptr<Communicator>& comm) {
            comm->barrier()->wait(); // every rank has built its group
            if (r == 0) {
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                rank0_arrived = Clock::now();
            }
            auto work = comm->barrier();
            work->wait();
            left[size_t(r)] = Clock::now();
            if (work->state() != dt::CommWork::State::Completed)
                throw std::runtime_error("barrier not completed");
        });
        for (int r = 0; r < world; ++r) {
            CAPTURE(r);
            CHECK(left[size_t(r)] >= rank0_arrived);
        }
    }
}

TEST_CASE("Gloo send and recv move a tensor between two ranks", "[comm]") {
    const int world = GENERATE(2, 3);
    CAPTURE(world);
    const int64_t n = 9;
    std::vector<at::Tensor> got(static_cast<size_t>(world));
    dttest::runGlooRanks(world, "p2p", [&](int r, std::unique_ptr<Communicator>& comm) {
        // rank 0 -> last rank, then last rank -> rank 0 (a reply of twice the payload)
        const int last = world - 1;
        if (r == 0) {
            comm->send(payload(7, n), last)->wait();
            auto reply = at::zeros({n}, at::kFloat);
            comm->recv(reply, last)->wait();
            got[0] = reply;
        } else if (r == last) {
            auto in = at::zeros({n}, at::kFloat);
            comm->recv(in, 0)->wait();
            got[size_t(last)] = in.clone();
            comm->send(in * 2, 0)->wait();
        }
    });
    CHECK(at::equal(got[size_t(world - 1)], payload(7, n)));
    CHECK(at::equal(got[0], payload(7, n) * 2));
}

TEST_CASE("Every rank records the same Work records for one collective", "[comm]") {
    const int world = GENERATE(1, 2, 3, 4);
    CAPTURE(world);
    std::vector<std::unique_ptr<dt::RecordingEventSink>> sinks;
    dttest::GroupOptions options;
    recordEveryRank(world, sinks, options);
    const int64_t chunk = 4, n = chunk * world;
    dttest::runGlooRanks(
        world, "records",
        [&](int r, std::unique_ptr<Communicator>& comm) {
            auto a = payload(r, n);
            auto gathered = at::empty({world * n}, at::kFloat);
            auto scattered = at::empty({chunk}, at::kFloat);
            const dt::CommTag tag{7, 2, -1};
            std::vector<dt::CommWorkPtr> works;
            works.push_back(comm->allReduce(a, tag));                            // seq 0
            works.push_back(comm->allGather(gathered, payload(r, n), tag));      // seq 1
            works.push_back(comm->reduceScatter(scattered, payload(r, n), tag)); // seq 2
            works.push_back(comm->broadcast(a, 0, tag));                         // seq 3
            works.push_back(comm->barrier(tag));                                 // seq 4
            for (auto& w : works)
                w->wait();
        },
        options);

    struct Expect {
        EventKind kind;
        uint64_t seq;
        int64_t bytes;
    };
    const std::vector<Expect> expected{
        {EventKind::AllReduce, 0, n * 4},     {EventKind::AllGather, 1, n * 4},
        {EventKind::ReduceScatter, 2, n * 4}, {EventKind::Broadcast, 3, n * 4},
        {EventKind::Barrier, 4, 0},
    };
    for (int r = 0; r < world; ++r) {
        for (const auto& x : expected) {
            CAPTURE(r, dt::eventKindLabel(x.kind));
            const auto records = workEvents(*sinks[size_t(r)], x.kind);
            REQUIRE(records.size() == 3);
            CHECK(records[0].phase == EventPhase::WorkScheduled);
            CHECK(records[1].phase == EventPhase::WorkStarted);
            CHECK(records[2].phase == EventPhase::WorkCompleted);
            for (const auto& e : records) {
                CHECK(e.seq == x.seq);
                CHECK(e.bytes == x.bytes);
                CHECK(e.group_size == world);
                CHECK(e.rank == r);
                CHECK(e.step == 7);
                CHECK(e.unit == 2);
            }
            CHECK(records[0].t_ns <= records[1].t_ns);
            CHECK(records[1].t_ns <= records[2].t_ns);
        }
        // nothing else was recorded: 5 collectives x 3 records
        CHECK(sinks[size_t(r)]->events().size() == expected.size() * 3);
    }
}

TEST_CASE("The blocking forms run in issue order, behind queued async calls, with the same records",
          "[comm]") {
    const int world = GENERATE(1, 2, 3);
    CAPTURE(world);
    std::vector<std::unique_ptr<dt::RecordingEventSink>> sinks;
    dttest::GroupOptions options;
    recordEveryRank(world, sinks, options);
    const int64_t chunk = 3, n = chunk * world;
    const auto ranks = static_cast<size_t>(world);
    std::vector<at::Tensor> reduced_async(ranks), reduced_now(ranks), gathered(ranks), scattered(ranks),
        broadcast(ranks);
    dttest::runGlooRanks(
        world, "blocking",
        [&](int r, std::unique_ptr<Communicator>& comm) {
            // An async all-reduce left queued, then the blocking forms: each must
            // wait its turn behind it (seq 0), then run in the order called.
            auto a = payload(r, n);
            auto queued = comm->allReduce(a); // seq 0
            auto b = wavyPayload(r, n);
            comm->allReduceNow(b); // seq 1
            auto out = at::empty({world * n}, at::kFloat);
            comm->allGatherNow(out, payload(r, n)); // seq 2
            auto part = at::empty({chunk}, at::kFloat);
            comm->reduceScatterNow(part, payload(r, n)); // seq 3
            auto c = payload(r, n);
            comm->broadcastNow(c, world - 1); // seq 4
            comm->barrierNow();               // seq 5
            if (!queued->isCompleted())
                throw std::runtime_error("a later blocking call finished before seq 0");
            queued->wait();
            reduced_async[size_t(r)] = a;
            reduced_now[size_t(r)] = b;
            gathered[size_t(r)] = out;
            scattered[size_t(r)] = part;
            broadcast[size_t(r)] = c;
        },
        options);

    auto sum = [&](auto make) {
        auto s = at::zeros({n}, at::kFloat);
        for (int r = 0; r < world; ++r)
            s += make(r, n);
        return s;
    };
    std::vector<at::Tensor> parts;
    for (int r = 0; r < world; ++r)
        parts.push_back(payload(r, n));
    for (int r = 0; r < world; ++r) {
        CAPTURE(r);
        CHECK(at::equal(reduced_async[size_t(r)], sum(payload)));
        CHECK((reduced_now[size_t(r)] - sum(wavyPayload)).abs().max().item<double>() < 1e-5);
        CHECK(at::equal(gathered[size_t(r)], at::cat(parts)));
        CHECK(at::equal(scattered[size_t(r)], sum(payload).narrow(0, r * chunk, chunk)));
        CHECK(at::equal(broadcast[size_t(r)], payload(world - 1, n)));

        // Scheduled, Started, Completed for seq 0..5, and each starts only
        // after the one before it completed (one job at a time, in order).
        std::vector<Event> records;
        for (const auto& e : sinks[size_t(r)]->events())
            if (dt::isWorkPhase(e.phase))
                records.push_back(e);
        REQUIRE(records.size() == 6 * 3);
        for (uint64_t seq = 0; seq < 6; ++seq) {
            CAPTURE(seq);
            std::vector<Event> mine;
            for (const auto& e : records)
                if (e.seq == seq)
                    mine.push_back(e);
            REQUIRE(mine.size() == 3);
            CHECK(mine[0].phase == EventPhase::WorkScheduled);
            CHECK(mine[1].phase == EventPhase::WorkStarted);
            CHECK(mine[2].phase == EventPhase::WorkCompleted);
            if (seq > 0) {
                const Event* previous_done = nullptr;
                for (const auto& e : records)
                    if (e.seq == seq - 1 && e.phase == EventPhase::WorkCompleted)
                        previous_done = &e;
                REQUIRE(previous_done != nullptr);
                CHECK(previous_done->t_ns <= mine[1].t_ns);
            }
        }
    }
}

TEST_CASE("Point-to-point Work records are numbered per peer", "[comm]") {
    const int world = 3;
    std::vector<std::unique_ptr<dt::RecordingEventSink>> sinks;
    dttest::GroupOptions options;
    recordEveryRank(world, sinks, options);
    dttest::runGlooRanks(
        world, "p2pseq",
        [&](int r, std::unique_ptr<Communicator>& comm) {
            auto x = at::ones({3}, at::kFloat);
            if (r == 0) {
                comm->send(x, 1)->wait(); // to 1: seq 0
                comm->send(x, 2)->wait(); // to 2: seq 0
                comm->send(x, 1)->wait(); // to 1: seq 1
            } else if (r == 1) {
                comm->recv(x, 0)->wait();
                comm->recv(x, 0)->wait();
            } else {
                comm->recv(x, 0)->wait();
            }
        },
        options);
    auto completed = [&](int rank, EventKind kind) {
        std::vector<std::pair<int, uint64_t>> out; // (peer, seq)
        for (const auto& e : workEvents(*sinks[size_t(rank)], kind))
            if (e.phase == EventPhase::WorkCompleted)
                out.emplace_back(e.peer, e.seq);
        return out;
    };
    using P = std::vector<std::pair<int, uint64_t>>;
    CHECK(completed(0, EventKind::Send) == P{{1, 0}, {2, 0}, {1, 1}});
    CHECK(completed(1, EventKind::Recv) == P{{0, 0}, {0, 1}});
    CHECK(completed(2, EventKind::Recv) == P{{0, 0}});
}

TEST_CASE("A failed collective surfaces as CommError from CommWork::wait", "[comm]") {
    using Clock = std::chrono::steady_clock;

    SECTION("a peer that never joins the collective times out") {
        dt::RecordingEventSink sink0;
        dttest::GroupOptions options;
        options.timeout = std::chrono::milliseconds(500);
        options.sinks = {&sink0, nullptr};
        bool threw = false;
        CommErrorKind kind = CommErrorKind::Other;
        std::string message;
        double elapsed = -1;
        dttest::runGlooRanks(
            2, "timeout",
            [&](int r, std::unique_ptr<Communicator>& comm) {
                if (r != 0)
                    return; // rank 1 formed the group but never calls the all-reduce
                auto x = at::ones({16}, at::kFloat);
                const auto start = Clock::now();
                auto work = comm->allReduce(x);
                try {
                    work->wait();
                } catch (const CommError& e) {
                    threw = true;
                    kind = e.kind();
                    message = e.what();
                }
                elapsed = seconds(start);
                if (work->state() != dt::CommWork::State::Failed)
                    throw std::runtime_error("work not Failed");
            },
            options);
        CAPTURE(message, elapsed);
        REQUIRE(threw);
        CHECK(kind == CommErrorKind::Timeout);
        CHECK_THAT(message, Catch::Matchers::Contains("all-reduce"));
        CHECK(elapsed >= 0.4);
        CHECK(elapsed < 10.0);
        const auto records = workEvents(sink0, EventKind::AllReduce);
        REQUIRE(records.size() == 3);
        CHECK(records[2].phase == EventPhase::WorkFailed);
    }

    SECTION("a peer that leaves the group is reported, well before the timeout") {
        bool threw = false;
        CommErrorKind kind = CommErrorKind::Other;
        std::string message;
        double elapsed = -1;
        dttest::GroupOptions options;
        options.timeout = std::chrono::milliseconds(8000);
        dttest::runGlooRanks(
            2, "peerlost",
            [&](int r, std::unique_ptr<Communicator>& comm) {
                if (r == 1) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                    comm.reset(); // tears down its Gloo context: connections close
                    return;
                }
                auto x = at::ones({16}, at::kFloat);
                const auto start = Clock::now();
                try {
                    comm->allReduce(x)->wait();
                } catch (const CommError& e) {
                    threw = true;
                    kind = e.kind();
                    message = e.what();
                }
                elapsed = seconds(start);
            },
            options);
        CAPTURE(message, elapsed);
        REQUIRE(threw);
        CHECK(kind == CommErrorKind::PeerLost);
        CHECK(elapsed < 6.0);
    }

    SECTION("work queued on a communicator that shuts down fails") {
        bool threw = false;
        std::string message;
        dttest::runGlooRanks(1, "shutdown", [&](int, std::unique_ptr<Communicator>& comm) {
            comm->shutdown();
            auto work = comm->allReduce(at::ones({4}, at::kFloat));
            try {
                work->wait();
            } catch (const CommError& e) {
                threw = true;
                message = e.what();
            }
        });
        REQUIRE(threw);
        CHECK_THAT(message, Catch::Matchers::Contains("shut down"));
    }
}

TEST_CASE("Rendezvous fails with CommError when a rank never shows up", "[comm]") {
    auto store = c10::make_intrusive<c10d::HashStore>();
    store->setTimeout(std::chrono::milliseconds(500));
    dt::GlooOptions gloo;
    gloo.prefix = dttest::uniqueGroupPrefix("missing");
    gloo.timeout = std::chrono::milliseconds(500);
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(dt::makeGlooCommunicator(store, 0, 2, gloo, nullptr), CommError);
    CHECK(seconds(start) < 10.0);
}

TEST_CASE("A call issued after another group's Work starts once that Work is done, and fails with it",
          "[comm]") {
    // HSDP's order: a unit's all-reduce over the replicate group is issued right
    // after its reduce-scatter over the shard group and must not start before
    // it. Here: an all-reduce on a second group of the same two ranks, issued
    // with after = an all-reduce of the first group.
    auto store = c10::make_intrusive<c10d::HashStore>();
    const std::string second_prefix = dttest::uniqueGroupPrefix("after-second");

    SECTION("it starts after the other Work completed and reads what that Work wrote") {
        std::vector<std::unique_ptr<dt::RecordingEventSink>> sinks;
        dttest::GroupOptions options;
        recordEveryRank(2, sinks, options);
        std::vector<std::unique_ptr<dt::RecordingEventSink>> second_sinks;
        for (int r = 0; r < 2; ++r)
            second_sinks.push_back(std::make_unique<dt::RecordingEventSink>());
        std::vector<float> result(2, 0.0f);
        dttest::Latch done(2);
        dttest::runGlooRanks(
            2, "after-first",
            [&](int r, std::unique_ptr<Communicator>& first) {
                dt::GlooOptions o;
                o.prefix = second_prefix;
                auto second = dt::makeGlooCommunicator(store, r, 2, o, second_sinks[size_t(r)].get());
                auto x = at::full({1024}, float(r + 1), at::kFloat);
                auto a = first->allReduce(x);                    // x = 1 + 2 = 3
                auto b = second->allReduce(x, dt::CommTag{}, a); // x = 3 + 3 = 6, only after a
                b->wait();
                result[size_t(r)] = x[0].item<float>();
                done.arriveAndWait(); // no rank tears its second group down under its peer
            },
            options);
        for (int r = 0; r < 2; ++r) {
            CAPTURE(r);
            CHECK(result[size_t(r)] == 6.0f); // the sum of the sums: a's result went into b
            const auto a = workEvents(*sinks[size_t(r)], EventKind::AllReduce);
            const auto b = workEvents(*second_sinks[size_t(r)], EventKind::AllReduce);
            REQUIRE(a.size() == 3);
            REQUIRE(b.size() == 3);
            CHECK(a[2].phase == EventPhase::WorkCompleted);
            CHECK(b[1].phase == EventPhase::WorkStarted);
            CHECK(b[1].t_ns >= a[2].t_ns); // started only after a completed
        }
    }

    SECTION("when the other Work fails, the call fails with its error") {
        dttest::GroupOptions options;
        options.timeout = std::chrono::milliseconds(500);
        bool threw = false;
        CommErrorKind kind = CommErrorKind::Other;
        std::string message;
        dttest::Latch done(2);
        dttest::runGlooRanks(
            2, "after-fails",
            [&](int r, std::unique_ptr<Communicator>& first) {
                dt::GlooOptions o;
                o.prefix = second_prefix;
                o.timeout = std::chrono::milliseconds(1000);
                auto second = dt::makeGlooCommunicator(store, r, 2, o, nullptr);
                if (r == 1) { // joins the second group's all-reduce only, which rank 0's never runs
                    auto y = at::ones({16}, at::kFloat);
                    try {
                        second->allReduce(y)->wait();
                    } catch (const CommError&) {
                    }
                }
                if (r == 0) { // rank 1 never joins the first all-reduce: it times out
                    auto x = at::ones({16}, at::kFloat);
                    auto a = first->allReduce(x);
                    auto b = second->allReduce(x, dt::CommTag{}, a);
                    try {
                        b->wait();
                    } catch (const CommError& e) {
                        threw = true;
                        kind = e.kind();
                        message = e.what();
                    }
                }
                done.arriveAndWait();
            },
            options);
        CAPTURE(message);
        REQUIRE(threw);
        CHECK(kind == CommErrorKind::Timeout);
        CHECK_THAT(message, Catch::Matchers::Contains("all-reduce"));
    }
}
