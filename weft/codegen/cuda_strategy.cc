#include "weft/codegen/cuda_strategy.h"

#include <cstdlib>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "weft/codegen/dialect.h"

namespace weft::codegen {

namespace {

// A knob of CudaOptions: its environment variable, its name in records (to_string), and the
// values it takes.
struct Knob {
  const char* env;
  const char* name;
  int64_t CudaOptions::*field;
  int64_t lo, hi;
  bool power; // powers of two only
};

constexpr Knob kKnobs[] = {
    {"WEFT_CUDA_UNROLL", "unroll", &CudaOptions::unroll, 1, 64, true},
    {"WEFT_CUDA_VECTOR", "vector", &CudaOptions::vector, 1, 4, true},
    {"WEFT_CUDA_LANE_ELEMENTS", "lane_elements", &CudaOptions::lane_elements, 1, 64, true},
    {"WEFT_CUDA_HELD_ELEMENTS", "held_elements", &CudaOptions::held_elements, 1, 64, true},
    {"WEFT_CUDA_MAX_GROUP", "max_group", &CudaOptions::max_group, 32, 1024, true},
    {"WEFT_CUDA_RESIDENT_THREADS", "resident_threads", &CudaOptions::resident_threads, 0, 2048,
     false},
    {"WEFT_CUDA_COLUMN_VECTOR", "column_vector", &CudaOptions::column_vector, 1, 4, true},
    {"WEFT_CUDA_ROW_SCALARS", "row_scalars", &CudaOptions::row_scalars, 0, 1, false},
};

bool valid(const Knob& k, int64_t v) {
  if (k.field == &CudaOptions::vector || k.field == &CudaOptions::column_vector)
    return v == 1 || v == 4;
  return v >= k.lo && v <= k.hi && (!k.power || (v & (v - 1)) == 0);
}

// "text" as a whole number that "k" takes.
std::optional<int64_t> value_of(const Knob& k, const char* text) {
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || !valid(k, v)) return std::nullopt;
  return v;
}

} // namespace

CudaOptions CudaOptions::from_environment(bool deterministic, const CudaOptions& base) {
  CudaOptions o = base;
  o.deterministic = deterministic;
  for (const Knob& k : kKnobs) {
    const char* text = std::getenv(k.env);
    if (std::optional<int64_t> v = text ? value_of(k, text) : std::nullopt) o.*k.field = *v;
  }
  return o;
}

CudaOptions CudaOptions::from_environment(bool deterministic) {
  return from_environment(deterministic, CudaOptions());
}

std::string CudaOptions::to_string() const {
  std::vector<std::string> words;
  for (const Knob& k : kKnobs)
    words.push_back(fmt::format("{}={}", k.name, this->*k.field));
  return fmt::format("{}", fmt::join(words, " "));
}

std::optional<CudaOptions> CudaOptions::parse(const std::string& text) {
  CudaOptions o;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    size_t eq = word.find('=');
    const Knob* knob = nullptr;
    for (const Knob& k : kKnobs) {
      if (eq != std::string::npos && word.compare(0, eq, k.name) == 0 && k.name[eq] == '\0')
        knob = &k;
    }
    std::optional<int64_t> v = knob ? value_of(*knob, word.c_str() + eq + 1) : std::nullopt;
    if (!v) return std::nullopt;
    o.*knob->field = *v;
  }
  return o;
}

std::string CudaOptions::key() const {
  return (deterministic ? "deterministic " : "") + to_string();
}

bool CudaOptions::operator==(const CudaOptions& o) const { return key() == o.key(); }

int64_t cuda_group_size(std::optional<int64_t> extent, int64_t lane_elements, int64_t max_group) {
  if (!extent) return 32;
  int64_t g = 1;
  while (g < max_group && g * 2 * lane_elements <= *extent)
    g *= 2;
  return g;
}

namespace {

// CUDA gives kShiftMax kMax's code: NaN-propagating functors, atomics and identities.
kernel::Combine on_cuda(kernel::Combine c) {
  return c == kernel::Combine::kShiftMax ? kernel::Combine::kMax : c;
}

} // namespace

bool cuda_atomic_applies(kernel::Combine c, const std::string& type) {
  c = on_cuda(c);
  bool combine =
      c == kernel::Combine::kSum || c == kernel::Combine::kMax || c == kernel::Combine::kMin;
  return combine && (type == "float" || type == "double" || type == "int32_t" ||
                     type == "uint32_t" || type == "int64_t" || type == "uint64_t");
}

std::string cuda_combine_op(kernel::Combine c) {
  switch (on_cuda(c)) {
    case kernel::Combine::kProd: return "weft_op_mul{}";
    case kernel::Combine::kMax: return "weft_op_max{}";
    case kernel::Combine::kMin: return "weft_op_min{}";
    default: return "weft_op_add{}";
  }
}

namespace {

// The weft_atomic_* helper of the prelude for "c" (one cuda_atomic_applies takes).
std::string atomic_name(kernel::Combine c) {
  c = on_cuda(c);
  return c == kernel::Combine::kSum ? "add" : c == kernel::Combine::kMax ? "max" : "min";
}

} // namespace

std::string identity_bits(kernel::Combine c, const std::string& type) {
  c = on_cuda(c);
  bool max = c == kernel::Combine::kMax, min = c == kernel::Combine::kMin;
  if (type == "float") return max ? "0xff800000u" : min ? "0x7f800000u" : "0x0u";
  if (type == "double")
    return max ? "0xfff0000000000000ull" : min ? "0x7ff0000000000000ull" : "0x0ull";
  if (type == "int32_t") return max ? "0x80000000u" : min ? "0x7fffffffu" : "0x0u";
  if (type == "uint32_t") return min ? "0xffffffffu" : "0x0u";
  if (type == "int64_t")
    return max ? "0x8000000000000000ull" : min ? "0x7fffffffffffffffull" : "0x0ull";
  return min ? "0xffffffffffffffffull" : "0x0ull"; // uint64_t
}

std::string CudaReductionWriter::combine(const std::string& a, const std::string& b) const {
  return combine_expr(on_cuda(r_.combine), a, b);
}

void CudaReductionWriter::strided_loop(const LoopText& loop, const std::string& lane,
                                       const std::string& threads, const std::string& acc,
                                       int depth) {
  if ((unroll_ > 1 || vector_) && !loop.hi.empty() && loop.step == 1) {
    unrolled_loop(loop.iterator, loop.init, lane, loop.hi, threads, acc, depth);
    return;
  }
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  out_ += fmt::format("{0}for (int64_t {1} = {2} + {3} * {4}; {5}; {1} += {6} * {4}) {{\n", pad,
                      loop.iterator, loop.init, lane, loop.step, loop.cond, threads);
  r_.update(acc, depth + 1, out_);
  out_ += pad + "}\n";
}

void CudaReductionWriter::unrolled_loop(const std::string& iterator, const std::string& lo,
                                        const std::string& lane, const std::string& hi,
                                        const std::string& threads, const std::string& acc,
                                        int depth) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  int64_t n = vector_ ? 4 : unroll_;
  out_ += fmt::format("{0}{{  // {1} accumulators a thread{2}\n"
                      "{0}  {3} weft_a[{1}];\n"
                      "{0}  #pragma unroll\n"
                      "{0}  for (int weft_j = 0; weft_j < {1}; ++weft_j) weft_a[weft_j] = {4};\n"
                      "{0}  int64_t weft_b = {5};  // where the scalar loop starts\n",
                      pad, n, vector_ ? ", float4 loads where aligned" : ": loads in flight",
                      r_.type, r_.identity, lo);
  if (vector_) {
    std::vector<std::string> aligned;
    for (const std::string& address : r_.vector_reads("(" + lo + ")"))
      aligned.push_back(fmt::format("weft_aligned16({})", address));
    out_ += fmt::format("{0}  if ({1}) {{\n"
                        "{0}    const int64_t weft_quads = ({2} - weft_b) / 4;\n",
                        pad, fmt::join(aligned, " && "), hi);
    // A quad at a time: on an H200, four at a time took a 64 MB sum from 82% to 79% of the
    // copy bandwidth (the compiler unrolls this loop itself).
    vector_loads(lane, "weft_quads", threads, 1, "const int64_t weft_v = weft_b + 4 * weft_w;",
                 "weft_v", iterator, "weft_v + weft_j", depth + 2);
    out_ += fmt::format("{0}    weft_b += 4 * weft_quads;\n{0}  }}\n", pad);
  } else {
    out_ += fmt::format("{0}  for (; weft_b + {1} + {2} * ({3}) < {4}; weft_b += {5} * ({3})) {{\n"
                        "{0}    #pragma unroll\n"
                        "{0}    for (int weft_j = 0; weft_j < {5}; ++weft_j) {{\n"
                        "{0}      const int64_t {6} = weft_b + {1} + weft_j * ({3});\n",
                        pad, lane, n - 1, threads, hi, n, iterator);
    r_.update("weft_a[weft_j]", depth + 3, out_);
    out_ += fmt::format("{0}    }}\n{0}  }}\n", pad);
  }
  out_ += fmt::format("{0}  for (int64_t {1} = weft_b + {2}; {1} < {3}; {1} += {4}) {{\n", pad,
                      iterator, lane, hi, threads);
  r_.update("weft_a[0]", depth + 2, out_);
  out_ += fmt::format("{0}  }}\n{0}  #pragma unroll\n"
                      "{0}  for (int weft_j = 0; weft_j < {1}; ++weft_j) {2} = {3};\n{0}}}\n",
                      pad, n, acc, combine(acc, "weft_a[weft_j]"));
}

void CudaReductionWriter::vector_loads(const std::string& from, const std::string& bound,
                                       const std::string& step, int64_t loads,
                                       const std::string& defs, const std::string& at,
                                       const std::string& iterator, const std::string& element,
                                       int depth) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  std::vector<std::string> reads = r_.vector_reads(at);
  // At "d": each read's quad "y<i><quad>" as weft_x<i>[4], then the update of its elements.
  auto update = [&](const std::string& quad, int d) {
    std::string p(static_cast<size_t>(2 * d), ' ');
    for (size_t i = 0; i < reads.size(); ++i) {
      out_ += fmt::format("{0}const float weft_x{1}[4] = {{{2}.x, {2}.y, {2}.z, {2}.w}};\n", p, i,
                          fmt::format("weft_y{}{}", i, quad));
    }
    out_ += fmt::format("{0}#pragma unroll\n"
                        "{0}for (int weft_j = 0; weft_j < 4; ++weft_j) {{\n"
                        "{0}  const int64_t {1} = {2};\n",
                        p, iterator, element);
    r_.vector_update("weft_a[weft_j]", d + 1, out_);
    out_ += p + "}\n";
  };
  if (loads <= 1) {
    out_ += fmt::format("{0}for (int64_t weft_w = {1}; weft_w < {2}; weft_w += {3}) {{\n"
                        "{0}  {4}\n",
                        pad, from, bound, step, defs);
    for (size_t i = 0; i < reads.size(); ++i)
      out_ += fmt::format("{}  const float4 weft_y{} = weft_load4({});\n", pad, i, reads[i]);
    update("", depth + 1);
    out_ += pad + "}\n";
    return;
  }
  // loads iterations at a time, each guarded: their loads are all issued before an update
  // waits on one.
  std::string each = fmt::format("{0}  #pragma unroll\n"
                                 "{0}  for (int weft_u = 0; weft_u < {1}; ++weft_u) {{\n"
                                 "{0}    const int64_t weft_w = weft_i + weft_u * ({2});\n"
                                 "{0}    if (weft_w < {3}) {{\n"
                                 "{0}      {4}\n",
                                 pad, loads, step, bound, defs);
  out_ += fmt::format("{0}for (int64_t weft_i = {1}; weft_i < {2}; weft_i += {3} * ({4})) {{\n",
                      pad, from, bound, loads, step);
  for (size_t i = 0; i < reads.size(); ++i)
    out_ += fmt::format("{}  float4 weft_y{}[{}] = {{}};\n", pad, i, loads);
  out_ += each;
  for (size_t i = 0; i < reads.size(); ++i)
    out_ += fmt::format("{}      weft_y{}[weft_u] = weft_load4({});\n", pad, i, reads[i]);
  out_ += fmt::format("{0}    }}\n{0}  }}\n", pad) + each;
  update("[weft_u]", depth + 3);
  out_ += fmt::format("{0}    }}\n{0}  }}\n{0}}}\n", pad);
}

void CudaReductionWriter::group(const LoopText& loop, int64_t group, int depth) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  out_ += fmt::format("{0}{{  // the group's lanes accumulate; shuffles combine them\n"
                      "{0}  {1} acc = {2};\n",
                      pad, r_.type, r_.identity);
  strided_loop(loop, "weft_lane", std::to_string(group), "acc", depth + 1);
  group_combine(group, depth);
}

void CudaReductionWriter::group_unrolled(const std::string& iterator, const std::string& element,
                                         int64_t per_lane, int64_t group, int depth) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  out_ += fmt::format("{0}{{  // the group's lanes accumulate their registers; shuffles combine "
                      "them\n{0}  {1} acc = {2};\n{0}  #pragma unroll\n"
                      "{0}  for (int weft_k = 0; weft_k < {3}; ++weft_k) {{\n"
                      "{0}    const int64_t {4} = {5};\n",
                      pad, r_.type, r_.identity, per_lane, iterator, element);
  r_.update("acc", depth + 2, out_);
  out_ += pad + "  }\n";
  group_combine(group, depth);
}

void CudaReductionWriter::group_combine(int64_t group, int depth) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  std::string store = r_.store(combine(r_.target, "acc"));
  out_ += fmt::format("{0}  acc = weft_group_reduce<{1}>(acc, {2}, weft_mask);\n"
                      "{0}  {3}\n{0}}}\n",
                      pad, group, cuda_combine_op(r_.combine),
                      r_.lanes_hold_target ? store : "if (weft_lane == 0) { " + store + " }");
}

void CudaReductionWriter::all(const LoopText& loop, const std::string& function, bool atomic,
                              const std::string& first, int depth, std::string& globals) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  const std::string& t = r_.type;
  std::string bits = identity_bits(r_.combine, t);
  std::string count = "weft_count_" + function;
  std::string store_total;
  if (atomic) {
    std::string bits_type =
        (t == "double" || t == "int64_t" || t == "uint64_t") ? "uint64_t" : "uint32_t";
    globals += fmt::format("__device__ {} weft_acc_{} = {};  // the blocks' combined result\n",
                           bits_type, function, bits);
  } else {
    globals += fmt::format("__device__ {} weft_part_{}[{}];  // each block's result\n", t, function,
                           kCudaMaxGrid);
  }
  globals += fmt::format("__device__ unsigned int {};  // blocks done\n", count);
  out_ += fmt::format("{0}{{  // ALL: the grid's blocks combine their shares; the last one applies "
                      "the result\n{0}  {1} acc = {2};\n",
                      pad, t, r_.identity);
  strided_loop(loop, "((int64_t)blockIdx.x * blockDim.x + threadIdx.x)",
               "(int64_t)gridDim.x * blockDim.x", "acc", depth + 1);
  out_ += fmt::format("{0}  acc = weft_group_reduce<{1}>(acc, {2}, 0xffffffffu);\n"
                      "{0}  __shared__ bool weft_last;\n{0}  if (threadIdx.x == 0) {{\n",
                      pad, kCudaBlock, cuda_combine_op(r_.combine));
  std::string op = atomic_name(r_.combine);
  if (atomic) {
    out_ += fmt::format("{}    weft_atomic_{}(reinterpret_cast<{}*>(&weft_acc_{}), acc);\n", pad,
                        op, t, function);
  } else {
    out_ += fmt::format("{}    weft_part_{}[blockIdx.x] = acc;\n", pad, function);
  }
  out_ += fmt::format("{0}    __threadfence();\n"
                      "{0}    weft_last = atomicAdd(&{1}, 1u) == gridDim.x - 1;\n"
                      "{0}  }}\n{0}  __syncthreads();\n"
                      "{0}  if (weft_last && threadIdx.x == 0) {{\n{0}    __threadfence();\n",
                      pad, count);
  if (atomic) {
    out_ +=
        fmt::format("{0}    const {1} total = *reinterpret_cast<volatile {1}*>(&weft_acc_{2});\n"
                    "{0}    weft_acc_{2} = {3};\n",
                    pad, t, function, bits);
  } else {
    out_ += fmt::format("{0}    const volatile {1}* weft_p = weft_part_{2};\n"
                        "{0}    {1} total = weft_p[0];\n"
                        "{0}    for (unsigned int b = 1; b < gridDim.x; ++b) total = {3};\n",
                        pad, t, function, combine("total", "weft_p[b]"));
  }
  out_ += fmt::format("{0}    {1} = 0;\n{2}{0}    {3}\n{0}  }}\n{0}}}\n", pad, count, first,
                      r_.store(combine(r_.target, "total")));
}

void CudaReductionWriter::split_row(const std::string& iterator, const RangeText& r,
                                    const std::string& function, int64_t rows,
                                    const std::string& before, const std::string& after, int depth,
                                    std::string& globals) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  const std::string& t = r_.type;
  std::string bits = identity_bits(r_.combine, t);
  std::string bits_type = bits.ends_with("ull") ? "uint64_t" : "uint32_t";
  std::string acc = fmt::format("weft_acc_{}[weft_p]", function);
  std::string count = fmt::format("weft_count_{}[weft_p]", function);
  std::vector<std::string> identities(static_cast<size_t>(rows), bits);
  globals +=
      fmt::format("__device__ {0} weft_acc_{1}[{2}] = {{{3}}};  // each row's result\n"
                  "__device__ unsigned int weft_count_{1}[{2}];  // each row's blocks done\n",
                  bits_type, function, rows, fmt::join(identities, ", "));
  out_ += fmt::format(
      "{0}const int64_t weft_chunk = (({1} - ({2}) + weft_splits - 1) / weft_splits + 3) / 4 "
      "* 4;  // whole quads, for vector loads\n"
      "{0}const int64_t weft_from = {2} + weft_s * weft_chunk;\n"
      "{0}const int64_t weft_to = weft_imin({1}, weft_from + weft_chunk);\n"
      "{0}{3} acc = {4};\n",
      pad, r.hi, r.lo, t, r_.identity);
  strided_loop({iterator, "weft_from", iterator + " < weft_to", 1, "weft_to"}, "threadIdx.x",
               std::to_string(kCudaBlock), "acc", depth);
  std::string op = atomic_name(r_.combine);
  out_ += fmt::format(
      "{0}acc = weft_group_reduce<{1}>(acc, {2}, 0xffffffffu);\n"
      "{0}__shared__ bool weft_last;\n{0}if (threadIdx.x == 0) {{\n"
      "{0}  weft_atomic_{3}(reinterpret_cast<{4}*>(&{5}), acc);\n{0}  __threadfence();\n"
      "{0}  weft_last = atomicAdd(&{6}, 1u) == weft_splits - 1;\n{0}}}\n{0}__syncthreads();\n"
      "{0}if (weft_last && threadIdx.x == 0) {{  // the row's last block\n"
      "{0}  __threadfence();\n"
      "{0}  const {4} total = *reinterpret_cast<volatile {4}*>(&{5});\n"
      "{0}  {5} = {7};\n{0}  {6} = 0;\n{8}{0}  {9}\n{10}{0}}}\n{0}__syncthreads();\n",
      pad, kCudaBlock, cuda_combine_op(r_.combine), op, t, acc, count, bits, before,
      r_.store(combine(r_.target, "total")), after);
}

void CudaReductionWriter::column_quads(const std::string& r_iterator, const RangeText& r,
                                       const std::string& k_iterator, const RangeText& k,
                                       bool split, bool steady, const ColumnInit* init, int depth,
                                       std::string& globals) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  const std::string& t = r_.type;
  constexpr int64_t kSlices = 32; // row slices of a block: 8 lanes a row of 32 columns
  column_head(r, k,
              "COLUMN by quads: 32 columns a block, 4 a lane (float4 loads where whole "
              "and aligned)",
              kSlices, "weft_q", split, depth);
  std::vector<std::string> aligned;
  for (const std::string& address : r_.vector_reads("weft_k0"))
    aligned.push_back(fmt::format("weft_aligned16({})", address));
  out_ += fmt::format(
      "{0}    const int64_t weft_k0 = weft_k_lo + weft_u % weft_tiles * 32 + 4 * weft_q;\n"
      "{0}    {1} weft_a[4];\n"
      "{0}    #pragma unroll\n"
      "{0}    for (int weft_j = 0; weft_j < 4; ++weft_j) weft_a[weft_j] = {2};\n",
      pad, t, r_.identity);
  // After "head" (which opens the loop over a lane's rows), the update of its 4 columns
  // element by element, at depth "at".
  auto by_elements = [&](const std::string& head, int at) {
    std::string p(static_cast<size_t>(2 * at), ' ');
    out_ += head + fmt::format("{0}#pragma unroll\n"
                               "{0}for (int weft_j = 0; weft_j < 4; ++weft_j) {{\n"
                               "{0}  const int64_t {1} = weft_k0 + weft_j;\n"
                               "{0}  if ({1} < weft_k_hi) {{\n",
                               p, k_iterator);
    r_.update("weft_a[weft_j]", at + 2, out_);
    out_ += fmt::format("{0}  }}\n{0}}}\n", p);
  };
  std::string rows =
      fmt::format("for (int64_t {0} = weft_from + weft_ty; {0} < weft_to; {0} += {1}) {{\n",
                  r_iterator, kSlices);
  if (steady) {
    // Every row's quads are aligned as the first one's: checked once, so that the loop has no
    // branch to keep its loads from being in flight together.
    out_ += fmt::format("{0}    bool weft_quad = weft_k0 + 3 < weft_k_hi;\n"
                        "{0}    {{\n"
                        "{0}      const int64_t {1} = weft_from + weft_ty;\n"
                        "{0}      weft_quad = weft_quad && {2};\n"
                        "{0}    }}\n"
                        "{0}    if (weft_quad) {{\n",
                        pad, r_iterator, fmt::join(aligned, " && "));
    vector_loads("weft_from + weft_ty", "weft_to", std::to_string(kSlices), unroll_,
                 fmt::format("const int64_t {} = weft_w;", r_iterator), "weft_k0", k_iterator,
                 "weft_k0 + weft_j", depth + 3);
    out_ += pad + "    } else {\n";
    by_elements(fmt::format("{}      {}", pad, rows), depth + 4);
    out_ += fmt::format("{0}      }}\n{0}    }}\n", pad);
  } else {
    std::vector<std::string> loads;
    std::vector<std::string> first = r_.vector_reads("weft_k0");
    for (size_t i = 0; i < first.size(); ++i) {
      loads.push_back(fmt::format("{0}        const float4 weft_y{1} = weft_load4({2});\n"
                                  "{0}        const float weft_x{1}[4] = {{weft_y{1}.x, "
                                  "weft_y{1}.y, weft_y{1}.z, weft_y{1}.w}};\n",
                                  pad, i, first[i]));
    }
    out_ += fmt::format("{0}    #pragma unroll 4\n{0}    {1}"
                        "{0}      if (weft_k0 + 3 < weft_k_hi && {2}) {{\n{3}"
                        "{0}        #pragma unroll\n"
                        "{0}        for (int weft_j = 0; weft_j < 4; ++weft_j) {{\n"
                        "{0}          const int64_t {4} = weft_k0 + weft_j;\n",
                        pad, rows, fmt::join(aligned, " && "), fmt::join(loads, ""), k_iterator);
    r_.vector_update("weft_a[weft_j]", depth + 5, out_);
    out_ += pad + "        }\n";
    by_elements(pad + "      } else {\n", depth + 4);
    out_ += fmt::format("{0}      }}\n{0}    }}\n", pad);
  }
  out_ += fmt::format(
      "{0}    #pragma unroll\n"
      "{0}    for (int weft_j = 0; weft_j < 4; ++weft_j) weft_tile[weft_ty][4 * weft_q + weft_j] = "
      "weft_a[weft_j];\n"
      "{0}    __syncthreads();\n"
      "{0}    const int64_t {1} = weft_k_lo + weft_u % weft_tiles * 32 + threadIdx.x;\n",
      pad, k_iterator);
  column_tail(k_iterator, fmt::format("threadIdx.x < 32 && {} < weft_k_hi", k_iterator),
              "threadIdx.x", kSlices, split, init, depth + 2, globals);
  out_ += fmt::format("{0}    __syncthreads();\n{0}  }}\n{0}}}\n", pad);
}

void CudaReductionWriter::column(const std::string& r_iterator, const RangeText& r,
                                 const std::string& k_iterator, const RangeText& k, bool split,
                                 const ColumnInit* init, int depth, std::string& globals) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  const std::string& t = r_.type;
  column_head(r, k, "COLUMN: 32 columns per block on consecutive lanes", kCudaColumnRows, "weft_tx",
              split, depth);
  out_ += fmt::format("{0}    const int64_t {1} = weft_k_lo + weft_u % weft_tiles * 32 + weft_tx;\n"
                      "{0}    {2} acc = {3};\n"
                      "{0}    if ({1} < weft_k_hi) {{\n",
                      pad, k_iterator, t, r_.identity);
  strided_loop({r_iterator, "weft_from", r_iterator + " < weft_to", 1, "weft_to"}, "weft_ty",
               std::to_string(kCudaColumnRows), "acc", depth + 3);
  out_ += fmt::format("{0}    }}\n"
                      "{0}    weft_tile[weft_ty][weft_tx] = acc;\n{0}    __syncthreads();\n",
                      pad);
  column_tail(k_iterator, fmt::format("weft_ty == 0 && {} < weft_k_hi", k_iterator), "weft_tx",
              kCudaColumnRows, split, init, depth + 2, globals);
  out_ += fmt::format("{0}    __syncthreads();\n{0}  }}\n{0}}}\n", pad);
}

void CudaReductionWriter::column_head(const RangeText& r, const RangeText& k,
                                      const std::string& what, int64_t slices,
                                      const std::string& lane, bool split, int depth) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  int64_t lanes = kCudaBlock / slices; // lanes across a tile row
  out_ += fmt::format(
      "{0}{{  // {1}, {2} row slices combined through a padded shared tile\n"
      "{0}  __shared__ {3} weft_tile[{2}][33];\n"
      "{0}  const int {4} = threadIdx.x % {5}, weft_ty = threadIdx.x / {5};\n"
      "{0}  const int64_t weft_k_lo = {6}, weft_k_hi = {7}, weft_r_lo = {8}, weft_r_hi = {9};\n"
      "{0}  const int64_t weft_tiles = (weft_k_hi - weft_k_lo + 31) / 32;\n",
      pad, what, slices, r_.type, lane, lanes, k.lo, k.hi, r.lo, r.hi);
  if (split) {
    out_ +=
        fmt::format("{0}  // R is split across blocks when the column tiles leave some idle\n"
                    "{0}  const int64_t weft_splits = weft_imax(1, weft_imin((int64_t)gridDim.x "
                    "/ weft_imax(weft_tiles, 1), (weft_r_hi - weft_r_lo) / {1}));\n",
                    pad, kCudaMinSplitRows);
  } else {
    out_ += fmt::format("{}  const int64_t weft_splits = 1;\n", pad);
  }
  out_ += fmt::format(
      "{0}  const int64_t weft_chunk = (weft_r_hi - weft_r_lo + weft_splits - 1) / weft_splits;\n"
      "{0}  for (int64_t weft_u = blockIdx.x; weft_u < weft_tiles * weft_splits; weft_u += "
      "gridDim.x) {{\n"
      "{0}    const int64_t weft_from = weft_r_lo + weft_u / weft_tiles * weft_chunk;\n"
      "{0}    const int64_t weft_to = weft_imin(weft_r_hi, weft_from + weft_chunk);\n",
      pad);
}

void CudaReductionWriter::column_tail(const std::string& k_iterator, const std::string& valid,
                                      const std::string& lane, int64_t slices, bool split,
                                      const ColumnInit* init, int depth, std::string& globals) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  const std::string& t = r_.type;
  // The init (when folded), then the total applied, at "at".
  auto apply = [&](int at) {
    std::string text;
    if (init) init->statements(at, text);
    return text + fmt::format("{:{}}{}\n", "", 2 * at, r_.store(combine(r_.target, "total")));
  };
  out_ += fmt::format("{0}if ({1}) {{\n"
                      "{0}  {2} total = weft_tile[0][{3}];\n"
                      "{0}  for (int j = 1; j < {4}; ++j) total = {5};\n",
                      pad, valid, t, lane, slices,
                      combine("total", fmt::format("weft_tile[j][{}]", lane)));
  if (!split) {
    out_ += apply(depth + 1) + pad + "}\n";
    return;
  }
  std::string op = atomic_name(r_.combine);
  if (!init) {
    out_ += fmt::format("{0}  if (weft_splits == 1) {{\n{1}{0}  }} else {{\n"
                        "{0}    weft_atomic_{2}({3}, total);\n{0}  }}\n{0}}}\n",
                        pad, apply(depth + 2), op, r_.address);
    return;
  }
  std::string acc = fmt::format("weft_acc_{}[{} - weft_k_lo]", init->function, k_iterator);
  std::string count = fmt::format("weft_count_{}[weft_u % weft_tiles]", init->function);
  globals +=
      fmt::format("__device__ {0} weft_acc_{1}[{2}];  // each column's total (zero bits)\n"
                  "__device__ unsigned int weft_count_{1}[{3}];  // each tile's blocks done\n",
                  t, init->function, init->columns, (init->columns + 31) / 32);
  out_ += fmt::format(
      "{0}  if (weft_splits == 1) {{\n{1}{0}  }} else {{\n"
      "{0}    weft_atomic_{2}(&{3}, total);\n{0}    __threadfence();\n{0}  }}\n{0}}}\n"
      "{0}if (weft_splits > 1) {{  // the tile's last block runs the init and applies the totals\n"
      "{0}  __shared__ bool weft_last;\n{0}  __syncthreads();\n"
      "{0}  if (threadIdx.x == 0) weft_last = atomicAdd(&{4}, 1u) == weft_splits - 1;\n"
      "{0}  __syncthreads();\n"
      "{0}  if (weft_last && {5}) {{\n"
      "{0}    __threadfence();\n"
      "{0}    const {6} total = *reinterpret_cast<volatile {6}*>(&{3});\n"
      "{0}    {3} = {6}();\n{7}"
      "{0}  }}\n"
      "{0}  if (weft_last && threadIdx.x == 0) {4} = 0;\n"
      "{0}}}\n",
      pad, apply(depth + 2), op, acc, count, valid, t, apply(depth + 2));
}

} // namespace weft::codegen
