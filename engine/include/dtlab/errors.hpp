// errors.hpp: the kinds of failure dtlab tells apart.
//   UsageError    a user's bad input (flag, scenario, recording): exit code 2,
//                 nothing started, nothing overwritten. Carries file:line:column.
//   CommError     a recoverable fault seen by a rank (peer lost, timeout).
//   TrainingDiverged  the loss became NaN or infinite: exit code 4. Not a
//                 fault of one replica (they all hold the same weights), so
//                 fault tolerance does not restart it: the job fails.
//   DT_ENFORCE    a broken invariant: a bug; message gives file, line and a hint.
#pragma once

#include <stdexcept>
#include <string>

namespace dt {

constexpr int kExitUsage = 2;      // bad flag, bad scenario, bad file
constexpr int kExitRankFailed = 3; // a rank failed (peer lost, timeout)
constexpr int kExitDiverged = 4;   // the loss became NaN/inf: the job cannot go on (no restart)

struct SourceLocation {
    std::string file;
    int line = 0;   // 1-based; 0 = unknown
    int column = 0; // 1-based; 0 = unknown
};

class UsageError : public std::runtime_error {
  public:
    explicit UsageError(const std::string& message) : std::runtime_error(message) {}
    UsageError(const SourceLocation& where, const std::string& message);
    const SourceLocation& where() const { return m_where; }

  private:
    SourceLocation m_where;
};

enum class CommErrorKind { PeerLost, Timeout, Other };

class CommError : public std::runtime_error {
  public:
    CommError(CommErrorKind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
    CommErrorKind kind() const { return m_kind; }

  private:
    CommErrorKind m_kind;
};

class TrainingDiverged : public std::runtime_error {
  public:
    explicit TrainingDiverged(const std::string& message) : std::runtime_error(message) {}
};

[[noreturn]] void enforceFailed(const char* condition, const char* file, int line, const std::string& hint);

} // namespace dt

#define DT_ENFORCE(cond, hint)                                                                               \
    do {                                                                                                     \
        if (!(cond))                                                                                         \
            ::dt::enforceFailed(#cond, __FILE__, __LINE__, (hint));                                          \
    } while (0)
