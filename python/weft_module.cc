// The Python module `weft` (its compiled part, weft._weft), over the public C++ API.
//
// Arrays cross without copies where the types allow: a C-contiguous input of the declared
// dtype is read in place, and each output is a numpy array over the memory Weft allocated
// for it (kept alive by a capsule, its base). bf16 has no numpy dtype: bf16 inputs take
// float32 arrays (rounded to nearest even) and bf16 outputs come back as float32 (exact).
#include <cstring>
#include <string>

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
  }
  return py::dtype("float32");
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

  // Feeds in input order, as arrays that stay alive for the run, and views of them.
  std::vector<weft::HostTensor> views(const py::dict& feeds, std::vector<py::array>* keep) const {
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
        throw weft::Error("error: unknown input '" + name + "'; the model's inputs are " + names);
      }
    }
    std::vector<weft::HostTensor> in;
    for (const weft::TensorSpec& s : specs) {
      if (!feeds.contains(s.name)) throw weft::Error("error: missing input '" + s.name + "'");
      py::array a = py::array::ensure(feeds[s.name.c_str()]);
      if (!a) throw weft::Error("error: input '" + s.name + "' is not an array");
      py::dtype want = numpy_dtype(s.type);
      if (!a.dtype().is(want) && !a.dtype().equal(want)) {
        throw weft::Error("error: input '" + s.name + "' must be " + dtype_name(s.type) + ", got " +
                          std::string(py::str(a.dtype())));
      }
      a = py::array::ensure(a, py::array::c_style); // no copy when already contiguous
      if (s.type == weft::ElementType::kBF16) {
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

  py::dict outputs_dict(const std::vector<weft::HostTensor>& out) const {
    py::dict result;
    for (size_t o = 0; o < out.size(); ++o)
      result[py::str(model_.outputs()[o].name)] = to_numpy(out[o]);
    return result;
  }

  py::dict run(const py::dict& feeds) const {
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
      out.append(ns.attr("SimpleNamespace")(py::arg("name") = s.name,
                                            py::arg("dtype") = dtype_name(s.type),
                                            py::arg("shape") = spec_shape(s)));
    }
    return out;
  }

  const weft::Model& model() const { return model_; }

private:
  weft::Model model_;
};

PyModel compile(const py::object& model, const std::string& device, int threads,
                const py::object& dump_dir, bool fusion) {
  weft::CompileOptions options;
  options.device = device;
  options.threads = threads;
  options.fusion = fusion;
  if (!dump_dir.is_none()) options.dump_dir = py::str(dump_dir);
  if (py::isinstance<py::bytes>(model)) {
    std::string bytes = model.cast<std::string>();
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
  py::register_exception<weft::Error>(m, "WeftError");
  py::class_<PyModel>(m, "Model")
      .def_property_readonly("inputs",
                             [](const PyModel& self) { return self.specs(self.model().inputs()); })
      .def_property_readonly("outputs",
                             [](const PyModel& self) { return self.specs(self.model().outputs()); })
      .def("run", &PyModel::run, py::arg("feeds"))
      .def("profile", &PyModel::profile, py::arg("feeds"));
  m.def("compile", &compile, py::arg("model"), py::arg("device") = "cpu", py::arg("threads") = 0,
        py::arg("dump_dir") = py::none(), py::arg("fusion") = true);
}
