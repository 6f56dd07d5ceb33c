// Array contraction in the CPU emitter (emitter.h): a stitched temporary whose every access
// lies in one iteration of the loops around a block becomes a local array of that block,
// holding one iteration's elements, instead of a full-size buffer in the arena. The CUDA
// emitter takes the one-element ones of a group's point body into every lane's registers
// (contract_row_scalars).
#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "weft/codegen/emitter.h"

namespace weft::codegen {

namespace {

// A local array of at most this many elements (in L1 with room to spare).
constexpr int64_t kMaxLocalElements = 4096;

// The identifiers "e" mentions.
void ids_of(const AstExpr& e, std::set<std::string>& out) {
  if (e.kind == AstExpr::Kind::kId) out.insert(e.id);
  for (const AstExpr& a : e.args)
    ids_of(a, out);
}

struct Site {
  const AstNode* call = nullptr;
  std::vector<const AstNode*> path; // its ancestors, from the root
};

void collect(const AstNode& n, std::vector<const AstNode*>& path, std::vector<Site>& sites) {
  if (n.kind == AstNode::Kind::kCall) {
    sites.push_back({&n, path});
    return;
  }
  path.push_back(&n);
  for (const AstNode& c : n.children)
    collect(c, path, sites);
  path.pop_back();
}

} // namespace

// An f32 temporary (not aliased, static dims) qualifies when the deepest node around all the calls
// that access it is a block inside at least one loop, and in each access every dim's index
// either mentions only those outer loops' iterators, the same expression in all accesses, or
// none of them: the outer dims are dropped. Every outer iterator is itself (plus a constant)
// the index of an outer dim, so distinct iterations touch distinct elements, and no value flows
// between iterations through the temporary: each iteration's local array is its own.
void Emitter::find_contractions(const AstNode& root) {
  std::vector<Site> sites;
  std::vector<const AstNode*> path;
  collect(root, path, sites);
  for (size_t b = 0; b < k_.buffers.size(); ++b) {
    const kernel::Buffer& buffer = k_.buffers[b];
    if (buffer.role != kernel::BufferRole::kTemp || buffer.aliased() || buffer.dtype != DType::kF32)
      continue;
    int id = static_cast<int>(b);
    std::vector<std::pair<const Site*, const kernel::Access*>> accesses;
    for (const Site& site : sites) {
      const Statement& s = k_.statements[static_cast<size_t>(site.call->statement)];
      if (s.write.buffer == id) accesses.push_back({&site, &s.write});
      for (const kernel::Access& a : s.reads) {
        if (a.buffer == id) accesses.push_back({&site, &a});
      }
    }
    if (accesses.empty()) continue;
    // The deepest common ancestor, and the loops around it.
    size_t depth = accesses[0].first->path.size();
    for (const auto& [site, access] : accesses) {
      size_t d = 0;
      while (d < std::min(depth, site->path.size()) && site->path[d] == accesses[0].first->path[d])
        ++d;
      depth = d;
    }
    if (depth == 0) continue;
    const AstNode* block = accesses[0].first->path[depth - 1];
    if (block->kind != AstNode::Kind::kBlock) continue;
    std::set<std::string> outer;
    for (size_t d = 0; d < depth; ++d) {
      const AstNode* n = accesses[0].first->path[d];
      if (n->kind == AstNode::Kind::kFor) outer.insert(n->iterator);
    }
    if (outer.empty()) continue;
    size_t dims = buffer.shape.size();
    std::vector<int> kind(dims, -1); // 1: outer (dropped), 0: inner (kept)
    std::vector<std::string> outer_text(dims);
    std::set<std::string> covered;
    bool fits = true;
    for (const auto& [site, access] : accesses) {
      if (access->index.size() != dims || !access->indirect.empty()) fits = false;
      for (size_t d = 0; fits && d < dims; ++d) {
        const AffineExpr& e = access->index[d];
        std::set<std::string> ids;
        std::vector<std::string> parts;
        int64_t constant = e.constant; // with the iterators of dropped loops (isl's 0s)
        for (auto [i, c] : e.terms) {
          const AstExpr& arg = site->call->args[static_cast<size_t>(i)];
          if (arg.kind == AstExpr::Kind::kInt) {
            constant += c * arg.value;
            continue;
          }
          ids_of(arg, ids);
          parts.push_back(fmt::format("{}*{}", c, ast_expr(arg)));
        }
        parts.push_back(std::to_string(constant));
        size_t in_outer = static_cast<size_t>(std::count_if(
            ids.begin(), ids.end(), [&](const std::string& x) { return outer.contains(x); }));
        int k = in_outer == 0 && !ids.empty() ? 0 : 1;
        if (in_outer > 0 && in_outer < ids.size()) fits = false; // mixed
        std::string text = fmt::format("{}", fmt::join(parts, "+"));
        if (kind[d] == -1) {
          kind[d] = k;
          outer_text[d] = text;
        } else if (kind[d] != k || (k == 1 && outer_text[d] != text)) {
          fits = false;
        }
        // An outer iterator, alone (plus a constant), indexes this dim.
        if (k == 1 && e.terms.size() == 1 && e.terms[0].second == 1) {
          const AstExpr& arg = site->call->args[static_cast<size_t>(e.terms[0].first)];
          if (arg.kind == AstExpr::Kind::kId) covered.insert(arg.id);
        }
      }
    }
    if (!fits || covered != outer) continue;
    Contraction c;
    c.block = block;
    c.elements = 1;
    for (size_t d = 0; d < dims && fits; ++d) {
      c.dropped.push_back(kind[d] == 1);
      if (kind[d] == 1) continue;
      if (!buffer.shape[d].is_static())
        fits = false;
      else
        c.elements *= buffer.shape[d].value();
    }
    if (fits && c.elements <= kMaxLocalElements) contracted_[id] = std::move(c);
  }
}

std::string Emitter::contract_row_scalars(const AstNode& point, int depth) {
  contracted_.clear();
  if (!cuda_.row_scalars) return "";
  find_contractions(*root_);
  // The items of "point" that may write a row scalar: its statements, and the calls of its
  // register reductions.
  std::set<const AstNode*> writers;
  for (const AstNode* item : items_of(point)) {
    if (item->kind == AstNode::Kind::kCall) writers.insert(item);
    if (item->kind == AstNode::Kind::kFor) {
      if (const AstNode* call = register_reduction(k_, *item)) writers.insert(call);
    }
  }
  std::set<int> written_elsewhere;
  std::function<void(const AstNode&)> visit = [&](const AstNode& n) {
    if (n.kind == AstNode::Kind::kCall && !writers.contains(&n))
      written_elsewhere.insert(k_.statements[static_cast<size_t>(n.statement)].write.buffer);
    for (const AstNode& c : n.children)
      visit(c);
  };
  visit(*root_);
  std::erase_if(contracted_, [&](const auto& entry) {
    const auto& [buffer, c] = entry;
    return c.block != &point || c.elements != 1 || written_elsewhere.contains(buffer);
  });
  std::string out, pad(static_cast<size_t>(2 * depth), ' ');
  for (const auto& [b, c] : contracted_) {
    out += fmt::format("{}float b{}[1];  // {}: the point's, in a register of each lane\n", pad, b,
                       k_.buffers[static_cast<size_t>(b)].name);
  }
  return out;
}

bool Emitter::writes_row_scalar(const AstNode& n) const {
  const AstNode* call = n.kind == AstNode::Kind::kCall  ? &n
                        : n.kind == AstNode::Kind::kFor ? register_reduction(k_, n)
                                                        : nullptr;
  return call &&
         contracted_.contains(k_.statements[static_cast<size_t>(call->statement)].write.buffer);
}

bool Emitter::dropped(int buffer, size_t dim) const {
  auto it = contracted_.find(buffer);
  return it != contracted_.end() && it->second.dropped[dim];
}

std::string Emitter::local_arrays(const AstNode& block, int depth) const {
  std::string out, pad(static_cast<size_t>(2 * depth), ' ');
  for (const auto& [b, c] : contracted_) {
    if (c.block != &block) continue;
    const kernel::Buffer& buffer = k_.buffers[static_cast<size_t>(b)];
    out += fmt::format("{}alignas(64) float b{}[{}];  // {}: one iteration's, contracted\n", pad, b,
                       c.elements, buffer.name);
  }
  return out;
}

bool Emitter::contractions_scoped(const std::string& text) const {
  std::vector<std::set<int>> scopes(1);
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '{') {
      scopes.emplace_back();
    } else if (ch == '}') {
      if (scopes.size() > 1) scopes.pop_back();
    } else if (ch == 'b' && (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) ||
                                         text[i - 1] == '_'))) {
      size_t j = i + 1;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])))
        ++j;
      if (j == i + 1 || j >= text.size() || text[j] != '[') continue;
      int b = std::stoi(text.substr(i + 1, j - i - 1));
      if (!contracted_.contains(b)) continue;
      static const std::string kDeclaration = "alignas(64) float ";
      if (i >= kDeclaration.size() &&
          text.compare(i - kDeclaration.size(), kDeclaration.size(), kDeclaration) == 0) {
        scopes.back().insert(b);
        continue;
      }
      if (std::none_of(scopes.begin(), scopes.end(),
                       [&](const std::set<int>& s) { return s.contains(b); }))
        return false;
    }
  }
  return true;
}

} // namespace weft::codegen
