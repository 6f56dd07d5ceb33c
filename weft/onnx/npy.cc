#include "weft/onnx/npy.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace weft {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct Descr {
  const char* code; // without the byte-order character
  DType dtype;
};
constexpr Descr kDescrs[] = {
    {"f4", DType::kF32}, {"f8", DType::kF64}, {"f2", DType::kF16}, {"i1", DType::kI8},
    {"i2", DType::kI16}, {"i4", DType::kI32}, {"i8", DType::kI64}, {"u1", DType::kU8},
    {"u2", DType::kU16}, {"u4", DType::kU32}, {"u8", DType::kU64}, {"b1", DType::kBool},
};

Status bad(const std::string& what) { return Status::error("not a valid .npy file: " + what); }

// The value text after "'key':" in the header dict, up to the next top-level ',' or '}'.
std::optional<std::string> dict_value(const std::string& header, const std::string& key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return std::nullopt;
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) return std::nullopt;
  size_t begin = colon + 1, depth = 0, end = begin;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string v = header.substr(begin, end - begin + (header[end] == ')' ? 1 : 0));
  v.erase(0, v.find_first_not_of(' '));
  v.erase(v.find_last_not_of(' ') + 1);
  return v;
}

Result<std::vector<int64_t>> parse_shape(const std::string& text) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') return bad("bad shape " + text);
  std::vector<int64_t> dims;
  std::string inner = text.substr(1, text.size() - 2);
  size_t pos = 0;
  while (pos < inner.size()) {
    size_t comma = inner.find(',', pos);
    std::string item =
        inner.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (!item.empty()) {
      if (!std::all_of(item.begin(), item.end(), ::isdigit) || item.size() > 18) {
        return bad("bad shape " + text);
      }
      dims.push_back(std::stoll(item));
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return dims;
}

// A file's header: its dtype's text ("'<f4'", quotes included), dims, and where the data
// starts.
struct Header {
  std::string descr;
  std::vector<int64_t> dims;
  size_t data_start = 0;
};

Result<Header> parse_header(const std::string& bytes) {
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0) {
    return bad("the magic string is missing");
  }
  int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("the header is truncated");
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    header_start = 12;
  } else {
    return bad(fmt::format("format version {} is not supported", major));
  }
  if (bytes.size() < header_start + header_len) return bad("the header is truncated");
  std::string header = bytes.substr(header_start, header_len);
  std::optional<std::string> descr = dict_value(header, "descr");
  std::optional<std::string> fortran = dict_value(header, "fortran_order");
  std::optional<std::string> shape_text = dict_value(header, "shape");
  if (!descr || !fortran || !shape_text)
    return bad("the header lacks descr, fortran_order or shape");
  if (*fortran != "False") {
    return bad("Fortran-order arrays are not supported; save np.ascontiguousarray(a)");
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> dims, parse_shape(*shape_text));
  return Header{*descr, std::move(dims), header_start + header_len};
}

// Code point "c" appended to "out" as UTF-8; false for one that is no code point.
bool append_utf8(uint32_t c, std::string& out) {
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return true;
}

} // namespace

Result<std::optional<NpyStrings>> npy_decode_strings(const std::string& bytes) {
  WEFT_ASSIGN_OR_RETURN(Header h, parse_header(bytes));
  // '<U8' (UTF-32, little-endian) or '|S8' (bytes), 8 units an element.
  const std::string& d = h.descr;
  if (d.size() < 5 || d.front() != '\'' || d.back() != '\'') return std::optional<NpyStrings>();
  bool unicode = d[1] == '<' && d[2] == 'U', bytes_kind = d[1] == '|' && d[2] == 'S';
  std::string width_text = d.substr(3, d.size() - 4);
  if ((!unicode && !bytes_kind) || width_text.empty() || width_text.size() > 6 ||
      !std::all_of(width_text.begin(), width_text.end(), ::isdigit))
    return std::optional<NpyStrings>();
  size_t width = std::stoul(width_text) * (unicode ? 4 : 1);
  int64_t count = 0;
  if (!dims_are_allocatable(DType::kU8, h.dims, &count)) return bad("the shape is too large");
  if (width == 0 || (bytes.size() - h.data_start) / width != static_cast<size_t>(count) ||
      (bytes.size() - h.data_start) % width != 0)
    return bad(fmt::format("it holds {} data bytes for {} strings of {} bytes",
                           bytes.size() - h.data_start, count, width));
  NpyStrings out{h.dims, {}};
  for (int64_t i = 0; i < count; ++i) {
    const char* at = bytes.data() + h.data_start + static_cast<size_t>(i) * width;
    std::string s;
    if (unicode) {
      for (size_t k = 0; k < width; k += 4) {
        uint32_t c;
        std::memcpy(&c, at + k, 4);
        if (c == 0) break; // NumPy pads with zeros
        if (!append_utf8(c, s)) return bad("a string holds no valid code point");
      }
    } else {
      s.assign(at, strnlen(at, width));
    }
    out.strings.push_back(std::move(s));
  }
  return std::optional<NpyStrings>(std::move(out));
}

Result<Tensor> npy_decode(const std::string& bytes) {
  WEFT_ASSIGN_OR_RETURN(Header h, parse_header(bytes));
  const std::string* descr = &h.descr;
  if (descr->size() != 5 || (*descr)[0] != '\'' || (*descr)[4] != '\'') {
    return bad("dtype " + *descr + " is not supported");
  }
  char order = (*descr)[1];
  std::string code = descr->substr(2, 2);
  const Descr* found = nullptr;
  for (const Descr& d : kDescrs) {
    if (code == d.code) found = &d;
  }
  if (!found || (order != '<' && order != '>' && order != '|' && order != '=')) {
    return bad("dtype " + *descr + " is not supported");
  }
  const std::vector<int64_t>& dims = h.dims;
  int64_t count = 0;
  if (!dims_are_allocatable(found->dtype, dims, &count)) return bad("the shape is too large");
  size_t data_start = h.data_start;
  size_t num_bytes = static_cast<size_t>(count) * static_cast<size_t>(dtype_size(found->dtype));
  if (bytes.size() - data_start != num_bytes) { // checked before allocating
    return bad(fmt::format("it holds {} data bytes, its shape needs {}", bytes.size() - data_start,
                           num_bytes));
  }
  Tensor out(found->dtype, dims);
  std::memcpy(out.data(), bytes.data() + data_start, out.num_bytes());
  int size = dtype_size(found->dtype);
  if (order == '>' && size > 1) {
    for (int64_t i = 0; i < out.num_elements(); ++i)
      std::reverse(out.data() + i * size, out.data() + (i + 1) * size);
  }
  return out;
}

std::string npy_encode(const Tensor& tensor) {
  // NumPy has no bf16, float8, float4, int4 or int2: their bytes go as u2 or u1.
  DType t = tensor.dtype() == DType::kBF16 ? DType::kU16
            : dtype_is_float8_or_4(tensor.dtype()) || dtype_packed_bits(tensor.dtype()) < 8
                ? DType::kU8
                : tensor.dtype();
  const char* code = "f4";
  for (const Descr& d : kDescrs) {
    if (d.dtype == t) code = d.code;
  }
  std::string shape = fmt::format("{}", fmt::join(tensor.dims(), ", "));
  if (tensor.rank() == 1) shape += ","; // a 1-tuple is "(3,)"
  char order = dtype_size(t) == 1 ? '|' : '<';
  std::string header = fmt::format("{{'descr': '{}{}', 'fortran_order': False, 'shape': ({}), }}",
                                   order, code, shape);
  // Pad with spaces so that the data starts at a multiple of 64 bytes; end with '\n'.
  size_t total = kMagicSize + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, kMagicSize);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(tensor.data()), tensor.num_bytes());
  return out;
}

} // namespace weft
