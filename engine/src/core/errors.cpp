#include "dtlab/errors.hpp"

namespace dt {

static std::string formatWhere(const SourceLocation& where, const std::string& message) {
    std::string out = where.file;
    if (where.line > 0)
        out += ":" + std::to_string(where.line);
    if (where.line > 0 && where.column > 0)
        out += ":" + std::to_string(where.column);
    if (!out.empty())
        out += ": ";
    return out + "error: " + message;
}

UsageError::UsageError(const SourceLocation& where, const std::string& message)
    : std::runtime_error(formatWhere(where, message)), m_where(where) {}

void enforceFailed(const char* condition, const char* file, int line, const std::string& hint) {
    throw std::logic_error(std::string(file) + ":" + std::to_string(line) +
                           ": invariant failed: " + condition + "\n  hint: " + hint);
}

} // namespace dt
