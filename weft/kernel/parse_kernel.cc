// parse_kernel: reads the text print_kernel writes (grammar in docs/ir.md). A recursive
// descent over the text; a syntax error is thrown inside and returned as one Status, so no
// text, however broken, gets past it.
#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "weft/kernel/kernel.h"
#include "weft/kernel/kernel_text.h"

namespace weft::kernel {

namespace {

// Nesting beyond this is refused (the printer binds a node long before it).
constexpr int kMaxDepth = 200;
// The largest read number "@R" accepted.
constexpr int64_t kMaxRead = 1 << 16;

struct SyntaxError {
  size_t pos;
  std::string expected;
};

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_contextual(ExprOp op) { return op == ExprOp::kConstant || op == ExprOp::kExtent; }

bool same_access(const Access& a, const Access& b) {
  return a.buffer == b.buffer && a.index == b.index && a.indirect == b.indirect;
}

// An expression as parsed: its node, whether this text made it (not a "%N" reference), and
// where it starts.
struct Parsed {
  int node;
  bool fresh;
  size_t pos;
};

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Kernel kernel() {
    skip_blank_lines();
    expect_keyword("kernel");
    k_.name = name("a kernel name");
    expect_line_end();
    for (skip_blank_lines(); pos_ < text_.size(); skip_blank_lines()) {
      if (at_keyword("kernel")) fail("the end of the text (one kernel)");
      if (at_keyword("in") || at_keyword("out") || at_keyword("temp")) {
        if (!k_.statements.empty()) fail("a statement (buffers come first)");
        buffer();
      } else {
        statement();
      }
      expect_line_end();
    }
    return std::move(k_);
  }

  // "line L, column C: expected X, found Y".
  std::string message(const SyntaxError& e) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < e.pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string found = "the end of the text";
    if (e.pos < text_.size() && (text_[e.pos] == '\n' || text_[e.pos] == '\r')) {
      found = "the end of the line";
    } else if (e.pos < text_.size()) {
      size_t end = text_.find('\n', e.pos);
      std::string_view rest = text_.substr(e.pos, std::min<size_t>(end - e.pos, 16));
      found = fmt::format("'{}'", rest);
    }
    return fmt::format("line {}, column {}: expected {}, found {}", line, column, e.expected,
                       found);
  }

private:
  [[noreturn]] void fail(std::string expected) const { fail_at(pos_, std::move(expected)); }
  [[noreturn]] void fail_at(size_t pos, std::string expected) const {
    throw SyntaxError{pos, std::move(expected)};
  }

  // ---- Characters and tokens.

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  char peek_at(size_t pos) const { return pos < text_.size() ? text_[pos] : '\0'; }
  void skip_spaces() {
    while (peek() == ' ' || peek() == '\t')
      ++pos_;
  }
  // Skips blank lines and lines that start with '#'.
  void skip_blank_lines() {
    for (;;) {
      size_t start = pos_;
      skip_spaces();
      if (peek() == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n')
          ++pos_;
      }
      if (pos_ >= text_.size()) return;
      if (peek() == '\r' && peek_at(pos_ + 1) == '\n') ++pos_;
      if (peek() != '\n') {
        pos_ = start;
        return;
      }
      ++pos_;
    }
  }
  bool at_line_end() {
    skip_spaces();
    return pos_ >= text_.size() || peek() == '\n' || peek() == '\r';
  }
  void expect_line_end() {
    if (!at_line_end()) fail("the end of the line");
    if (peek() == '\r') ++pos_;
    if (peek() == '\n') ++pos_;
  }
  bool eat(std::string_view token) {
    skip_spaces();
    if (text_.substr(pos_).starts_with(token)) {
      pos_ += token.size();
      return true;
    }
    return false;
  }
  void expect(std::string_view token) {
    if (!eat(token)) fail(fmt::format("'{}'", token));
  }
  bool at_keyword(std::string_view word) {
    skip_spaces();
    return text_.substr(pos_).starts_with(word) && !is_name_char(peek_at(pos_ + word.size()));
  }
  void expect_keyword(std::string_view word) {
    if (!at_keyword(word)) fail(fmt::format("'{}'", word));
    pos_ += word.size();
  }
  std::string word() {
    size_t start = pos_;
    while (is_name_char(peek()))
      ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  std::string quoted_string() {
    std::string out;
    ++pos_; // the opening quote
    for (;;) {
      char c = peek();
      if (c == '\0' && pos_ >= text_.size()) fail("a closing '\"'");
      if (c == '\n') fail("a closing '\"'");
      ++pos_;
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      ++pos_;
      if (e == '\\' || e == '"') {
        out += e;
      } else if (e == 'x') {
        unsigned v = 0;
        auto [end, ec] = std::from_chars(text_.data() + pos_,
                                         text_.data() + std::min(pos_ + 2, text_.size()), v, 16);
        if (ec != std::errc() || end != text_.data() + pos_ + 2) fail("two hex digits");
        pos_ += 2;
        out += static_cast<char>(v);
      } else {
        fail_at(pos_ - 1, "an escape: \\\\, \\\" or \\xHH");
      }
    }
  }
  // An identifier or a quoted string.
  std::string name(std::string_view what) {
    skip_spaces();
    if (peek() == '"') return quoted_string();
    if (!is_name_start(peek())) fail(std::string(what));
    return word();
  }
  int64_t integer() {
    skip_spaces();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), v);
    if (ec != std::errc()) fail("an integer");
    pos_ = static_cast<size_t>(end - text_.data());
    return v;
  }
  DType dtype() {
    skip_spaces();
    size_t start = pos_;
    std::optional<DType> t = dtype_from_name(word());
    if (!t) fail_at(start, "a dtype (f32, i64, ...)");
    return *t;
  }
  // An integer, a symbol ("N", "64*N", "(W+3)/4") or a quoted symbol.
  Dim dim() {
    skip_spaces();
    if (peek() == '"') return Dim::symbol(quoted_string());
    size_t start = pos_;
    for (int depth = 0;; ++pos_) {
      char c = peek();
      if (!is_symbol_char(c)) break;
      if (c == ')' && depth-- == 0) break;
      depth += c == '(';
    }
    std::string_view s = text_.substr(start, pos_ - start);
    if (s.empty()) fail("a dim");
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size()) return Dim(v);
    return Dim::symbol(std::string(s));
  }
  // "+" or "-" before a term ("-" negates it); false when the expression ended.
  AffineExpr affine() {
    AffineExpr a;
    for (int64_t sign = 1;; sign = eat("+") ? 1 : eat("-") ? -1 : 0) {
      if (sign == 0) return a;
      skip_spaces();
      int64_t c = 1;
      bool iterator_term = peek() == 'i';
      if (!iterator_term) {
        c = integer();
        iterator_term = eat("*");
        if (iterator_term) {
          skip_spaces();
          if (peek() != 'i') fail("an iterator (i0, i1, ...)");
        }
      }
      if (__builtin_mul_overflow(c, sign, &c)) fail("a smaller integer");
      if (!iterator_term) {
        if (__builtin_add_overflow(a.constant, c, &a.constant)) fail("a smaller integer");
        continue;
      }
      ++pos_; // 'i'
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("an iterator number");
      int64_t i = integer();
      if (i > 1 << 20) fail("an iterator number below 2^20");
      a.terms.emplace_back(static_cast<int>(i), c);
    }
  }

  // ---- Kernel lines.

  void buffer() {
    Buffer b;
    b.role = eat("in") ? BufferRole::kInput : eat("out") ? BufferRole::kOutput : BufferRole::kTemp;
    if (b.role == BufferRole::kTemp) expect_keyword("temp");
    skip_spaces();
    size_t at = pos_;
    b.name = name("a buffer name");
    if (buffers_.contains(b.name)) fail_at(at, "a name no other buffer has");
    expect(":");
    b.dtype = dtype();
    expect("[");
    if (!eat("]")) {
      do {
        b.shape.push_back(dim());
      } while (eat(","));
      expect("]");
    }
    int index = static_cast<int>(k_.buffers.size());
    if (eat("(aliased:")) {
      skip_spaces();
      size_t group_at = pos_;
      std::string first = name("the name of the first buffer of its view group");
      auto it = buffers_.find(first);
      if (first == b.name) {
        b.view_group = index;
      } else if (it != buffers_.end() &&
                 k_.buffers[static_cast<size_t>(it->second)].view_group == it->second) {
        b.view_group = it->second;
      } else {
        fail_at(group_at, "this buffer's name or an earlier one's that starts a view group");
      }
      expect(")");
    }
    buffers_[b.name] = index;
    k_.buffers.push_back(std::move(b));
  }

  void statement() {
    s_ = Statement();
    labels_.clear();
    unresolved_.clear();
    read_defined_.clear();
    explicit_reads_ = implicit_reads_ = false;
    s_.name = name("a statement or a buffer");
    expect("[");
    if (!eat("]")) {
      do {
        domain_entry();
      } while (eat(","));
      expect("]");
    }
    expect(":");
    if (at_line_end()) { // a body: lets, reads, then the store
      for (;;) {
        expect_line_end();
        skip_blank_lines();
        if (at_keyword("let")) {
          let();
        } else if (at_keyword("read")) {
          read_line();
        } else {
          break;
        }
      }
    }
    store();
    if (explicit_reads_ && implicit_reads_) fail("'@R' on every load, or on none");
    for (size_t r = 0; r < read_defined_.size(); ++r)
      if (!read_defined_[r]) fail(fmt::format("a load or read line for read @{}", r));
    k_.statements.push_back(std::move(s_));
  }

  // "iK < DIM" (K the next iterator) or "AFFINE >= 0".
  void domain_entry() {
    skip_spaces();
    size_t p = pos_;
    if (peek() == 'i') {
      ++pos_;
      std::string digits = word();
      bool iterator = !digits.empty() && std::all_of(digits.begin(), digits.end(), is_digit);
      skip_spaces();
      if (iterator && peek() == '<' && peek_at(pos_ + 1) != '=') {
        if (!s_.guards.empty() || digits != std::to_string(s_.domain.size()))
          fail_at(p, fmt::format("i{} (iterators in order, before the guards)", s_.domain.size()));
        ++pos_;
        s_.domain.push_back(dim());
        return;
      }
    }
    pos_ = p;
    s_.guards.push_back(affine());
    expect(">=");
    skip_spaces();
    if (integer() != 0) fail_at(pos_ - 1, "0");
  }

  void let() {
    expect_keyword("let");
    expect("%");
    size_t at = pos_;
    std::string label = word();
    if (label.empty()) fail("a label after '%'");
    if (labels_.contains(label)) fail_at(at, "a label not bound before");
    expect("=");
    Parsed p = expr(0);
    if (!p.fresh) fail_at(p.pos, "a new node (not a reference)");
    require_dtype(p);
    labels_[label] = p.node;
  }

  void read_line() {
    expect_keyword("read");
    expect("@");
    size_t at = pos_;
    int64_t r = integer();
    expect("=");
    define_read(r, access(0), at);
  }

  void store() {
    s_.write = access(0);
    skip_spaces();
    s_.combine = Combine::kNone;
    bool found = false;
    for (Combine c : {Combine::kNone, Combine::kSum, Combine::kProd, Combine::kMax, Combine::kMin,
                      Combine::kShiftMax}) {
      if (!found && eat(combine_spelling(c))) {
        s_.combine = c;
        found = true;
      }
    }
    if (!found) fail("'=' or a combine ('+=', 'max=', ...)");
    Parsed p = expr(0);
    if (p.node != static_cast<int>(s_.expr.size()) - 1)
      fail_at(p.pos, "the last node as the stored value");
    if (unresolved_[static_cast<size_t>(p.node)]) {
      s_.expr.back().dtype = k_.buffers[static_cast<size_t>(s_.write.buffer)].dtype;
      unresolved_.back() = false;
    }
  }

  void define_read(int64_t r, const Access& a, size_t at) {
    if (r < 0 || r >= kMaxRead) fail_at(at, "a read number below 65536");
    size_t i = static_cast<size_t>(r);
    if (i >= s_.reads.size()) {
      s_.reads.resize(i + 1);
      read_defined_.resize(i + 1, false);
    }
    if (read_defined_[i] && !same_access(s_.reads[i], a))
      fail_at(at, fmt::format("the access read @{} has elsewhere", r));
    s_.reads[i] = a;
    read_defined_[i] = true;
    explicit_reads_ = true;
  }

  // "BUFFER[INDEX, ...]", an INDEX being affine or "clamp(EXPR)" / "wrap(EXPR)".
  Access access(int depth) {
    skip_spaces();
    size_t at = pos_;
    auto b = buffers_.find(name("a buffer name"));
    if (b == buffers_.end()) fail_at(at, "a buffer declared above");
    Access a;
    a.buffer = b->second;
    expect("[");
    if (eat("]")) return a;
    do {
      bool clamp = at_keyword("clamp"), wrap = at_keyword("wrap");
      if (!clamp && !wrap) {
        a.index.push_back(affine());
        continue;
      }
      pos_ += clamp ? 5 : 4;
      expect("(");
      Parsed p = expr(depth + 1);
      require_dtype(p);
      expect(")");
      a.indirect.push_back({static_cast<int>(a.index.size()), p.node,
                            clamp ? IndexWrap::kClamp : IndexWrap::kNegative});
      a.index.push_back(AffineExpr::constant_of(0));
    } while (eat(","));
    expect("]");
    return a;
  }

  // ---- Expressions.

  // A constant or extent that has no dtype yet must get one here.
  void require_dtype(const Parsed& p) {
    if (unresolved_[static_cast<size_t>(p.node)]) fail_at(p.pos, "a dtype here, e.g. 1:f32");
  }

  Parsed expr(int depth) {
    if (depth > kMaxDepth) fail("a shallower expression (bind a part with let)");
    skip_spaces();
    size_t start = pos_;
    Parsed p = primary(depth);
    p.pos = start;
    ExprNode& e = s_.expr[static_cast<size_t>(p.node)];
    if (peek() == ':') {
      if (!p.fresh || e.op == ExprOp::kCast) fail("no dtype on a reference or a cast");
      ++pos_;
      e.dtype = dtype();
      unresolved_[static_cast<size_t>(p.node)] = false;
    } else if (p.fresh && !is_contextual(e.op) && unresolved_[static_cast<size_t>(p.node)]) {
      fail("':' and a dtype");
    }
    return p;
  }

  // A node of "op" over "operands": constants among them take their dtype from their
  // siblings, then the node its natural dtype (or none yet).
  Parsed make_node(ExprOp op, const std::vector<Parsed>& operands, std::optional<DType> dtype,
                   ExprNode e = {}) {
    e.op = op;
    std::vector<DType> types;
    for (size_t p = 0; p < operands.size(); ++p) {
      size_t o = static_cast<size_t>(operands[p].node);
      if (unresolved_[o]) {
        int sib = context_sibling(op, static_cast<int>(p));
        std::optional<DType> sibling;
        if (sib >= 0 && static_cast<size_t>(sib) < operands.size()) {
          size_t so = static_cast<size_t>(operands[static_cast<size_t>(sib)].node);
          if (!unresolved_[so]) sibling = s_.expr[so].dtype;
        }
        std::optional<DType> t = context_dtype(op, static_cast<int>(p), sibling);
        if (!t) fail_at(operands[p].pos, "a dtype here, e.g. 1:f32");
        s_.expr[o].dtype = *t;
        unresolved_[o] = false;
      }
      e.operands.push_back(operands[p].node);
      types.push_back(s_.expr[o].dtype);
    }
    if (!dtype && !is_contextual(op)) {
      DType buffer =
          op == ExprOp::kLoad
              ? k_.buffers[static_cast<size_t>(s_.reads[static_cast<size_t>(e.access)].buffer)]
                    .dtype
              : DType::kF32;
      dtype = natural_dtype(op, types, buffer);
    }
    e.dtype = dtype.value_or(DType::kF32);
    s_.expr.push_back(std::move(e));
    unresolved_.push_back(!dtype);
    return {static_cast<int>(s_.expr.size()) - 1, true, pos_};
  }

  Parsed primary(int depth) {
    size_t start = pos_;
    char c = peek();
    if (c == '(') { // an infix op
      ++pos_;
      std::vector<Parsed> operands = {expr(depth + 1)};
      skip_spaces();
      std::optional<ExprOp> op;
      size_t longest = 0;
      for (int i = 0; i <= static_cast<int>(ExprOp::kSelect); ++i) {
        std::string_view s = expr_op_infix(static_cast<ExprOp>(i));
        if (!s.empty() && s.size() > longest && text_.substr(pos_).starts_with(s)) {
          op = static_cast<ExprOp>(i);
          longest = s.size();
        }
      }
      if (!op) fail("an infix op (+, -, *, /, <, ...)");
      pos_ += longest;
      operands.push_back(expr(depth + 1));
      expect(")");
      return make_node(*op, operands, std::nullopt);
    }
    if (c == '%') {
      ++pos_;
      auto label = labels_.find(word());
      if (label == labels_.end()) fail_at(start, "a label bound by a let above");
      return {label->second, false, start};
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.') return number(start);
    if (c != '"' && !is_name_start(c)) fail("an expression");
    bool quoted = c == '"';
    std::string w = quoted ? quoted_string() : word();
    if (peek() == '[') { // a load
      pos_ = start;
      return load(depth);
    }
    if (!quoted && peek() == '(') return call(w, start, depth);
    if (!quoted && (w == "inf" || w == "nan")) return number(start);
    if (!quoted && w.size() > 1 && w[0] == 'i' && std::all_of(w.begin() + 1, w.end(), is_digit) &&
        w.size() < 9) {
      ExprNode e;
      e.access = std::stoi(w.substr(1));
      return make_node(ExprOp::kIterator, {}, std::nullopt, e);
    }
    fail_at(start, "an expression");
  }

  Parsed number(size_t start) {
    pos_ = start;
    ExprNode e;
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), e.value);
    if (ec != std::errc()) fail("a number");
    pos_ = static_cast<size_t>(end - text_.data());
    return make_node(ExprOp::kConstant, {}, std::nullopt, e);
  }

  Parsed load(int depth) {
    Access a = access(depth);
    ExprNode e;
    if (eat("@")) {
      size_t at = pos_;
      int64_t r = integer();
      define_read(r, a, at);
      e.access = static_cast<int>(r);
    } else {
      s_.reads.push_back(std::move(a));
      read_defined_.push_back(true);
      e.access = static_cast<int>(s_.reads.size()) - 1;
      implicit_reads_ = true;
    }
    return make_node(ExprOp::kLoad, {}, std::nullopt, e);
  }

  Parsed call(const std::string& w, size_t start, int depth) {
    ++pos_; // '('
    if (w == "extent") {
      ExprNode e;
      e.extent = dim();
      expect(")");
      return make_node(ExprOp::kExtent, {}, std::nullopt, e);
    }
    std::optional<DType> cast = dtype_from_name(w);
    std::optional<ExprOp> op = cast ? std::optional(ExprOp::kCast) : std::nullopt;
    for (int i = 0; !op && i <= static_cast<int>(ExprOp::kSelect); ++i) {
      ExprOp o = static_cast<ExprOp>(i);
      if (expr_op_name(o) == w && !is_contextual(o) && o != ExprOp::kLoad &&
          o != ExprOp::kIterator && o != ExprOp::kCast)
        op = o;
    }
    if (!op) fail_at(start, "an op, a dtype (a cast) or extent");
    std::vector<Parsed> operands;
    if (!eat(")")) {
      do {
        operands.push_back(expr(depth + 1));
      } while (eat(","));
      expect(")");
    }
    return make_node(*op, operands, cast);
  }

  std::string_view text_;
  size_t pos_ = 0;
  Kernel k_;
  std::map<std::string, int> buffers_;
  // The statement being read.
  Statement s_;
  std::map<std::string, int> labels_;
  std::vector<bool> unresolved_;   // by node: a constant or extent still without its dtype
  std::vector<bool> read_defined_; // by read
  bool explicit_reads_ = false, implicit_reads_ = false;
};

} // namespace

Result<Kernel> parse_kernel(std::string_view text) {
  Parser parser(text);
  Kernel k;
  try {
    k = parser.kernel();
  } catch (const SyntaxError& e) {
    return Status::error(parser.message(e));
  }
  if (Status s = verify_kernel(k); !s.ok())
    return Status::error(fmt::format("the kernel text does not verify: {}", s.message()));
  return k;
}

} // namespace weft::kernel
