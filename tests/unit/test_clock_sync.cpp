// test_clock_sync.cpp: the clock filter and drift fit (telemetry/clock_sync.hpp)
// against made-up clocks whose true offset and drift are known: the estimate's
// real error always within its bound, delayed samples losing to prompt ones,
// the drift found within its standard errors; the same host is exact; the
// DTLAB_CLOCK_SKEW text.
#include "telemetry/clock_sync.hpp"

#include "dtlab/errors.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>

namespace {

// A rank host's clock: local = session + offset + drift x session.
struct FakeHost {
    double offset_ns;
    double drift; // ns per ns
    [[nodiscard]] int64_t localAt(double session_ns) const {
        return int64_t(std::llround(session_ns + offset_ns + drift * session_ns));
    }
    // The true "session - local" at local time t (what ClockEstimate::offset_ns estimates).
    [[nodiscard]] double trueOffsetAtLocal(double local_ns) const {
        const double session = (local_ns - offset_ns) / (1.0 + drift);
        return session - local_ns;
    }
};

// One ping-pong at session time s: the ping takes `up` ns, the pong `down` ns.
dt::ClockSample pingPong(const FakeHost& host, double s, double up, double down) {
    dt::ClockSample sample;
    sample.t_send_ns = host.localAt(s);
    sample.t_session_ns = int64_t(std::llround(s + up));
    sample.t_recv_ns = host.localAt(s + up + down);
    return sample;
}

} // namespace

TEST_CASE("ClockSync estimates another host's clock within the bound it reports", "[clock]") {
    SECTION("the same host is exact: offset 0, error 0, samples ignored") {
        dt::ClockSync sync;
        sync.setSameHost();
        sync.addSample(dt::ClockSample{100, 5'000'000, 300});
        const dt::ClockEstimate e = sync.estimateAt(1000);
        CHECK(e.same_host);
        CHECK(e.offset_ns == 0);
        CHECK(e.error_bound_ns == 0);
    }

    SECTION("one symmetric ping-pong gives the offset exactly, the bound is half the round trip") {
        const FakeHost host{250e6, 0.0};
        dt::ClockSync sync;
        sync.addSample(pingPong(host, 1e9, 40'000, 40'000));
        const dt::ClockEstimate e = sync.estimateAt(host.localAt(1e9 + 80'000));
        CHECK(e.offset_ns == Approx(-250e6).margin(2));
        CHECK(e.error_bound_ns == 40'000);
        CHECK(e.round_trip_ns == 80'000);
        CHECK_FALSE(e.drift_ppm.has_value());
    }

    SECTION("an asymmetric path is still within the bound (Cristian's argument)") {
        const FakeHost host{-3e6, 0.0};
        dt::ClockSync sync;
        sync.addSample(pingPong(host, 5e9, 90'000, 10'000)); // all the delay one way
        const int64_t local = host.localAt(5e9 + 100'000);
        const dt::ClockEstimate e = sync.estimateAt(local);
        const double error = std::fabs(double(e.offset_ns) - host.trueOffsetAtLocal(double(local)));
        CAPTURE(e.offset_ns, e.error_bound_ns, error);
        CHECK(error > 30'000); // the asymmetry shows
        CHECK(error <= double(e.error_bound_ns));
    }

    SECTION("a sample delayed in a queue loses to a prompt one (the clock filter)") {
        const FakeHost host{1e6, 0.0};
        dt::ClockSync sync;
        sync.addSample(pingPong(host, 1e9, 20'000, 20'000));
        sync.addSample(pingPong(host, 2e9, 5'000'000, 20'000)); // 5 ms stuck on the way out
        const dt::ClockEstimate e = sync.estimateAt(host.localAt(2.1e9));
        CHECK(e.round_trip_ns == 40'000);
        CHECK(std::fabs(double(e.offset_ns) + 1e6) <= double(e.error_bound_ns));
    }

    SECTION("a drifting clock: the drift is measured, and the real error never exceeds the bound") {
        const FakeHost host{-70e6, 40e-6}; // 70 ms behind, 40 ppm fast
        std::mt19937 rng(7);
        std::uniform_real_distribution<double> delay(20'000, 120'000); // 20..120 us each way
        std::bernoulli_distribution queued(0.2);                       // sometimes 2 ms more
        dt::ClockSync sync;
        int checked = 0, over = 0;
        int corrections_over = 0;
        for (double s = 1e9; s < 61e9; s += double(dt::ClockSync::kResyncNs)) {
            const double up = delay(rng) + (queued(rng) ? 2e6 : 0.0), down = delay(rng);
            sync.addSample(pingPong(host, s, up, down));
            // What a sender applies until the next sync (TelemetrySender::now()).
            const dt::ClockCorrection correction = sync.correctionAt(host.localAt(s + up + down));
            // Between this sync and the next, at a few moments:
            for (double later : {0.1e9, 0.6e9, 1.2e9}) {
                const int64_t local = host.localAt(s + up + down + later);
                const dt::ClockEstimate e = sync.estimateAt(local);
                const double truth = host.trueOffsetAtLocal(double(local));
                const double error = std::fabs(double(e.offset_ns) - truth);
                const double carried = std::fabs(double(correction.sessionTime(local) - local) - truth);
                ++checked;
                if (error > double(e.error_bound_ns))
                    ++over;
                if (carried > double(e.error_bound_ns))
                    ++corrections_over;
            }
        }
        CHECK(checked > 100);
        CHECK(over == 0);
        CHECK(corrections_over == 0);
        // A clock 40 ppm fast: its offset (Session - local) falls 40 ns every ms.
        CHECK(sync.correctionAt(host.localAt(61e9)).offset_slope == Approx(-40e-6).margin(1e-6));
        const dt::ClockEstimate e = sync.estimateAt(host.localAt(61e9));
        REQUIRE(e.drift_ppm.has_value());
        CAPTURE(*e.drift_ppm, e.bound_growth_ppm);
        CHECK(*e.drift_ppm == Approx(40.0).margin(1.0));
        CHECK(e.bound_growth_ppm < 5.0); // measured: far below the unmeasured 100 ppm
        CHECK(e.error_bound_ns < 200'000);
    }

    SECTION("no drift is claimed before the samples span 10 s; the bound then assumes 100 ppm") {
        const FakeHost host{0.0, 10e-6};
        dt::ClockSync sync;
        for (double s = 1e9; s < 8e9; s += 1e9)
            sync.addSample(pingPong(host, s, 30'000, 30'000));
        const dt::ClockEstimate e = sync.estimateAt(host.localAt(8e9));
        CHECK_FALSE(e.drift_ppm.has_value());
        CHECK(e.bound_growth_ppm == dt::ClockSync::kUnmeasuredDriftPpm);
        // 1 s after the last sample: 30 us + 100 ppm x ~1 s
        CHECK(e.error_bound_ns == Approx(30'000 + 100'000).margin(500));
    }
}

TEST_CASE("DTLAB_CLOCK_SKEW is read as OFFSET_MS[,DRIFT_PPM] and anything else is refused", "[clock]") {
    SECTION("an offset alone, and an offset with a drift") {
        CHECK(dt::parseClockSkew("250").offset_ns == 250'000'000);
        CHECK(dt::parseClockSkew("250").drift_ppm == 0.0);
        const dt::ClockSkew s = dt::parseClockSkew("-1.5,40");
        CHECK(s.offset_ns == -1'500'000);
        CHECK(s.drift_ppm == 40.0);
    }
    SECTION("text, trailing junk, NaN and values out of range name the variable") {
        for (const char* bad : {"", "abc", "250ms", "250,", "nan", "1e7", "0,2000", "0,101", "0,inf"}) {
            CAPTURE(bad);
            CHECK_THROWS_WITH(dt::parseClockSkew(bad), Catch::Matchers::Contains("DTLAB_CLOCK_SKEW"));
        }
    }
    SECTION("this machine's boot id is known (so the Session's own ranks apply no offset)") {
        CHECK(dt::thisBootId().known());
        CHECK(dt::thisBootId() == dt::thisBootId());
    }
}
