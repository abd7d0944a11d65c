// test_events.cpp: the seam's one list of kinds (event_kinds.def): every kind
// has a distinct, non-empty label and its category; the wire record is 64
// bytes; out-of-range kinds and phases read as "unknown" instead of indexing
// past a table.
#include "dtlab/events.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using dt::EventCategory;
using dt::EventKind;
using dt::EventPhase;

TEST_CASE("Every event kind has one distinct label and a category", "[events]") {
    std::set<std::string> labels;
    for (int k = 0; k < int(EventKind::Count); ++k) {
        const std::string label(dt::eventKindLabel(EventKind(k)));
        CAPTURE(k, label);
        CHECK_FALSE(label.empty());
        CHECK(label != "unknown");
        CHECK(labels.insert(label).second); // a trace or legend could not tell two apart
    }
    SECTION("the categories the views rely on") {
        CHECK(dt::eventKindCategory(EventKind::Forward) == EventCategory::Compute);
        CHECK(dt::eventKindCategory(EventKind::AllReduce) == EventCategory::Comm);
        CHECK(dt::eventKindCategory(EventKind::LossValue) == EventCategory::Counter);
        CHECK(dt::eventKindCategory(EventKind::ClockSync) == EventCategory::Lifecycle);
        CHECK(dt::eventKindCategory(EventKind::ClockDriftPpm) == EventCategory::Counter);
    }
    SECTION("a kind past the list (a corrupt recording, a newer build) reads as unknown") {
        CHECK(dt::eventKindLabel(EventKind(0xFFFF)) == "unknown");
        CHECK(dt::eventKindLabel(EventKind::Count) == "unknown");
    }
}

TEST_CASE("The event record is the fixed 64-byte wire layout", "[events]") {
    CHECK(sizeof(dt::Event) == 64);
    const dt::Event e;
    CHECK(e.rank == -1); // the Session itself until a rank stamps it
    CHECK(e.step == -1);
    CHECK(dt::isWorkPhase(EventPhase::WorkStarted));
    CHECK_FALSE(dt::isWorkPhase(EventPhase::Span));
    CHECK(dt::commBackendLabel(dt::CommBackend::Mpi) == "mpi");
}
