// print_kernel: the kernel IR's text form (grammar in docs/ir.md), which parse_kernel reads
// back. It never fails: a kernel that does not verify prints too, with every node bound and
// "<buffer N>" or "<read N>" where an index is out of range, for the verifier's messages.
#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "weft/kernel/kernel.h"
#include "weft/kernel/kernel_text.h"

namespace weft::kernel {

namespace {

// A nested expression deeper than this binds a node, so that the parser's recursion stays
// shallow on any kernel.
constexpr int kMaxTreeDepth = 48;

bool is_contextual(ExprOp op) { return op == ExprOp::kConstant || op == ExprOp::kExtent; }

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A kernel, buffer or statement name: bare when it is an identifier and no keyword.
std::string name_text(std::string_view s) {
  static const std::set<std::string_view> keywords = {"kernel", "in", "out", "temp", "let", "read"};
  bool bare = !s.empty() && is_name_start(s[0]) && std::all_of(s.begin(), s.end(), is_name_char) &&
              !keywords.contains(s);
  return bare ? std::string(s) : quoted(s);
}

// A symbol is bare when the parser's dim scanner reads exactly it back as a symbol: the
// characters of products and quotients, balanced parentheses, and not an integer.
bool is_bare_symbol(std::string_view s) {
  if (s.empty()) return false;
  int depth = 0;
  for (char c : s) {
    if (!is_symbol_char(c)) return false;
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (depth < 0) return false;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return depth == 0 && !(ec == std::errc() && end == s.data() + s.size());
}

std::string dim_text(const Dim& d) {
  if (d.is_static()) return std::to_string(d.value());
  return is_bare_symbol(d.symbol_name()) ? d.symbol_name() : quoted(d.symbol_name());
}

std::string shape_text(const Shape& shape) {
  std::vector<std::string> dims;
  for (const Dim& d : shape)
    dims.push_back(dim_text(d));
  return fmt::format("[{}]", fmt::join(dims, ","));
}

std::string_view role_text(BufferRole r) {
  switch (r) {
    case BufferRole::kInput: return "in";
    case BufferRole::kOutput: return "out";
    case BufferRole::kTemp: return "temp";
  }
  return "?";
}

// Prints one statement. Node order is part of the IR, so the printer lays the expression out
// such that the parser, which creates nodes as it reads them (lets in order, then the
// write's indices, then the stored value; operands before their node, a load's indirect
// indices before the load), creates them in the same order: it binds ("let %N") each node
// used more than once, each unused node, and whatever else a nested form would reorder.
class StatementPrinter {
public:
  StatementPrinter(const Kernel& k, const Statement& s) : k_(k), s_(s) {}

  std::string print() {
    lay_out();
    std::vector<std::string> dom;
    for (size_t i = 0; i < s_.domain.size(); ++i)
      dom.push_back(fmt::format("i{} < {}", i, dim_text(s_.domain[i])));
    for (const AffineExpr& g : s_.guards)
      dom.push_back(print_affine(g) + " >= 0");
    std::string header = fmt::format("{}[{}]:", name_text(s_.name), fmt::join(dom, ", "));
    std::vector<std::string> lines;
    for (size_t n = 0; n < s_.expr.size(); ++n) {
      if (bound_[n]) lines.push_back(fmt::format("let %{} = {}", n, node_text(n, std::nullopt)));
    }
    for (size_t r = 0; r < s_.reads.size() && explicit_reads_; ++r) {
      if (!loaded_[r]) lines.push_back(fmt::format("read @{} = {}", r, access_text(s_.reads[r])));
    }
    std::string value = "<no value>";
    if (!s_.expr.empty()) value = tree_text(s_.expr.size() - 1, buffer_dtype(s_.write.buffer));
    std::string store =
        fmt::format("{} {} {}", access_text(s_.write), combine_spelling(s_.combine), value);
    if (lines.empty()) return fmt::format("  {} {}\n", header, store);
    std::string out = "  " + header + "\n";
    for (const std::string& l : lines)
      out += "    " + l + "\n";
    return out + "    " + store + "\n";
  }

private:
  bool valid_node(int n, size_t below) const { return n >= 0 && static_cast<size_t>(n) < below; }
  bool valid_buffer(int b) const { return b >= 0 && static_cast<size_t>(b) < k_.buffers.size(); }
  bool valid_read(const ExprNode& e) const {
    return e.access >= 0 && static_cast<size_t>(e.access) < s_.reads.size();
  }
  std::optional<DType> buffer_dtype(int b) const {
    return valid_buffer(b) ? std::optional(k_.buffers[static_cast<size_t>(b)].dtype) : std::nullopt;
  }

  // Can the expression be laid out as trees: every reference points backwards, every index
  // is in range?
  bool well_formed() const {
    if (s_.expr.empty()) return false;
    for (size_t n = 0; n < s_.expr.size(); ++n) {
      const ExprNode& e = s_.expr[n];
      for (int o : e.operands)
        if (!valid_node(o, n)) return false;
      if (e.op != ExprOp::kLoad) continue;
      if (!valid_read(e)) return false;
      for (const IndirectIndex& ind : s_.reads[static_cast<size_t>(e.access)].indirect)
        if (!valid_node(ind.node, n)) return false;
    }
    for (const Access& a : s_.reads)
      for (const IndirectIndex& ind : a.indirect)
        if (!valid_node(ind.node, s_.expr.size())) return false;
    for (const IndirectIndex& ind : s_.write.indirect)
      if (!valid_node(ind.node, s_.expr.size())) return false;
    return true;
  }

  // The nodes written inside node "n": its operands, or a load's indirect indices.
  std::vector<int> children(size_t n) const {
    const ExprNode& e = s_.expr[n];
    if (e.op != ExprOp::kLoad) return e.operands;
    std::vector<int> out;
    for (const IndirectIndex& ind : s_.reads[static_cast<size_t>(e.access)].indirect)
      out.push_back(ind.node);
    return out;
  }

  std::vector<int> unbound(const std::vector<int>& nodes) const {
    std::vector<int> out;
    for (int n : nodes)
      if (!bound_[static_cast<size_t>(n)]) out.push_back(n);
    return out;
  }

  // Binds the fewest nodes at the bottom of "pending" for it to end with "want" (in order, less
  // the nodes bound), or with "whole", to be just that. Binding a pending node binds those
  // below it: the lets come before everything unbound, so nothing they follow may stay so.
  void fit(std::vector<int>& pending, const std::vector<int>& want, bool whole) {
    for (size_t p = 0; p <= pending.size(); ++p) {
      auto prefix = pending.begin() + static_cast<long>(p);
      std::vector<int> rest;
      for (int w : unbound(want))
        if (std::find(pending.begin(), prefix, w) == prefix) rest.push_back(w);
      size_t left = pending.size() - p;
      if (rest.size() > left || (whole && rest.size() != left)) continue;
      if (std::equal(rest.begin(), rest.end(), pending.end() - static_cast<long>(rest.size()))) {
        for (auto n = pending.begin(); n != prefix; ++n)
          bound_[static_cast<size_t>(*n)] = true;
        pending.erase(pending.begin(), prefix);
        return;
      }
    }
    for (int n : pending) // not reached for a well-formed statement
      bound_[static_cast<size_t>(n)] = true;
    for (int n : want)
      bound_[static_cast<size_t>(n)] = true;
    pending.clear();
  }

  void lay_out() {
    size_t n = s_.expr.size();
    bound_.assign(n, false);
    loaded_.assign(s_.reads.size(), false);
    if (!well_formed()) { // every node a let: nothing nests, whatever the references
      bound_.assign(n, true);
      explicit_reads_ = true;
      return;
    }
    // Do the loads read the reads in order, each once? Otherwise each names its read.
    size_t next = 0;
    for (const ExprNode& e : s_.expr) {
      if (e.op != ExprOp::kLoad) continue;
      explicit_reads_ |= e.access != static_cast<int>(next++);
      loaded_[static_cast<size_t>(e.access)] = true;
    }
    explicit_reads_ |= next != s_.reads.size();
    std::vector<int> uses(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (int c : children(i))
        ++uses[static_cast<size_t>(c)];
    for (const IndirectIndex& ind : s_.write.indirect)
      ++uses[static_cast<size_t>(ind.node)];
    ++uses[n - 1];
    for (size_t i = 0; i < n; ++i)
      bound_[i] = uses[i] > 1;
    for (size_t r = 0; r < s_.reads.size(); ++r) // a "read" line names its index nodes
      for (const IndirectIndex& ind : s_.reads[r].indirect)
        if (!loaded_[r]) bound_[static_cast<size_t>(ind.node)] = true;
    // The parser completes each nested node on a stack of pending trees.
    std::vector<int> pending;
    std::vector<int> depth(n, 1);
    for (size_t i = 0; i < n; ++i) {
      fit(pending, children(i), false);
      std::vector<int> kids = unbound(children(i));
      pending.resize(pending.size() - kids.size());
      for (int c : kids)
        depth[i] = std::max(depth[i], depth[static_cast<size_t>(c)] + 1);
      if (bound_[i] || depth[i] > kMaxTreeDepth) {
        bound_[i] = true;
        fit(pending, {}, true);
      } else {
        pending.push_back(static_cast<int>(i));
      }
    }
    std::vector<int> last;
    for (const IndirectIndex& ind : s_.write.indirect)
      last.push_back(ind.node);
    last.push_back(static_cast<int>(n) - 1);
    fit(pending, last, true);
  }

  // Node "n" where it is used: "%n" when bound, else written out; "context" is the dtype an
  // unannotated constant would take there.
  std::string tree_text(size_t n, std::optional<DType> context) const {
    return bound_[n] ? fmt::format("%{}", n) : node_text(n, context);
  }

  std::string child_text(const ExprNode& e, size_t position) const {
    int sibling = context_sibling(e.op, static_cast<int>(position));
    std::optional<DType> sibling_dtype;
    if (sibling >= 0 && static_cast<size_t>(sibling) < e.operands.size()) {
      size_t o = static_cast<size_t>(e.operands[static_cast<size_t>(sibling)]);
      if (bound_[o] || !is_contextual(s_.expr[o].op)) sibling_dtype = s_.expr[o].dtype;
    }
    return tree_text(static_cast<size_t>(e.operands[position]),
                     context_dtype(e.op, static_cast<int>(position), sibling_dtype));
  }

  std::string primary_text(const ExprNode& e) const {
    std::vector<std::string> args;
    for (size_t p = 0; p < e.operands.size(); ++p)
      args.push_back(child_text(e, p));
    switch (e.op) {
      case ExprOp::kLoad:
        if (!valid_read(e)) return fmt::format("<read {}>", e.access);
        return access_text(s_.reads[static_cast<size_t>(e.access)]) +
               (explicit_reads_ ? fmt::format("@{}", e.access) : "");
      case ExprOp::kConstant: return fmt::format("{}", e.value);
      case ExprOp::kExtent: return fmt::format("extent({})", dim_text(e.extent));
      case ExprOp::kIterator: return fmt::format("i{}", e.access);
      case ExprOp::kCast: return fmt::format("{}({})", dtype_name(e.dtype), fmt::join(args, ", "));
      default: break;
    }
    std::string_view infix = expr_op_infix(e.op);
    if (!infix.empty() && args.size() == 2)
      return fmt::format("({} {} {})", args[0], infix, args[1]);
    return fmt::format("{}({})", expr_op_name(e.op), fmt::join(args, ", "));
  }

  // Node "n" written out, with ":dtype" where the rules of kernel_text.h do not give it.
  std::string node_text(size_t n, std::optional<DType> context) const {
    const ExprNode& e = s_.expr[n];
    std::string text = primary_text(e);
    if (e.op == ExprOp::kCast) return text;
    std::optional<DType> deduced = context;
    if (!is_contextual(e.op)) {
      std::vector<DType> operands;
      for (int o : e.operands)
        operands.push_back(valid_node(o, s_.expr.size()) ? s_.expr[static_cast<size_t>(o)].dtype
                                                         : DType::kF32);
      std::optional<DType> loaded;
      if (e.op == ExprOp::kLoad && valid_read(e))
        loaded = buffer_dtype(s_.reads[static_cast<size_t>(e.access)].buffer);
      deduced = natural_dtype(e.op, operands, loaded.value_or(DType::kF32));
      if (e.op == ExprOp::kLoad && !loaded) deduced = std::nullopt;
    }
    return deduced == e.dtype ? text : fmt::format("{}:{}", text, dtype_name(e.dtype));
  }

  // An indirect index is written as its node under its wrap: "wrap(idx[i0])".
  std::string access_text(const Access& a) const {
    std::vector<std::string> idx;
    for (size_t d = 0; d < a.index.size(); ++d) {
      const IndirectIndex* ind = a.indirect_at(static_cast<int>(d));
      if (!ind) {
        idx.push_back(print_affine(a.index[d]));
        continue;
      }
      std::string node = valid_node(ind->node, s_.expr.size())
                             ? tree_text(static_cast<size_t>(ind->node), std::nullopt)
                             : fmt::format("%{}", ind->node);
      idx.push_back(fmt::format("{}({})", ind->wrap == IndexWrap::kClamp ? "clamp" : "wrap", node));
    }
    std::string buffer = valid_buffer(a.buffer)
                             ? name_text(k_.buffers[static_cast<size_t>(a.buffer)].name)
                             : fmt::format("<buffer {}>", a.buffer);
    return fmt::format("{}[{}]", buffer, fmt::join(idx, ", "));
  }

  const Kernel& k_;
  const Statement& s_;
  std::vector<bool> bound_;  // written "let %N = ..." and used as "%N"
  std::vector<bool> loaded_; // by read: does a load read it?
  bool explicit_reads_ = false;
};

} // namespace

std::string_view kernel_body(std::string_view printed) {
  size_t body = printed.find('\n');
  return body == std::string_view::npos ? printed : printed.substr(body);
}

std::string print_kernel(const Kernel& k) {
  std::string out = fmt::format("kernel {}\n", name_text(k.name));
  for (const Buffer& b : k.buffers) {
    // (An unverified kernel's group may name no buffer: then its number.)
    size_t g = static_cast<size_t>(b.view_group);
    std::string views = !b.aliased() ? ""
                        : g < k.buffers.size()
                            ? fmt::format(" (aliased: {})", name_text(k.buffers[g].name))
                            : fmt::format(" (aliased: #{})", b.view_group);
    out += fmt::format("  {} {}: {}{}{}\n", role_text(b.role), name_text(b.name),
                       dtype_name(b.dtype), shape_text(b.shape), views);
  }
  for (const Statement& s : k.statements)
    out += StatementPrinter(k, s).print();
  return out;
}

} // namespace weft::kernel
