// The Python module `weft` (its compiled part, weft._weft), over the public C++ API.
//
// Arrays cross without copies where the types allow: a C-contiguous input of the declared
// dtype is read in place, and each output is a numpy array over the memory Weft allocated
// for it (kept alive by a capsule, its base). bf16 has no numpy dtype: bf16 inputs take
// float32 arrays (rounded to nearest even) and bf16 outputs come back as float32 (exact).
//
// Other arrays come in through DLPack (__dlpack__) or __cuda_array_interface__: host ones
// as numpy views (np.from_dlpack), CUDA ones as device pointers. A run whose inputs are all
// CUDA tensors runs device-resident and returns DeviceArrays, which leave through DLPack
// (torch.from_dlpack, cupy.from_dlpack) and __cuda_array_interface__, without copies.
#include <cstring>
#include <optional>
#include <string>

#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "weft/weft.h"

namespace py = pybind11;

namespace {

py::dtype numpy_dtype(weft::ElementType t) {
  switch (t) {
    case weft::ElementType::kF32: return py::dtype("float32");
    case weft::ElementType::kF64: return py::dtype("float64");
    case weft::ElementType::kF16: return py::dtype("float16");
    case weft::ElementType::kBF16: return py::dtype("float32"); // converted, see above
    case weft::ElementType::kI8: return py::dtype("int8");
    case weft::ElementType::kI16: return py::dtype("int16");
    case weft::ElementType::kI32: return py::dtype("int32");
    case weft::ElementType::kI64: return py::dtype("int64");
    case weft::ElementType::kU8: return py::dtype("uint8");
    case weft::ElementType::kU16: return py::dtype("uint16");
    case weft::ElementType::kU32: return py::dtype("uint32");
    case weft::ElementType::kU64: return py::dtype("uint64");
    case weft::ElementType::kBool: return py::dtype("bool");
    default: break;
  }
  // float8, float4, int4, int2: ml_dtypes' types, which also keep one element a byte.
  std::string name(weft::to_string(t));
  static const std::pair<std::string_view, const char*> kMlDtypes[] = {
      {"f8e4m3fn", "float8_e4m3fn"},
      {"f8e4m3fnuz", "float8_e4m3fnuz"},
      {"f8e5m2", "float8_e5m2"},
      {"f8e5m2fnuz", "float8_e5m2fnuz"},
      {"f8e8m0", "float8_e8m0fnu"},
      {"f4e2m1", "float4_e2m1fn"},
      {"i4", "int4"},
      {"u4", "uint4"},
      {"i2", "int2"},
      {"u2", "uint2"}};
  for (auto [weft_name, ml_name] : kMlDtypes) {
    if (weft_name != name) continue;
    py::module_ ml;
    try {
      ml = py::module_::import("ml_dtypes");
    } catch (const py::error_already_set&) {
      throw weft::Error("error: " + name +
                        " tensors need the ml_dtypes package (pip install "
                        "ml_dtypes)");
    }
    return py::dtype::from_args(ml.attr(ml_name));
  }
  throw weft::Error("error: element type " + name + " has no numpy dtype");
}

std::string dtype_name(weft::ElementType t) {
  return t == weft::ElementType::kBF16 ? "bfloat16" : std::string(py::str(numpy_dtype(t)));
}

uint16_t to_bf16(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40); // NaN
  bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

float from_bf16(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

// DLPack's type of "t" (bool is DLPack 0.8's kDLBool, code 6).
DLDataType dl_type(weft::ElementType t) {
  using weft::ElementType;
  auto bits = static_cast<uint8_t>(8 * weft::element_size(t));
  switch (t) {
    case ElementType::kF32:
    case ElementType::kF64:
    case ElementType::kF16: return {kDLFloat, bits, 1};
    case ElementType::kBF16: return {kDLBfloat, bits, 1};
    case ElementType::kI8:
    case ElementType::kI16:
    case ElementType::kI32:
    case ElementType::kI64: return {kDLInt, bits, 1};
    case ElementType::kU8:
    case ElementType::kU16:
    case ElementType::kU32:
    case ElementType::kU64: return {kDLUInt, bits, 1};
    case ElementType::kBool: return {6, 8, 1};
    default: break;
  }
  throw weft::Error("error: " + std::string(weft::to_string(t)) +
                    " tensors cannot leave through DLPack yet");
}

// __cuda_array_interface__'s typestr of "t"; empty for bf16, which has none.
std::string typestr(weft::ElementType t) {
  if (t == weft::ElementType::kBF16) return "";
  py::dtype d = numpy_dtype(t);
  return std::string(1, d.byteorder() == '=' ? '<' : d.byteorder()) + d.kind() +
         std::to_string(d.itemsize());
}

// A device-resident output: a weft::DeviceTensor, exported without copies.
class DeviceArray {
public:
  explicit DeviceArray(weft::DeviceTensor t) : t_(std::move(t)) {}
  const weft::DeviceTensor& tensor() const { return t_; }

  py::tuple shape() const { return py::cast(t_.shape()); }
  std::string dtype() const { return dtype_name(t_.type()); }
  uintptr_t data_ptr() const { return reinterpret_cast<uintptr_t>(t_.data()); }
  py::tuple dlpack_device() const { return py::make_tuple(static_cast<int>(kDLCUDA), 0); }

  // A "dltensor" capsule that keeps the memory alive until its consumer calls the deleter.
  // The run that wrote it has finished (it synchronizes), so "stream" needs no wait.
  py::capsule dlpack() const {
    struct Holder {
      weft::DeviceTensor tensor;
      std::vector<int64_t> shape;
      DLManagedTensor managed;
    };
    auto* h = new Holder{t_, t_.shape(), {}};
    DLTensor& d = h->managed.dl_tensor;
    d.data = t_.data();
    d.device = {kDLCUDA, 0};
    d.ndim = static_cast<int32_t>(h->shape.size());
    d.dtype = dl_type(t_.type());
    d.shape = h->shape.data();
    d.strides = nullptr; // row-major
    d.byte_offset = 0;
    h->managed.manager_ctx = h;
    h->managed.deleter = [](DLManagedTensor* m) { delete static_cast<Holder*>(m->manager_ctx); };
    // A capsule still named "dltensor" when collected was never consumed: free it then.
    return py::capsule(&h->managed, "dltensor", [](PyObject* capsule) {
      if (!PyCapsule_IsValid(capsule, "dltensor")) return;
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
      m->deleter(m);
    });
  }

  py::dict cuda_array_interface() const {
    std::string type = typestr(t_.type());
    if (type.empty())
      throw weft::Error("error: bfloat16 has no __cuda_array_interface__ type; use DLPack");
    py::dict d;
    d["shape"] = shape();
    d["typestr"] = type;
    d["data"] = py::make_tuple(data_ptr(), false);
    d["strides"] = py::none();
    d["version"] = 3;
    return d;
  }

private:
  weft::DeviceTensor t_;
};

// Python's view of a weft type from DLPack's (code, bits), if Weft has it.
std::optional<weft::ElementType> from_dl_type(DLDataType t) {
  for (int e = 0; e <= static_cast<int>(weft::ElementType::kBool); ++e) {
    auto type = static_cast<weft::ElementType>(e);
    DLDataType d = dl_type(type);
    if (d.code == t.code && d.bits == t.bits && t.lanes == 1) return type;
  }
  return std::nullopt;
}

// A CUDA tensor from another library, as a view, with what keeps it alive.
struct DeviceFeed {
  weft::DeviceTensor tensor;
  py::object keep;
};

bool is_contiguous(const std::vector<int64_t>& shape, const int64_t* strides, int64_t unit) {
  int64_t want = unit;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != want) return false;
    want *= shape[i];
  }
  return true;
}

const char* error_code_name(weft::ErrorCode code) {
  switch (code) {
    case weft::ErrorCode::kFail: return "fail";
    case weft::ErrorCode::kNoSuchFile: return "no_such_file";
    case weft::ErrorCode::kInvalidModel: return "invalid_model";
    case weft::ErrorCode::kNotImplemented: return "not_implemented";
    case weft::ErrorCode::kInvalidArgument: return "invalid_argument";
  }
  return "fail";
}

// An error in what a run was given (its inputs or outputs), weft::ErrorCode::kInvalidArgument.
weft::Error bad_argument(const std::string& message) {
  return weft::Error("error: " + message, weft::ErrorCode::kInvalidArgument);
}

// "obj" as a device tensor, when it is a CUDA tensor (__cuda_array_interface__, or DLPack on
// kDLCUDA); nothing when it is not one.
std::optional<DeviceFeed> device_feed(const std::string& name, const py::object& obj,
                                      const std::string& role = "input") {
  if (py::isinstance<DeviceArray>(obj))
    return DeviceFeed{obj.cast<const DeviceArray&>().tensor(), obj};
  if (py::isinstance<py::array>(obj)) return std::nullopt;
  auto refuse = [&](const std::string& why) {
    return bad_argument(role + " '" + name + "': " + why);
  };
  if (py::hasattr(obj, "__dlpack_device__") && py::hasattr(obj, "__dlpack__")) {
    py::tuple device = obj.attr("__dlpack_device__")();
    if (device[0].cast<int>() != kDLCUDA) return std::nullopt;
    py::capsule capsule = obj.attr("__dlpack__")();
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
    if (!m) throw py::error_already_set();
    const DLTensor& d = m->dl_tensor;
    std::vector<int64_t> shape(d.shape, d.shape + d.ndim);
    std::optional<weft::ElementType> type = from_dl_type(d.dtype);
    if (!type) throw refuse("a DLPack type Weft does not have");
    if (d.strides && !is_contiguous(shape, d.strides, 1))
      throw refuse("a strided tensor; pass a contiguous one (.contiguous())");
    // The consumer owns it now: renamed, and its deleter called with the last reference.
    PyCapsule_SetName(capsule.ptr(), "used_dltensor");
    auto owner = std::shared_ptr<DLManagedTensor>(m, [](DLManagedTensor* p) {
      if (p->deleter) p->deleter(p);
    });
    py::capsule keep(new std::shared_ptr<DLManagedTensor>(owner),
                     [](void* p) { delete static_cast<std::shared_ptr<DLManagedTensor>*>(p); });
    void* data = static_cast<char*>(d.data) + d.byte_offset;
    return DeviceFeed{weft::DeviceTensor::view(*type, shape, data), keep};
  }
  if (py::hasattr(obj, "__cuda_array_interface__")) {
    py::dict cai = obj.attr("__cuda_array_interface__");
    std::vector<int64_t> shape = cai["shape"].cast<std::vector<int64_t>>();
    std::string type = cai["typestr"].cast<std::string>();
    std::optional<weft::ElementType> found;
    for (int e = 0; e <= static_cast<int>(weft::ElementType::kBool); ++e) {
      auto t = static_cast<weft::ElementType>(e);
      if (typestr(t) == type) found = t;
    }
    if (!found) throw refuse("the type '" + type + "', which Weft does not have");
    if (cai.contains("strides") && !cai["strides"].is_none()) {
      std::vector<int64_t> strides = cai["strides"].cast<std::vector<int64_t>>();
      if (!is_contiguous(shape, strides.data(), static_cast<int64_t>(weft::element_size(*found))))
        throw refuse("a strided tensor; pass a contiguous one");
    }
    auto data = reinterpret_cast<void*>(cai["data"].cast<py::tuple>()[0].cast<uintptr_t>());
    return DeviceFeed{weft::DeviceTensor::view(*found, shape, data), obj};
  }
  return std::nullopt;
}

std::vector<int64_t> shape_of(const py::array& a) {
  return std::vector<int64_t>(a.shape(), a.shape() + a.ndim());
}

// A numpy array over "t"'s memory, which stays alive as long as the array does.
py::array to_numpy(const weft::HostTensor& t) {
  if (t.type() == weft::ElementType::kBF16) {
    py::array_t<float> out(t.shape());
    const auto* src = t.data_as<uint16_t>();
    for (int64_t i = 0; i < t.num_elements(); ++i)
      out.mutable_data()[i] = from_bf16(src[i]);
    return out;
  }
  auto* keep = new weft::HostTensor(t);
  py::capsule owner(keep, [](void* p) { delete static_cast<weft::HostTensor*>(p); });
  return py::array(numpy_dtype(t.type()), t.shape(), t.data(), owner);
}

// The Weft type of a numpy dtype (ml_dtypes.bfloat16 for bf16); nothing for others.
std::optional<weft::ElementType> element_type_of(const py::dtype& d) {
  if (d.itemsize() == 2 && std::string(py::str(d)) == "bfloat16") return weft::ElementType::kBF16;
  for (int e = 0; e <= static_cast<int>(weft::ElementType::kBool); ++e) {
    auto t = static_cast<weft::ElementType>(e);
    if (t != weft::ElementType::kBF16 && numpy_dtype(t).equal(d)) return t;
  }
  return std::nullopt;
}

// A copy on the host of a CUDA tensor (a DeviceArray, or another library's by DLPack or
// __cuda_array_interface__), through Weft's device.
py::array device_to_host(const py::object& obj) {
  std::optional<DeviceFeed> feed = device_feed("to_host", obj, "argument");
  if (!feed) {
    throw bad_argument("to_host takes a CUDA tensor, not " +
                       std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  weft::HostTensor host;
  {
    py::gil_scoped_release unlocked;
    host = feed->tensor.to_host();
  }
  return to_numpy(host);
}

// A copy on the device of a host array, in device memory of Weft's.
DeviceArray host_to_device(const py::object& obj) {
  py::array a = py::array::ensure(obj, py::array::c_style);
  if (!a) throw bad_argument("to_device takes a numpy array");
  std::optional<weft::ElementType> type = element_type_of(a.dtype());
  if (!type)
    throw bad_argument("to_device: the dtype " + std::string(py::str(a.dtype())) +
                       ", which Weft does not have");
  weft::HostTensor host = weft::HostTensor::view(*type, shape_of(a), a.data());
  py::gil_scoped_release unlocked;
  return DeviceArray(weft::DeviceTensor::from_host(host));
}

// Writes the CUDA tensor "source" over the CUDA tensor "target" (same type and shape).
void copy_on_device(const py::object& target, const py::object& source) {
  std::optional<DeviceFeed> to = device_feed("target", target, "copy");
  std::optional<DeviceFeed> from = device_feed("source", source, "copy");
  if (!to || !from) throw bad_argument("copy takes two CUDA tensors");
  py::gil_scoped_release unlocked;
  to->tensor.copy_from(from->tensor);
}

py::object spec_shape(const weft::TensorSpec& s) {
  py::list dims;
  for (size_t i = 0; i < s.shape.size(); ++i) {
    if (s.shape[i] >= 0)
      dims.append(s.shape[i]);
    else
      dims.append(s.dim_names[i]); // symbolic, as ONNX Runtime reports it
  }
  return dims;
}

class PyModel {
public:
  explicit PyModel(weft::Model m) : model_(std::move(m)) {}

  // Every feed names an input, and every input has a feed.
  void check_names(const py::dict& feeds) const {
    const auto& specs = model_.inputs();
    for (auto item : feeds) {
      std::string name = py::str(item.first);
      bool known = false;
      for (const auto& s : specs)
        known |= s.name == name;
      if (!known) {
        std::string names;
        for (const auto& s : specs)
          names += (names.empty() ? "'" : ", '") + s.name + "'";
        throw bad_argument("unknown input '" + name + "'; the model's inputs are " + names);
      }
    }
    for (const weft::TensorSpec& s : specs) {
      if (!feeds.contains(s.name)) throw bad_argument("missing input '" + s.name + "'");
    }
  }

  // The feeds as device tensors, in input order, when they are all CUDA tensors; none when
  // none is; an error when some are.
  std::vector<DeviceFeed> device_feeds(const py::dict& feeds) const {
    check_names(feeds);
    std::vector<DeviceFeed> out;
    std::vector<std::string> host;
    for (const weft::TensorSpec& s : model_.inputs()) {
      std::optional<DeviceFeed> f = device_feed(s.name, feeds[s.name.c_str()]);
      if (!f) {
        host.push_back(s.name);
        continue;
      }
      if (f->tensor.type() != s.type) {
        throw bad_argument("input '" + s.name + "' must be " + dtype_name(s.type) + ", got " +
                           dtype_name(f->tensor.type()));
      }
      out.push_back(std::move(*f));
    }
    if (!out.empty() && !host.empty()) {
      throw bad_argument("input '" + host[0] +
                         "' is a host array and others are CUDA tensors: pass all inputs on one "
                         "device");
    }
    return out;
  }

  // Feeds in input order, as arrays that stay alive for the run, and views of them.
  std::vector<weft::HostTensor> views(const py::dict& feeds, std::vector<py::array>* keep) const {
    check_names(feeds);
    std::vector<weft::HostTensor> in;
    for (const weft::TensorSpec& s : model_.inputs()) {
      py::object feed = feeds[s.name.c_str()];
      if (!py::isinstance<py::array>(feed) && py::hasattr(feed, "__dlpack__"))
        feed = py::module_::import("numpy").attr("from_dlpack")(feed); // a view, on the host
      py::array a = py::array::ensure(feed);
      if (!a) throw bad_argument("input '" + s.name + "' is not an array");
      char kind = a.dtype().kind();
      if (!s.labels.empty() && (kind == 'U' || kind == 'O' || kind == 'S'))
        a = indices_of(a, s.labels);
      py::dtype want = numpy_dtype(s.type);
      // A bfloat16 input takes float32 (rounded here) or ml_dtypes.bfloat16 (its bits as
      // they are: what onnx's numpy_helper reads from a bfloat16 TensorProto).
      bool bf16 = s.type == weft::ElementType::kBF16;
      bool bf16_bits =
          bf16 && a.dtype().itemsize() == 2 && std::string(py::str(a.dtype())) == "bfloat16";
      if (!bf16_bits && !a.dtype().is(want) && !a.dtype().equal(want)) {
        throw bad_argument("input '" + s.name + "' must be " + dtype_name(s.type) +
                           (bf16 ? " (float32 or ml_dtypes.bfloat16)" : "") + ", got " +
                           std::string(py::str(a.dtype())));
      }
      a = py::array::ensure(a, py::array::c_style); // no copy when already contiguous
      if (bf16 && !bf16_bits) {
        py::array_t<uint16_t> bits(shape_of(a));
        const float* src = static_cast<const float*>(a.data());
        for (py::ssize_t i = 0; i < a.size(); ++i)
          bits.mutable_data()[i] = to_bf16(src[i]);
        a = bits;
      }
      keep->push_back(a);
      in.push_back(weft::HostTensor::view(s.type, shape_of(a), a.data()));
    }
    return in;
  }

  // Strings fed to an input that takes their indices into "words" (TensorSpec::labels): each
  // one's index, -1 for a string not among them.
  static py::array indices_of(const py::array& strings, const std::vector<std::string>& words) {
    std::unordered_map<std::string, int64_t> index;
    for (size_t i = 0; i < words.size(); ++i)
      index.emplace(words[i], static_cast<int64_t>(i));
    py::array_t<int64_t> out(shape_of(strings));
    py::list flat = strings.attr("ravel")().attr("tolist")();
    int64_t* dst = out.mutable_data();
    for (size_t i = 0; i < flat.size(); ++i) {
      py::handle item = flat[i];
      std::string key =
          py::isinstance<py::bytes>(item) ? item.cast<std::string>() : std::string(py::str(item));
      auto it = index.find(key);
      dst[i] = it == index.end() ? -1 : it->second;
    }
    return out;
  }

  // By name; an output of string labels (TensorSpec::labels) as a numpy array of str.
  py::dict outputs_dict(const std::vector<weft::HostTensor>& out) const {
    py::dict result;
    for (size_t o = 0; o < out.size(); ++o) {
      const weft::TensorSpec& spec = model_.outputs()[o];
      py::object values = to_numpy(out[o]);
      if (!spec.labels.empty())
        values = py::module_::import("numpy").attr("asarray")(spec.labels).attr("take")(values);
      result[py::str(spec.name)] = values;
    }
    return result;
  }

  // Caller-owned outputs, every one named: CUDA tensors when the feeds are (so that a
  // device-resident run keeps its addresses from run to run, as CUDA graphs need), else
  // writable C-contiguous numpy arrays. Returns them, by name.
  py::dict run_into(const py::dict& feeds, const py::dict& outputs) const {
    for (auto item : outputs) {
      std::string name = py::str(item.first);
      bool known = false;
      for (const auto& s : model_.outputs())
        known |= s.name == name;
      if (!known) throw bad_argument("outputs= names '" + name + "', not an output");
    }
    for (const auto& s : model_.outputs()) {
      if (!outputs.contains(s.name))
        throw bad_argument("outputs= must give every output; it lacks '" + s.name + "'");
    }
    std::vector<DeviceFeed> device = device_feeds(feeds);
    py::dict result;
    if (!device.empty()) {
      std::vector<weft::DeviceTensor> in, out;
      std::vector<DeviceFeed> kept;
      for (const DeviceFeed& f : device)
        in.push_back(f.tensor);
      for (const weft::TensorSpec& s : model_.outputs()) {
        py::object obj = outputs[s.name.c_str()];
        std::optional<DeviceFeed> f = device_feed(s.name, obj, "output");
        if (!f)
          throw bad_argument("output '" + s.name + "' must be a CUDA tensor, as the inputs are");
        out.push_back(f->tensor);
        kept.push_back(std::move(*f));
        result[py::str(s.name)] = obj;
      }
      {
        py::gil_scoped_release release;
        model_.run_on_device(in, out);
      }
      return result;
    }
    std::vector<py::array> keep;
    std::vector<weft::HostTensor> in = views(feeds, &keep), out;
    for (const weft::TensorSpec& s : model_.outputs()) {
      py::object obj = outputs[s.name.c_str()];
      auto refuse = [&](const std::string& why) {
        return bad_argument("output '" + s.name + "' " + why);
      };
      if (!py::isinstance<py::array>(obj)) throw refuse("must be a numpy array, as the inputs are");
      py::array a = obj.cast<py::array>();
      if (s.type == weft::ElementType::kBF16)
        throw refuse("is bfloat16, which numpy cannot hold: leave outputs= out");
      if (!a.writeable() || !(a.flags() & py::array::c_style))
        throw refuse("must be a writable C-contiguous array");
      py::dtype want = numpy_dtype(s.type);
      if (!a.dtype().is(want) && !a.dtype().equal(want))
        throw refuse("must be " + dtype_name(s.type) + ", got " + std::string(py::str(a.dtype())));
      out.push_back(weft::HostTensor::view(s.type, shape_of(a), a.mutable_data()));
      result[py::str(s.name)] = obj;
    }
    {
      py::gil_scoped_release release;
      model_.run(in, out);
    }
    return result;
  }

  py::dict run(const py::dict& feeds, const py::object& outputs) const {
    if (!outputs.is_none()) return run_into(feeds, outputs.cast<py::dict>());
    std::vector<DeviceFeed> device = device_feeds(feeds);
    if (!device.empty()) {
      std::vector<weft::DeviceTensor> in, out;
      for (const DeviceFeed& f : device)
        in.push_back(f.tensor);
      {
        py::gil_scoped_release release;
        out = model_.run_on_device(in);
      }
      py::dict result;
      for (size_t o = 0; o < out.size(); ++o)
        result[py::str(model_.outputs()[o].name)] = py::cast(DeviceArray(out[o]));
      return result;
    }
    std::vector<py::array> keep;
    std::vector<weft::HostTensor> in = views(feeds, &keep);
    std::vector<weft::HostTensor> out;
    {
      py::gil_scoped_release release;
      out = model_.run(in);
    }
    return outputs_dict(out);
  }

  // (outputs, kernels): one dict per kernel launch with its time in microseconds.
  py::tuple profile(const py::dict& feeds) const {
    std::vector<py::array> keep;
    std::vector<weft::HostTensor> in = views(feeds, &keep);
    std::vector<weft::HostTensor> out;
    std::vector<weft::KernelTime> times;
    {
      py::gil_scoped_release release;
      out = model_.run_profiled(in, &times);
    }
    py::list kernels;
    for (const weft::KernelTime& k : times) {
      py::dict d;
      d["kernel"] = k.kernel;
      d["node"] = k.node;
      d["op_type"] = k.op_type;
      d["strategy"] = k.strategy;
      d["shapes"] = k.shapes;
      d["bytes"] = k.bytes;
      d["us"] = static_cast<double>(k.end_ns - k.start_ns) / 1e3;
      kernels.append(d);
    }
    return py::make_tuple(outputs_dict(out), kernels);
  }

  py::list specs(const std::vector<weft::TensorSpec>& list) const {
    py::module_ ns = py::module_::import("types");
    py::list out;
    for (const weft::TensorSpec& s : list) {
      py::list keys; // a ZipMap's: ints or strs
      for (const std::string& k : s.map_keys)
        keys.append(s.map_int_keys ? py::object(py::int_(std::stoll(k))) : py::object(py::str(k)));
      out.append(ns.attr("SimpleNamespace")(
          py::arg("name") = s.name, py::arg("dtype") = dtype_name(s.type),
          py::arg("shape") = spec_shape(s), py::arg("map_keys") = keys,
          py::arg("labels") = s.labels));
    }
    return out;
  }

  const weft::Model& model() const { return model_; }

private:
  weft::Model model_;
};

PyModel compile(const py::object& model, const std::string& device, int threads,
                const py::object& dump_dir, bool fusion, bool allow_tf32, bool dynamic_shapes,
                bool allow_bf16) {
  weft::CompileOptions options;
  options.allow_tf32 = allow_tf32;
  options.allow_bf16 = allow_bf16;
  options.dynamic_shapes = dynamic_shapes;
  options.device = device;
  options.threads = threads;
  options.fusion = fusion;
  if (!dump_dir.is_none()) options.dump_dir = py::str(dump_dir);
  if (py::isinstance<py::bytes>(model)) {
    // A view of the caller's bytes, not a copy (a model's weights: ResNet-50's 100 MB more at
    // the peak). They are immutable, and "model" holds them while the GIL is released.
    char* data = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(model.ptr(), &data, &size) != 0) throw py::error_already_set();
    std::string_view bytes(data, static_cast<size_t>(size));
    py::gil_scoped_release release;
    return PyModel(weft::Model::compile_bytes(bytes, options));
  }
  std::string path = py::str(py::module_::import("os").attr("fspath")(model));
  py::gil_scoped_release release;
  return PyModel(weft::Model::compile(path, options));
}

} // namespace

PYBIND11_MODULE(_weft, m) {
  m.doc() = "Weft: an ONNX tensor compiler for memory-bound work";
  // WeftError's code says the kind of error (weft::ErrorCode): weft.InferenceSession raises
  // ONNX Runtime's exception class of that kind (session.py).
  // (Never freed: a static's destructor would run after the interpreter is gone.)
  static auto* weft_error = new py::exception<weft::Error>(m, "WeftError");
  weft_error->attr("code") = "fail";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const weft::Error& e) {
      py::object error = py::reinterpret_borrow<py::object>(*weft_error)(e.what());
      error.attr("code") = error_code_name(e.code());
      PyErr_SetObject(weft_error->ptr(), error.ptr());
    }
  });
  py::class_<DeviceArray>(m, "DeviceArray",
                          "A device-resident output: take it with torch.from_dlpack or "
                          "cupy.from_dlpack (no copy), or through __cuda_array_interface__")
      .def_property_readonly("shape", &DeviceArray::shape)
      .def_property_readonly("dtype", &DeviceArray::dtype)
      .def("data_ptr", &DeviceArray::data_ptr)
      .def("__dlpack_device__", &DeviceArray::dlpack_device)
      // Newer consumers also pass max_version, dl_device and copy: the legacy capsule
      // answers them all (the DLPack protocol allows it).
      .def("__dlpack__",
           [](const DeviceArray& a, const py::args&, const py::kwargs&) { return a.dlpack(); })
      .def_property_readonly("__cuda_array_interface__", &DeviceArray::cuda_array_interface)
      .def(
          "numpy", [](const py::object& self) { return device_to_host(self); },
          "A copy on the host, as a numpy array (bfloat16 as float32)")
      .def("__repr__", [](const DeviceArray& a) {
        return "weft.DeviceArray(shape=" + std::string(py::str(a.shape())) +
               ", dtype=" + a.dtype() + ", device='cuda')";
      });
  py::class_<PyModel>(m, "Model")
      .def_property_readonly("inputs",
                             [](const PyModel& self) { return self.specs(self.model().inputs()); })
      .def_property_readonly("outputs",
                             [](const PyModel& self) { return self.specs(self.model().outputs()); })
      .def("run", &PyModel::run, py::arg("feeds"), py::arg("outputs") = py::none())
      .def_property_readonly("metadata",
                             [](const PyModel& self) {
                               const weft::ModelMetadata& meta = self.model().metadata();
                               py::dict d;
                               d["producer_name"] = meta.producer_name;
                               d["producer_version"] = meta.producer_version;
                               d["domain"] = meta.domain;
                               d["description"] = meta.description;
                               d["graph_name"] = meta.graph_name;
                               d["graph_description"] = meta.graph_description;
                               d["version"] = meta.version;
                               d["custom_metadata_map"] = meta.custom;
                               return d;
                             })
      .def_property_readonly("compiled_variants",
                             [](const PyModel& self) { return self.model().compiled_variants(); })
      .def("profile", &PyModel::profile, py::arg("feeds"));
  m.def("default_threads", &weft::default_threads, py::arg("openmp") = true);
  m.def("to_host", &device_to_host, py::arg("tensor"),
        "A copy on the host of a CUDA tensor (DeviceArray, DLPack or __cuda_array_interface__)");
  m.def("to_device", &host_to_device, py::arg("array"),
        "A copy of a numpy array in CUDA memory of Weft's, as a DeviceArray");
  m.def("copy", &copy_on_device, py::arg("target"), py::arg("source"),
        "Writes one CUDA tensor over another of the same type and shape");
  m.def("compile", &compile, py::arg("model"), py::arg("device") = "cpu", py::arg("threads") = 0,
        py::arg("dump_dir") = py::none(), py::arg("fusion") = true, py::arg("allow_tf32") = false,
        py::arg("dynamic_shapes") = false, py::arg("allow_bf16") = false);
}
