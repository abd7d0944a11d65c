// scenario_rules.hpp: the rules a scenario must satisfy, shared by the TOML
// parser (which adds file:line:column to each message) and validateScenario
// (which re-checks a scenario after command-line overrides). Private to the
// scenario module; the rules themselves live in scenario_validate.cpp.
#pragma once

#include "dtlab/scenario.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::scenario_rules {

// How messages name a table: "[model]", or "[[faults]]" / "[[steps]]" for the arrays of tables.
std::string tableLabel(const std::string& table);

// Range and enum rules of single values. Each returns "" when the value is
// acceptable, otherwise the whole message, for example
//   [model] layers: expected an integer in 1..64, got 0
//   [model] kind: expected one of "tiny_gpt", "mlp", got "gpt5"
// Every int rule keeps the value inside the range of `int`, so a value that
// passed checkInt may be stored in an int field. Keys without a rule accept
// any value. The elements of [model] hidden are checked as key "hidden".
std::string checkInt(const std::string& table, const std::string& key, int64_t value);
std::string checkFloat(const std::string& table, const std::string& key, double value);
std::string checkString(const std::string& table, const std::string& key, const std::string& value);
// "[model] layers: ", the start of every single-value message.
std::string prefix(const std::string& table, const std::string& key);
// "\"a\", \"b\"": a list of accepted names, for messages.
std::string quotedList(const std::vector<std::string>& names);

// A rule about more than one value or about the file system (d_model divisible
// by heads, fault rank and step inside the topology and the run, hidden not
// empty, data path exists, a narration condition's rank and step reachable).
struct Problem {
    std::string table;             // "model", "data", "faults"
    std::vector<std::string> keys; // keys to point at, first one present wins
    int entryIndex = -1;           // which [[faults]] or [[steps]] entry, for those tables
    std::string message;           // the whole message, without a location
};

// The first such problem in a scenario whose single values already passed the
// checks above, or nothing when there is none.
std::optional<Problem> findCrossFieldProblem(const Scenario& scenario);

} // namespace dt::scenario_rules
