// closing_check.cpp: parse and evaluate a closing check's `expect` text
// against a run summary (grammar in dtlab/closing_check.hpp).
//
// Steps: 1. tokenize (numbers, names, operators, parentheses, brackets);
// 2. recursive descent into a small tree (comparisons joined by "and");
// 3. evaluate each comparison's two sides over the summary JSON, where a
// path yields one number or one number per array element; 4. report the
// values compared, so a failed check says by how much it missed.
#include "dtlab/closing_check.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <stdexcept>

namespace dt {

namespace {

using Json = nlohmann::json;

const std::vector<std::string> kFunctions = {"max", "min", "mean", "sum", "count", "distinct", "abs"};

// How deep an expression may nest: parentheses, function calls and minus signs inside one
// another, and operators chained (a - b - c is two deep). The parser, the evaluator and the
// tree's destructor all recurse, so without a limit a long enough expression overflows the stack.
constexpr int kMaxDepth = 256;

struct Token {
    enum class Kind { Number, Name, String, Op, LParen, RParen, LBracket, RBracket, Dot, End };
    Kind kind = Kind::End;
    std::string text;
    double number = 0.0;
    size_t offset = 0;
};

struct SyntaxError : std::runtime_error {
    SyntaxError(size_t at, const std::string& message) : std::runtime_error(message), offset(at) {}
    size_t offset;
};

struct EvalError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::vector<Token> tokenize(const std::string& text) {
    std::vector<Token> tokens;
    size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
            continue;
        }
        Token t;
        t.offset = i;
        if (std::isdigit(static_cast<unsigned char>(c))) {
            // Only the number's own characters go to stod (digits, '.', an exponent), so that
            // a long expression is not copied once per number.
            const auto digitAt = [&](size_t k) {
                return k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]));
            };
            size_t j = i;
            while (digitAt(j) || (j < text.size() && text[j] == '.'))
                ++j;
            if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
                size_t k = j + 1;
                if (k < text.size() && (text[k] == '+' || text[k] == '-'))
                    ++k;
                if (digitAt(k)) {
                    while (digitAt(k))
                        ++k;
                    j = k;
                }
            }
            size_t used = 0;
            t.kind = Token::Kind::Number;
            t.number = std::stod(text.substr(i, j - i), &used);
            t.text = text.substr(i, used);
            i += used;
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t j = i;
            while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
                ++j;
            t.kind = Token::Kind::Name;
            t.text = text.substr(i, j - i);
            i = j;
        } else if (c == '"' || c == '\'') {
            const size_t close = text.find(c, i + 1);
            if (close == std::string::npos)
                throw SyntaxError(i, "this quoted field name is never closed");
            t.kind = Token::Kind::String;
            t.text = text.substr(i + 1, close - i - 1);
            i = close + 1;
        } else if (c == '(' || c == ')' || c == '[' || c == ']' || c == '.') {
            t.kind = c == '('   ? Token::Kind::LParen
                     : c == ')' ? Token::Kind::RParen
                     : c == '[' ? Token::Kind::LBracket
                     : c == ']' ? Token::Kind::RBracket
                                : Token::Kind::Dot;
            t.text = std::string(1, c);
            ++i;
        } else if (c == '<' || c == '>' || c == '=' || c == '!') {
            const bool two = i + 1 < text.size() && text[i + 1] == '=';
            t.kind = Token::Kind::Op;
            t.text = text.substr(i, two ? 2 : 1);
            if (t.text == "=" || t.text == "!")
                throw SyntaxError(i, "'" + t.text + "' is not an operator; use == or !=");
            i += t.text.size();
        } else if (c == '+' || c == '-' || c == '*' || c == '/') {
            t.kind = Token::Kind::Op;
            t.text = std::string(1, c);
            ++i;
        } else {
            throw SyntaxError(i, std::string("unexpected character '") + c + "'");
        }
        tokens.push_back(t);
    }
    Token end;
    end.offset = text.size();
    tokens.push_back(end);
    return tokens;
}

// One segment of a path: a field name, or an array index.
struct PathSegment {
    std::string name; // "" for an index
    long index = 0;
};

struct Node {
    enum class Kind { Number, Path, Function, Negate, Arithmetic, Compare };
    Kind kind = Kind::Number;
    double number = 0.0;
    std::vector<PathSegment> path;
    std::string op; // function name, arithmetic or comparison operator
    std::unique_ptr<Node> left, right;
    std::string source; // the text this node was parsed from, for details
    int depth = 1;      // levels of this subtree, itself included (kept <= kMaxDepth)
};

class Parser {
  public:
    // vocabulary: the document's fields (nullptr = the run summary: its roots only).
    Parser(const std::string& text, bool has_baseline, const CheckVocabulary* vocabulary = nullptr)
        : m_text(text), m_tokens(tokenize(text)), m_has_baseline(has_baseline), m_vocabulary(vocabulary) {}

    std::vector<std::unique_ptr<Node>> parseCheck() {
        std::vector<std::unique_ptr<Node>> comparisons;
        comparisons.push_back(parseComparison());
        while (peek().kind == Token::Kind::Name && peek().text == "and") {
            next();
            comparisons.push_back(parseComparison());
        }
        if (peek().kind != Token::Kind::End)
            throw SyntaxError(peek().offset,
                              "unexpected '" + peek().text + "' (comparisons are joined with 'and')");
        return comparisons;
    }

    // A measure: one sum, or one comparison (1 when it holds, 0 when not), then the end.
    std::unique_ptr<Node> parseMeasure() {
        const size_t start = peek().offset;
        auto node = parseSum();
        const Token& t = peek();
        static const std::set<std::string> kComparisons = {"<", "<=", ">", ">=", "==", "!="};
        if (t.kind == Token::Kind::Op && kComparisons.count(t.text)) {
            next();
            auto compare = std::make_unique<Node>();
            compare->kind = Node::Kind::Compare;
            compare->op = t.text;
            compare->left = std::move(node);
            compare->right = parseSum();
            setDepth(*compare, t.offset);
            node = std::move(compare);
        }
        if (peek().kind != Token::Kind::End)
            throw SyntaxError(peek().offset, "unexpected '" + peek().text + "' after '" +
                                                 trimmed(m_text.substr(start, peek().offset - start)) +
                                                 "' (a measure is one value, or one comparison)");
        return node;
    }

  private:
    const Token& peek() const { return m_tokens[m_pos]; }
    const Token& next() { return m_tokens[m_pos++]; }

    [[noreturn]] static void tooDeep(size_t offset) {
        throw SyntaxError(offset, "the expression nests too deeply (more than " + std::to_string(kMaxDepth) +
                                      " parentheses, functions, minus signs or chained operators inside one "
                                      "another); split it into comparisons joined with 'and'");
    }

    // One level down in the parser's recursion (a parenthesis, a function, a minus sign).
    struct Descent {
        Descent(Parser& parser, size_t offset) : p(parser) {
            if (++p.m_nesting > kMaxDepth)
                tooDeep(offset);
        }
        ~Descent() { --p.m_nesting; }
        Parser& p;
    };

    // A new node over its children: its depth, refused past the limit.
    static void setDepth(Node& node, size_t offset) {
        node.depth = 1 + std::max(node.left ? node.left->depth : 0, node.right ? node.right->depth : 0);
        if (node.depth > kMaxDepth)
            tooDeep(offset);
    }

    std::unique_ptr<Node> parseComparison() {
        const size_t start = peek().offset;
        auto left = parseSum();
        const Token& t = peek();
        static const std::set<std::string> kComparisons = {"<", "<=", ">", ">=", "==", "!="};
        if (t.kind != Token::Kind::Op || !kComparisons.count(t.text))
            throw SyntaxError(t.offset, "expected a comparison (<, <=, >, >=, ==, !=) after '" +
                                            trimmed(m_text.substr(start, t.offset - start)) + "'");
        next();
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::Compare;
        node->op = t.text;
        node->left = std::move(left);
        node->right = parseSum();
        setDepth(*node, t.offset);
        return node;
    }

    std::unique_ptr<Node> parseSum() { return parseLeftAssociative("+", "-", &Parser::parseProduct); }
    std::unique_ptr<Node> parseProduct() { return parseLeftAssociative("*", "/", &Parser::parseUnary); }

    // operand ((op_a | op_b) operand)*, folded to the left: a - b - c = (a - b) - c.
    std::unique_ptr<Node> parseLeftAssociative(const char* op_a, const char* op_b,
                                               std::unique_ptr<Node> (Parser::*operand)()) {
        const size_t start = peek().offset;
        auto left = (this->*operand)();
        while (peek().kind == Token::Kind::Op && (peek().text == op_a || peek().text == op_b)) {
            auto node = std::make_unique<Node>();
            node->kind = Node::Kind::Arithmetic;
            const size_t at = peek().offset;
            node->op = next().text;
            node->left = std::move(left);
            node->right = (this->*operand)();
            setDepth(*node, at);
            left = std::move(node);
        }
        left->source = trimmed(m_text.substr(start, peek().offset - start));
        return left;
    }

    std::unique_ptr<Node> parseUnary() {
        if (peek().kind == Token::Kind::Op && peek().text == "-") {
            const size_t start = next().offset;
            const Descent down(*this, start);
            auto node = std::make_unique<Node>();
            node->kind = Node::Kind::Negate;
            node->left = parseUnary();
            setDepth(*node, start);
            node->source = trimmed(m_text.substr(start, peek().offset - start));
            return node;
        }
        return parsePrimary();
    }

    std::unique_ptr<Node> parsePrimary() {
        const Token t = next();
        auto node = std::make_unique<Node>();
        if (t.kind == Token::Kind::Number) {
            node->kind = Node::Kind::Number;
            node->number = t.number;
            node->source = t.text;
            return node;
        }
        if (t.kind == Token::Kind::LParen) {
            const Descent down(*this, t.offset);
            node = parseSum();
            expect(Token::Kind::RParen, "')'");
            return node;
        }
        if (t.kind != Token::Kind::Name)
            throw SyntaxError(t.offset, t.kind == Token::Kind::End ? "the expression ends too early"
                                                                   : "unexpected '" + t.text + "'");
        if (peek().kind == Token::Kind::LParen) {
            if (std::find(kFunctions.begin(), kFunctions.end(), t.text) == kFunctions.end())
                throw SyntaxError(t.offset, "unknown function '" + t.text +
                                                "'; expected max, min, mean, sum, count, distinct or abs");
            next();
            const Descent down(*this, t.offset);
            node->kind = Node::Kind::Function;
            node->op = t.text;
            node->left = parseSum();
            setDepth(*node, t.offset);
            expect(Token::Kind::RParen, "')'");
            node->source = trimmed(m_text.substr(t.offset, m_tokens[m_pos - 1].offset + 1 - t.offset));
            return node;
        }
        return parsePath(t, std::move(node));
    }

    std::unique_ptr<Node> parsePath(const Token& first, std::unique_ptr<Node> node) {
        const auto& roots = checkSummaryRoots();
        if (m_vocabulary) {
            if (first.text == "and")
                throw SyntaxError(first.offset, "'and' joins two comparisons; a value is missing before it");
        } else if (first.text == "baseline") {
            if (!m_has_baseline)
                throw SyntaxError(first.offset,
                                  "'baseline' needs a baseline run: add baseline = { strategy = \"ddp\" } "
                                  "(or microbatches, schedule, overlap, activation_checkpointing, "
                                  "pseudo_gradient) to this check");
        } else if (first.text == "and") {
            throw SyntaxError(first.offset, "'and' joins two comparisons; a value is missing before it");
        } else if (!m_vocabulary && std::find(roots.begin(), roots.end(), first.text) == roots.end()) {
            std::string names;
            for (const auto& r : roots)
                names += (names.empty() ? "" : ", ") + r;
            throw SyntaxError(first.offset, "unknown summary field '" + first.text +
                                                "'; expected one of: " + names + " (or baseline.<field>)");
        }
        node->kind = Node::Kind::Path;
        node->path.push_back(PathSegment{first.text, 0});
        for (;;) {
            if (peek().kind == Token::Kind::Dot) {
                next();
                const Token name = next();
                if (name.kind != Token::Kind::Name)
                    throw SyntaxError(name.offset, "expected a field name after '.'");
                node->path.push_back(PathSegment{name.text, 0});
            } else if (peek().kind == Token::Kind::LBracket &&
                       m_tokens[m_pos + 1].kind == Token::Kind::String) {
                next(); // ["all-reduce"]: a field whose name is not a plain word
                node->path.push_back(PathSegment{next().text, 0});
                expect(Token::Kind::RBracket, "']'");
            } else if (peek().kind == Token::Kind::LBracket) {
                next();
                bool negative = false;
                if (peek().kind == Token::Kind::Op && peek().text == "-") {
                    next();
                    negative = true;
                }
                const Token index = next();
                if (index.kind != Token::Kind::Number || index.number != std::floor(index.number))
                    throw SyntaxError(index.offset, "expected an integer index inside [ ]");
                expect(Token::Kind::RBracket, "']'");
                node->path.push_back(PathSegment{"", negative ? -long(index.number) : long(index.number)});
            } else {
                break;
            }
        }
        node->source = trimmed(m_text.substr(first.offset, peek().offset - first.offset));
        if (m_vocabulary)
            checkVocabularyPath(node->path, first.offset);
        return node;
    }

    // A path of another document names one of its fields exactly (indices aside):
    // "ranks[1].dead" is the field "ranks.dead".
    void checkVocabularyPath(const std::vector<PathSegment>& path, size_t offset) const {
        std::string name;
        for (const PathSegment& seg : path)
            if (!seg.name.empty())
                name += (name.empty() ? "" : ".") + seg.name;
        const std::vector<std::string>& fields = m_vocabulary->fields;
        if (std::find(fields.begin(), fields.end(), name) != fields.end())
            return;
        // Say what the deepest known parent holds: "'quorum' has: id, members, ...".
        std::string parent = name;
        std::vector<std::string> heads;
        while (heads.empty()) {
            const size_t dot = parent.rfind('.');
            parent = dot == std::string::npos ? "" : parent.substr(0, dot);
            for (const std::string& f : fields) {
                if (!parent.empty() && f.rfind(parent + ".", 0) != 0)
                    continue;
                const std::string rest = parent.empty() ? f : f.substr(parent.size() + 1);
                const std::string head = rest.substr(0, rest.find('.'));
                if (std::find(heads.begin(), heads.end(), head) == heads.end())
                    heads.push_back(head);
            }
            if (parent.empty())
                break;
        }
        std::string known;
        for (const std::string& h : heads)
            known += (known.empty() ? "" : ", ") + h;
        throw SyntaxError(offset, "unknown " + m_vocabulary->subject + " field '" + name + "'; " +
                                      (parent.empty() ? "the " + m_vocabulary->subject + " has: "
                                                      : "'" + parent + "' has: ") +
                                      known);
    }

    void expect(Token::Kind kind, const char* what) {
        if (peek().kind != kind)
            throw SyntaxError(peek().offset,
                              std::string("expected ") + what +
                                  (peek().kind == Token::Kind::End ? " before the end" : " here"));
        next();
    }

    static std::string trimmed(const std::string& s) {
        const auto b = s.find_first_not_of(" \t\n");
        if (b == std::string::npos)
            return "";
        return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
    }

    const std::string& m_text;
    std::vector<Token> m_tokens;
    size_t m_pos = 0;
    bool m_has_baseline;
    const CheckVocabulary* m_vocabulary;
    int m_nesting = 0; // parentheses, functions and minus signs open now (see Descent)
};

// A value during evaluation: one number, or one per element of an array, or strings.
struct Value {
    bool is_array = false;
    std::vector<double> numbers;
    std::vector<std::string> strings; // only from a path to strings; only count/distinct take them
    size_t null_strings = 0;          // nulls among strings (a rank with no checksum): count/distinct
};

std::string formatNumber(double v) {
    if (std::isnan(v))
        return "null";
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.4g", v);
    return buf;
}

std::string formatValue(const Value& v) {
    if (!v.strings.empty())
        return "[" + std::to_string(v.strings.size()) + " strings]";
    if (!v.is_array)
        return v.numbers.empty() ? "null" : formatNumber(v.numbers[0]);
    std::string out = "[";
    for (size_t i = 0; i < v.numbers.size(); ++i) {
        if (i == 8) {
            out += ", ...";
            break;
        }
        out += (i ? ", " : "") + formatNumber(v.numbers[i]);
    }
    return out + "]";
}

bool compare(double a, double b, const std::string& op) {
    if (std::isnan(a) || std::isnan(b))
        return false;
    if (op == "<")
        return a < b;
    if (op == "<=")
        return a <= b;
    if (op == ">")
        return a > b;
    if (op == ">=")
        return a >= b;
    if (op == "==")
        return a == b;
    return a != b;
}

class Evaluator {
  public:
    Evaluator(const Json& summary, const Json* baseline, std::string subject = "summary")
        : m_summary(summary), m_baseline(baseline), m_subject(std::move(subject)) {}

    Value eval(const Node& n) const {
        switch (n.kind) {
        case Node::Kind::Number:
            return Value{false, {n.number}, {}};
        case Node::Kind::Path:
            return evalPath(n);
        case Node::Kind::Function:
            return evalFunction(n.op, eval(*n.left), n.left->source);
        case Node::Kind::Negate: {
            Value v = numeric(eval(*n.left), n.left->source);
            for (double& x : v.numbers)
                x = -x;
            return v;
        }
        case Node::Kind::Arithmetic:
            return combine(numeric(eval(*n.left), n.left->source), numeric(eval(*n.right), n.right->source),
                           n.op, [&](double a, double b) {
                               if (n.op == "+")
                                   return a + b;
                               if (n.op == "-")
                                   return a - b;
                               if (n.op == "*")
                                   return a * b;
                               return a / b;
                           });
        case Node::Kind::Compare:
            break;
        }
        throw EvalError("a comparison cannot be used as a value");
    }

    // One comparison; detail shows both sides' values as a true sentence:
    // "max(x) = 3 <= 4" when it holds, "max(x) = 5, not <= 4" when it does not.
    bool holds(const Node& c, std::string& detail) const {
        const Value a = numeric(eval(*c.left), c.left->source);
        const Value b = numeric(eval(*c.right), c.right->source);
        bool ok = true;
        combine(a, b, c.op, [&](double x, double y) {
            ok = ok && compare(x, y, c.op);
            return 0.0;
        });
        if (a.numbers.empty() || b.numbers.empty())
            ok = false;
        auto side = [](const Node& n, const Value& v) {
            const std::string value = formatValue(v);
            return n.kind == Node::Kind::Number ? value : n.source + " = " + value;
        };
        detail = side(*c.left, a) + (ok ? " " : ", not ") + c.op + " " + side(*c.right, b);
        return ok;
    }

  private:
    Value evalPath(const Node& n) const {
        const Json* root = &m_summary;
        size_t first = 0;
        if (n.path[0].name == "baseline") {
            if (!m_baseline)
                throw EvalError("'" + n.source +
                                "': the baseline run did not run (dtrun run --check runs it)");
            root = m_baseline;
            first = 1;
            if (n.path.size() == 1)
                throw EvalError("'baseline' alone is not a value; name a summary field after it");
        }
        // Walk with a list of current nodes: a name on an array maps over its elements.
        std::vector<const Json*> current{root};
        bool is_array = false;
        std::string walked = first ? "baseline" : "";
        for (size_t i = first; i < n.path.size(); ++i) {
            const PathSegment& seg = n.path[i];
            std::vector<const Json*> nextNodes;
            if (!seg.name.empty()) {
                const bool plain =
                    seg.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
                walked += plain ? (walked.empty() ? "" : ".") + seg.name : "[\"" + seg.name + "\"]";
                for (const Json* j : current) {
                    if (j->is_array()) {
                        is_array = true;
                        for (const Json& element : *j) {
                            if (!element.is_object() || !element.contains(seg.name))
                                throw EvalError("the " + m_subject + " has no field '" + walked + "'");
                            nextNodes.push_back(&element.at(seg.name));
                        }
                    } else if (j->is_object() && j->contains(seg.name)) {
                        nextNodes.push_back(&j->at(seg.name));
                    } else {
                        throw EvalError("the " + m_subject + " has no field '" + walked + "'" +
                                        (j->is_null() ? " (its parent is null)" : ""));
                    }
                }
            } else {
                walked += "[" + std::to_string(seg.index) + "]";
                for (const Json* j : current) {
                    if (!j->is_array())
                        throw EvalError("'" + walked + "': not an array");
                    const long size = long(j->size());
                    const long index = seg.index < 0 ? size + seg.index : seg.index;
                    if (index < 0 || index >= size)
                        throw EvalError("'" + walked + "': index out of range (the array has " +
                                        std::to_string(size) + " elements)");
                    nextNodes.push_back(&(*j)[size_t(index)]);
                }
            }
            current = std::move(nextNodes);
        }
        // A final array of scalars is an array value.
        if (current.size() == 1 && current[0]->is_array()) {
            is_array = true;
            std::vector<const Json*> elements;
            for (const Json& e : *current[0])
                elements.push_back(&e);
            current = std::move(elements);
        }
        Value v;
        v.is_array = is_array;
        for (const Json* j : current) {
            if (j->is_number())
                v.numbers.push_back(j->get<double>());
            else if (j->is_boolean())
                v.numbers.push_back(j->get<bool>() ? 1.0 : 0.0);
            else if (j->is_null())
                v.numbers.push_back(std::nan(""));
            else if (j->is_string())
                v.strings.push_back(j->get<std::string>());
            else {
                std::string fields;
                if (j->is_object())
                    for (auto it = j->begin(); it != j->end(); ++it)
                        fields += (fields.empty() ? "" : ", ") + it.key();
                throw EvalError(
                    "'" + walked + "' is " +
                    (j->is_object() ? "an object; name one of its fields: " + fields : "not a number"));
            }
        }
        if (!v.strings.empty() &&
            std::all_of(v.numbers.begin(), v.numbers.end(), [](double x) { return std::isnan(x); })) {
            v.null_strings = v.numbers.size(); // strings with nulls among them: kept apart
            v.numbers.clear();
        }
        if (!v.strings.empty() && !v.numbers.empty())
            throw EvalError("'" + walked + "' mixes numbers and strings");
        return v;
    }

    static Value numeric(const Value& v, const std::string& source) {
        if (!v.strings.empty())
            throw EvalError("'" + source + "' holds strings; only count() and distinct() take strings");
        return v;
    }

    template <typename F> static Value combine(const Value& a, const Value& b, const std::string& op, F f) {
        if (a.is_array && b.is_array && a.numbers.size() != b.numbers.size())
            throw EvalError("'" + op + "' of arrays of different lengths (" +
                            std::to_string(a.numbers.size()) + " and " + std::to_string(b.numbers.size()) +
                            ")");
        Value out;
        out.is_array = a.is_array || b.is_array;
        if (a.numbers.empty() || b.numbers.empty())
            return out; // a null or an empty array on either side: no value (the comparison fails)
        const size_t n = std::max(a.numbers.size(), b.numbers.size());
        for (size_t i = 0; i < n; ++i)
            out.numbers.push_back(f(a.numbers[a.is_array ? i : 0], b.numbers[b.is_array ? i : 0]));
        return out;
    }

    static Value evalFunction(const std::string& name, const Value& arg, const std::string& source) {
        if (name == "count")
            return Value{
                false,
                {double(arg.strings.empty() ? arg.numbers.size() : arg.strings.size() + arg.null_strings)},
                {}};
        if (name == "distinct") {
            // A null is unknown: it cannot be taken to equal any other value,
            // so each counts as a value of its own (4 ranks with no checksum:
            // distinct = 4, and "distinct(params_checksum) == 1" fails).
            if (!arg.strings.empty())
                return Value{false,
                             {double(std::set<std::string>(arg.strings.begin(), arg.strings.end()).size() +
                                     arg.null_strings)},
                             {}};
            std::set<double> known;
            size_t nulls = 0;
            for (double x : arg.numbers) {
                if (std::isnan(x))
                    ++nulls;
                else
                    known.insert(x);
            }
            return Value{false, {double(known.size() + nulls)}, {}};
        }
        const Value v = numeric(arg, source);
        if (name == "abs") {
            Value out = v;
            for (double& x : out.numbers)
                x = std::fabs(x);
            return out;
        }
        if (v.numbers.empty())
            throw EvalError(name + "(" + source + "): the array is empty");
        double acc = v.numbers[0];
        for (size_t i = 1; i < v.numbers.size(); ++i) {
            const double x = v.numbers[i];
            if (std::isnan(x) || std::isnan(acc))
                acc = std::nan("");
            else if (name == "max")
                acc = std::max(acc, x);
            else if (name == "min")
                acc = std::min(acc, x);
            else
                acc += x; // sum, mean
        }
        if (name == "mean")
            acc /= double(v.numbers.size());
        return Value{false, {acc}, {}};
    }

    const Json& m_summary;
    const Json* m_baseline;
    std::string m_subject; // "summary", or the vocabulary's subject ("screen")
};

} // namespace

const std::vector<std::string>& checkSummaryRoots() {
    static const std::vector<std::string> roots = {"ok",
                                                   "ranks",
                                                   "steps_requested",
                                                   "steps",
                                                   "initial_loss",
                                                   "final_loss",
                                                   "loss_by_step",
                                                   "step_end_s_by_step",
                                                   "step_ms_median",
                                                   "bytes_sent",
                                                   "bytes_sent_measured",
                                                   "bytes_received",
                                                   "peak_memory",
                                                   "pipeline",
                                                   "theory",
                                                   "fault_tolerance",
                                                   "swarm",
                                                   "params_checksum",
                                                   "dropped_events",
                                                   "dropped_events_total",
                                                   "collectives",
                                                   "failed_collectives",
                                                   "open_collective_works",
                                                   "hung_collectives",
                                                   "exit",
                                                   "wall_time_s",
                                                   "bus_bandwidth",
                                                   "offload",
                                                   "eval"};
    return roots;
}

namespace {

// Where `text` fails to parse (nullopt: it is well formed). An empty text is a problem of its own,
// said with an example; a number too large for stod is reported at the start.
template <typename Parse>
std::optional<CheckSyntaxProblem> syntaxProblemOf(const std::string& text, const char* empty_message,
                                                  Parse parse) {
    try {
        if (text.find_first_not_of(" \t\n") == std::string::npos)
            return CheckSyntaxProblem{0, empty_message};
        parse();
        return std::nullopt;
    } catch (const SyntaxError& e) {
        return CheckSyntaxProblem{e.offset, e.what()};
    } catch (const std::exception& e) {
        return CheckSyntaxProblem{0, e.what()};
    }
}

} // namespace

std::optional<CheckSyntaxProblem> findCheckSyntaxProblem(const std::string& expect, bool has_baseline) {
    return syntaxProblemOf(expect, "empty; write a comparison such as \"final_loss < initial_loss\"",
                           [&] { Parser(expect, has_baseline).parseCheck(); });
}

namespace {

// One check over already parsed summaries (baseline = nullptr without one).
CheckOutcome evaluateParsed(const std::string& expect, const Json& summary, const Json* baseline,
                            const CheckVocabulary* vocabulary = nullptr) {
    CheckOutcome outcome;
    try {
        const auto comparisons = Parser(expect, true, vocabulary).parseCheck();
        const Evaluator evaluator(summary, baseline, vocabulary ? vocabulary->subject : "summary");
        outcome.passed = true;
        for (const auto& c : comparisons) {
            std::string detail;
            if (!evaluator.holds(*c, detail))
                outcome.passed = false;
            outcome.detail += (outcome.detail.empty() ? "" : "; ") + detail;
        }
    } catch (const std::exception& e) { // EvalError, or a syntax error (validated at load)
        outcome.passed = false;
        outcome.detail = std::string("cannot evaluate: ") + e.what();
    }
    return outcome;
}

} // namespace

std::optional<CheckSyntaxProblem> findMeasureSyntaxProblem(const std::string& measure) {
    return syntaxProblemOf(measure, "empty; write a value over the summary such as \"max(step_ms_median)\"",
                           [&] { Parser(measure, false).parseMeasure(); });
}

namespace {

// A measure over the summary (vocabulary = nullptr) or another document; with allow_text
// one string is an answer too (MeasureOutcome::text).
MeasureOutcome measureIn(const std::string& measure, const std::string& summary_json,
                         const CheckVocabulary* vocabulary, bool allow_text) {
    MeasureOutcome outcome;
    try {
        const Json summary = Json::parse(summary_json);
        const auto node = Parser(measure, false, vocabulary).parseMeasure();
        const Evaluator evaluator(summary, nullptr, vocabulary ? vocabulary->subject : "summary");
        Value v;
        if (node->kind == Node::Kind::Compare) {
            std::string detail;
            const bool holds = evaluator.holds(*node, detail);
            v = Value{false, {holds ? 1.0 : 0.0}, {}};
            outcome.detail = detail;
        } else {
            v = evaluator.eval(*node);
            if (allow_text && !v.is_array && v.strings.size() == 1) {
                outcome.ok = true;
                outcome.value = std::nan("");
                outcome.text = v.strings[0];
                outcome.detail = measure + " = \"" + outcome.text + "\"";
                return outcome;
            }
            if (!v.strings.empty())
                throw EvalError("'" + measure + "' holds strings; a measure is a number");
            outcome.detail = measure + " = " + formatValue(v);
        }
        if (v.numbers.size() != 1)
            throw EvalError("'" + measure + "' is " + std::to_string(v.numbers.size()) +
                            " numbers (one per rank?); take max(), min(), mean() or sum() of it");
        outcome.value = v.numbers[0];
        outcome.ok = std::isfinite(outcome.value);
        if (!outcome.ok)
            outcome.detail += " (not a finite number: the run has not shown it yet?)";
    } catch (const std::exception& e) {
        outcome.ok = false;
        outcome.detail = std::string("cannot evaluate: ") + e.what();
    }
    return outcome;
}

} // namespace

MeasureOutcome evaluateMeasure(const std::string& measure, const std::string& summary_json) {
    return measureIn(measure, summary_json, nullptr, false);
}

MeasureOutcome evaluateMeasure(const std::string& measure, const std::string& json,
                               const CheckVocabulary& vocabulary) {
    return measureIn(measure, json, &vocabulary, true);
}

std::optional<CheckSyntaxProblem> findCheckSyntaxProblem(const std::string& expect,
                                                         const CheckVocabulary& vocabulary) {
    return syntaxProblemOf(expect, "empty; write a comparison such as \"ranks[1].dead == 1\"",
                           [&] { Parser(expect, false, &vocabulary).parseCheck(); });
}

std::optional<CheckSyntaxProblem> findMeasureSyntaxProblem(const std::string& measure,
                                                           const CheckVocabulary& vocabulary) {
    return syntaxProblemOf(measure, "empty; name a field such as \"stopwatch.detected_ms\"",
                           [&] { Parser(measure, false, &vocabulary).parseMeasure(); });
}

CheckOutcome evaluateCheck(const std::string& expect, const std::string& json,
                           const CheckVocabulary& vocabulary) {
    Json document;
    try {
        document = Json::parse(json);
    } catch (const std::exception& e) {
        return CheckOutcome{false, std::string("cannot evaluate: ") + e.what()};
    }
    return evaluateParsed(expect, document, nullptr, &vocabulary);
}

CheckOutcome evaluateCheck(const std::string& expect, const std::string& summary_json,
                           const std::string& baseline_summary_json) {
    Json summary, baseline;
    try {
        summary = Json::parse(summary_json);
        if (!baseline_summary_json.empty())
            baseline = Json::parse(baseline_summary_json);
    } catch (const std::exception& e) {
        return CheckOutcome{false, std::string("cannot evaluate: ") + e.what()};
    }
    return evaluateParsed(expect, summary, baseline_summary_json.empty() ? nullptr : &baseline);
}

} // namespace dt

namespace dt {

bool checkReadsRunOutcome(const std::string& expect) {
    std::vector<Token> tokens;
    try {
        tokens = tokenize(expect);
    } catch (const SyntaxError&) {
        return false;
    }
    for (size_t i = 0; i < tokens.size(); ++i) {
        const bool root = i == 0 || tokens[i - 1].kind != Token::Kind::Dot;
        if (root && tokens[i].kind == Token::Kind::Name &&
            (tokens[i].text == "ok" || tokens[i].text == "failure_reason"))
            return true;
    }
    return false;
}

std::vector<ClosingCheckResult>
evaluateClosingChecks(const std::vector<ClosingCheck>& checks, const std::string& summary_json,
                      const std::map<std::string, std::string>& baseline_summaries) {
    // Each summary is parsed once, however many checks read it (summaryJson always writes valid JSON).
    const Json summary = Json::parse(summary_json);
    const bool run_failed =
        summary.contains("ok") && summary["ok"].is_boolean() && !summary["ok"].get<bool>();
    std::map<std::string, Json> baselines;
    for (const auto& [key, text] : baseline_summaries)
        baselines[key] = Json::parse(text);
    std::vector<ClosingCheckResult> results;
    for (const ClosingCheck& c : checks) {
        ClosingCheckResult r;
        r.claim = c.claim;
        r.expect = c.expect;
        r.baseline = c.baseline.describe();
        if (run_failed && !checkReadsRunOutcome(c.expect)) {
            // A failed run shows nothing about the claim (a memory or a loss check would fail for
            // the wrong reason); only a check that is about the failure itself reads it.
            r.run_failed = true;
            r.detail = "not judged: the run failed";
            results.push_back(r);
            continue;
        }
        const Json* baseline = nullptr;
        if (!c.baseline.empty()) {
            const auto it = baselines.find(r.baseline);
            if (it == baselines.end()) {
                r.detail = "not evaluated: needs the baseline run { " + r.baseline +
                           " } (dtrun run --check runs it)";
                results.push_back(r);
                continue;
            }
            baseline = &it->second;
        }
        const CheckOutcome outcome = evaluateParsed(c.expect, summary, baseline);
        r.evaluated = true;
        r.passed = outcome.passed;
        r.detail = outcome.detail;
        results.push_back(r);
    }
    return results;
}

std::string summaryWithChecks(const std::string& summary_json,
                              const std::vector<ClosingCheckResult>& results) {
    Json j = Json::parse(summary_json);
    Json checks = Json::array();
    for (const ClosingCheckResult& r : results)
        checks.push_back({{"claim", r.claim},
                          {"expect", r.expect},
                          {"baseline", r.baseline},
                          {"evaluated", r.evaluated},
                          {"run_failed", r.run_failed},
                          {"passed", r.passed},
                          {"detail", r.detail}});
    j["checks"] = checks;
    return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

} // namespace dt
