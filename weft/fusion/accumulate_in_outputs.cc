#include <algorithm>

#include "weft/fusion/rewrites.h"
#include "weft/fusion/views.h"

namespace weft::fusion {

namespace {

// Is "index" over "domain" a one-to-one map onto the elements of "shape": the identity, or
// the row-major position of the iterators in a rank-1 "shape"?
bool covers_once(const std::vector<AffineExpr>& index, const std::vector<Dim>& domain,
                 const Shape& shape) {
  if (index.size() == domain.size() && shape == Shape(domain.begin(), domain.end())) {
    for (size_t d = 0; d < index.size(); ++d) {
      if (!(index[d] == AffineExpr::iterator(static_cast<int>(d)))) return false;
    }
    return true;
  }
  if (index.size() != 1 || shape.size() != 1 || points(domain) != shape_num_elements(shape))
    return false;
  AffineExpr linear;
  int64_t stride = 1;
  for (size_t i = domain.size(); i-- > 0;) {
    if (domain[i].value() != 1)
      linear.terms.insert(linear.terms.begin(), {static_cast<int>(i), stride});
    stride *= domain[i].value();
  }
  return index[0] == linear;
}

} // namespace

// Reductions accumulate into the output itself where lowering accumulated into a temporary
// and then copied it out ("finish: y[i] = acc[i]"): the copy pass and the temporary go (a
// MIDDLE's result is written once instead of three times). Only for an output that no other
// statement writes and that has one view in the kernel, and a temporary that nothing writes
// after the copy; the output's storage is the kernel's own while it runs.
void accumulate_in_outputs(kernel::BoundKernel& k) {
  std::vector<Statement>& ss = k.kernel.statements;
  for (size_t f = 0; f < ss.size(); ++f) {
    const Statement& copy = ss[f];
    if (copy.combine != kernel::Combine::kNone || !copy.guards.empty() ||
        !copy.write.indirect.empty() || copy.reads.size() != 1 || copy.expr.size() != 1 ||
        !copy.reads[0].indirect.empty())
      continue;
    int t = copy.reads[0].buffer, o = copy.write.buffer;
    const kernel::Buffer& temp = k.kernel.buffers[static_cast<size_t>(t)];
    const kernel::Buffer& out = k.kernel.buffers[static_cast<size_t>(o)];
    if (temp.role != BufferRole::kTemp || out.role != BufferRole::kOutput || temp.aliased() ||
        out.aliased() || temp.dtype != out.dtype || !(temp.shape == out.shape) ||
        !(copy.reads[0].index == copy.write.index) ||
        !covers_once(copy.write.index, copy.domain, out.shape))
      continue;
    bool other_writer = false;
    for (size_t j = 0; j < ss.size(); ++j) {
      other_writer |= j != f && ss[j].write.buffer == o;
      other_writer |= j > f && ss[j].write.buffer == t;
    }
    if (other_writer) continue;
    for (Statement& s : ss) {
      if (s.write.buffer == t) s.write.buffer = o;
      for (Access& a : s.reads) {
        if (a.buffer == t) a.buffer = o;
      }
    }
    ss.erase(ss.begin() + static_cast<std::ptrdiff_t>(f--));
  }
  drop_unused_buffers(k);
}

} // namespace weft::fusion
