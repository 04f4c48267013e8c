// The small expression language of scenario values ("${1 / storage}") and CI gates
// ("speedup < 1.10"): a recursive-descent parser that evaluates as it goes.
#include <dreamscope/storage/limits.h>
#include <dreamscope/whatif/scenario.h>

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace dreamscope::whatif {

namespace {

class ExpressionParser {
 public:
  ExpressionParser(std::string_view text, const ExpressionValues& values) : text_(text), values_(values) {}

  ParameterValue parse() {
    ParameterValue v = disjunction();
    skip_space();
    if (pos_ != text_.size()) fail(fmt::format("unexpected {}", limits::quoted(text_.substr(pos_), 40)));
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(fmt::format("in expression {}: {}", limits::quoted(text_, 60), what));
  }

  // Parentheses and prefix operators recurse; a bound keeps a hostile expression from
  // exhausting the stack.
  class Nesting {
   public:
    explicit Nesting(ExpressionParser& p) : p_(p) {
      if (++p_.depth_ > limits::kMaxExpressionDepth) {
        p_.fail(fmt::format("nested deeper than {} levels", limits::kMaxExpressionDepth));
      }
    }
    ~Nesting() { --p_.depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    ExpressionParser& p_;
  };

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  static bool is_number(const ParameterValue& v) {
    return std::holds_alternative<std::int64_t>(v) || std::holds_alternative<double>(v);
  }

  double number(const ParameterValue& v, std::string_view context) const {
    if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    if (const auto* d = std::get_if<double>(&v)) return *d;
    fail(fmt::format("{} needs a number, got {}", context, limits::quoted(to_string(v), 40)));
  }

  bool truth(const ParameterValue& v, std::string_view context) const {
    if (const auto* b = std::get_if<bool>(&v)) return *b;
    if (is_number(v)) return number(v, context) != 0;
    fail(fmt::format("{} needs a boolean, got {}", context, limits::quoted(to_string(v), 40)));
  }

  // Integers stay integers through + - * so that `workers * 2` is still a count.
  ParameterValue arithmetic(char op, const ParameterValue& a, const ParameterValue& b, double x, double y) const {
    const auto* ia = std::get_if<std::int64_t>(&a);
    const auto* ib = std::get_if<std::int64_t>(&b);
    if (ia && ib && op != '/') {
      std::int64_t r = 0;
      const bool overflow = op == '+'   ? __builtin_add_overflow(*ia, *ib, &r)
                            : op == '-' ? __builtin_sub_overflow(*ia, *ib, &r)
                                        : __builtin_mul_overflow(*ia, *ib, &r);
      if (overflow) fail(fmt::format("{} {} {} overflows a 64-bit integer", *ia, op, *ib));
      return r;
    }
    switch (op) {
      case '+': return x + y;
      case '-': return x - y;
      case '*': return x * y;
      default: return x / y;
    }
  }

  ParameterValue disjunction() {
    ParameterValue v = conjunction();
    while (accept("||")) {
      const bool left = truth(v, "||");
      const bool right = truth(conjunction(), "||");
      v = left || right;
    }
    return v;
  }

  ParameterValue conjunction() {
    ParameterValue v = comparison();
    while (accept("&&")) {
      const bool left = truth(v, "&&");
      const bool right = truth(comparison(), "&&");
      v = left && right;
    }
    return v;
  }

  ParameterValue comparison() {
    ParameterValue left = sum();
    for (std::string_view op : {"<=", ">=", "==", "!=", "<", ">"}) {
      if (!accept(op)) continue;
      ParameterValue right = sum();
      if (op == "==" || op == "!=") {
        bool equal;
        if (is_number(left) && is_number(right)) {
          equal = number(left, op) == number(right, op);
        } else {
          equal = left == right;
        }
        return op == "==" ? equal : !equal;
      }
      const double a = number(left, op);
      const double b = number(right, op);
      if (op == "<=") return a <= b;
      if (op == ">=") return a >= b;
      if (op == "<") return a < b;
      return a > b;
    }
    return left;
  }

  ParameterValue sum() {
    ParameterValue v = product();
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != '+' && text_[pos_] != '-')) return v;
      const char op = text_[pos_++];
      ParameterValue r = product();
      v = arithmetic(op, v, r, number(v, std::string(1, op)), number(r, std::string(1, op)));
    }
  }

  ParameterValue product() {
    ParameterValue v = unary();
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != '*' && text_[pos_] != '/')) return v;
      const char op = text_[pos_++];
      ParameterValue r = unary();
      const double divisor = number(r, std::string(1, op));
      if (op == '/' && divisor == 0) fail("division by zero");
      v = arithmetic(op, v, r, number(v, std::string(1, op)), divisor);
    }
  }

  ParameterValue unary() {
    if (accept("!")) {
      Nesting nesting(*this);
      return !truth(unary(), "!");
    }
    if (accept("-")) {
      Nesting nesting(*this);
      ParameterValue v = unary();
      if (const auto* i = std::get_if<std::int64_t>(&v)) {
        if (*i == std::numeric_limits<std::int64_t>::min()) fail("-(-2^63) overflows a 64-bit integer");
        return -*i;
      }
      return -number(v, "-");
    }
    return primary();
  }

  ParameterValue primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    if (accept("(")) {
      Nesting nesting(*this);
      ParameterValue v = disjunction();
      if (!accept(")")) fail("missing ')'");
      return v;
    }
    const char c = text_[pos_];
    if (c == '\'') {
      const auto close = text_.find('\'', pos_ + 1);
      if (close == std::string_view::npos) fail("unterminated string");
      std::string s(text_.substr(pos_ + 1, close - pos_ - 1));
      pos_ = close + 1;
      return s;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number_literal();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t begin = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' || text_[pos_] == '.')) {
        ++pos_;
      }
      const std::string name(text_.substr(begin, pos_ - begin));
      if (name == "true") return true;
      if (name == "false") return false;
      const auto it = values_.find(name);
      if (it == values_.end()) {
        std::string known;
        for (const auto& [k, v] : values_) known += (known.empty() ? "" : ", ") + k;
        fail(fmt::format("unknown name {} (known: {})", limits::quoted(name, 40), known.empty() ? "none" : known));
      }
      return it->second;
    }
    fail(fmt::format("unexpected {}", limits::quoted(std::string_view(&text_[pos_], 1))));
  }

  ParameterValue number_literal() {
    const std::size_t begin = pos_;
    bool fractional = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        fractional = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
      } else {
        break;
      }
    }
    const std::string literal(text_.substr(begin, pos_ - begin));
    try {
      std::size_t used = 0;
      if (fractional) {
        const double d = std::stod(literal, &used);
        if (used == literal.size()) return d;
      } else {
        const long long i = std::stoll(literal, &used);
        if (used == literal.size()) return static_cast<std::int64_t>(i);
      }
    } catch (const std::exception&) {
    }
    fail(fmt::format("bad number {}", limits::quoted(literal, 40)));
  }

  std::string_view text_;
  const ExpressionValues& values_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
};

} // namespace

ParameterValue evaluate_expression(std::string_view expression, const ExpressionValues& values) {
  return ExpressionParser(expression, values).parse();
}

std::string to_string(const ParameterValue& v) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return fmt::format("{}", d); }
    std::string operator()(const std::string& s) const { return s; }
  };
  return std::visit(Visitor{}, v);
}

} // namespace dreamscope::whatif
