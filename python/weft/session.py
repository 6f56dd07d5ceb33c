"""weft.InferenceSession: ONNX Runtime's Python session API over weft.compile, so that a
script written for onnxruntime runs on Weft when its import is swapped:

    import weft as ort                            # was: import onnxruntime as ort
    sess = ort.InferenceSession("model.onnx", providers=["CUDAExecutionProvider",
                                                         "CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    out = sess.run(None, {name: x})[0]            # a list, in the order of output_names

Providers: "CUDAExecutionProvider" compiles for device "cuda", "CPUExecutionProvider" for
"cpu". The first one that is available wins: when CUDA is not (no driver, no GPU), a warning
says so and the next one is tried, and CPU is the last resort, as in ONNX Runtime. Other
providers of ONNX Runtime (names ending in "ExecutionProvider": TensorRT, OpenVINO, ...) are
passed over with a warning, as ONNX Runtime does with those its build lacks; any other name
raises ValueError. The CUDA provider's options: "use_tf32" is compile()'s allow_tf32, and
"device_id" must be 0 (Weft runs on CUDA device 0; choose it with CUDA_VISIBLE_DEVICES).

A session compiles with dynamic_shapes (once for every extent of the inputs' symbolic dims, as
ONNX Runtime runs any shape; where a model cannot, per set of input shapes, as compile() does by
default); the session config entry "weft.dynamic_shapes" set to "0" compiles per set of shapes,
and "weft.allow_bf16" set to "1" is compile()'s allow_bf16 (CPU: f32 convolutions and matrix products
multiply operands rounded to bf16 where the CPU does natively).

SessionOptions: intra_op_num_threads is compile()'s threads (0: $WEFT_NUM_THREADS, else all
cores: OMP_NUM_THREADS left aside, as ONNX Runtime does); graph_optimization_level
ORT_DISABLE_ALL compiles with fusion=False (one kernel per node) and every other level with
fusion; enable_profiling times each kernel of each run
(model.profile(), host inputs only), and end_profiling() writes the times as a Chrome trace
(JSON) named from profile_file_prefix and returns its path. The other options ONNX Runtime
has (inter_op_num_threads, execution_mode, log_severity_level, optimized_model_filepath, ...)
are accepted and ignored, as are run_options.

Where it differs from ONNX Runtime:
- bfloat16: numpy has none, so bfloat16 inputs are float32 arrays (rounded to nearest even)
  and bfloat16 outputs come back as float32 (exact); NodeArg.type still says
  "tensor(bfloat16)".
- providers=None means CPU (a GPU build of ONNX Runtime asks for providers to be named).
- get_available_providers() lists CUDA first whether or not this machine has a GPU, as a GPU
  build of ONNX Runtime does; a session that asks for CUDA and finds none falls back.
- use_tf32 is off unless asked for (fp32 matmuls and convolutions), where ONNX Runtime's CUDA
  provider allows TF32 by default.
- Errors carry Weft's message, in ONNX Runtime's exception classes (weft.capi.
  onnxruntime_pybind11_state, each a weft.WeftError): NoSuchFile, InvalidProtobuf,
  NotImplemented (an unsupported op, opset or IR version, where ONNX Runtime says InvalidGraph
  or Fail), InvalidArgument (what a run was given, missing inputs too, where ONNX Runtime
  raises ValueError), and Fail for the rest.
- Lists (and tuples) as inputs are converted to the input's dtype, as ONNX Runtime converts
  lists; arrays must have the input's dtype.
- Every output is computed whatever output_names asks for; run() returns the asked ones.
- Shapes are Weft's: dims the model leaves unnamed have Weft's names ("unk0", ...) where
  ONNX Runtime says None, and output shapes are the ones Weft infers.
- A run of a CUDA session whose inputs are all CUDA tensors (DLPack or
  __cuda_array_interface__: PyTorch, CuPy) stays on the device and returns weft.DeviceArray
  outputs, not numpy arrays (ONNX Runtime's way there is IOBinding and OrtValue, which
  Weft has too).
- An output the model declares as a sequence of maps (ai.onnx.ml's ZipMap, the last op of
  skl2onnx's classifiers) comes back as ONNX Runtime gives it, a list of {label: probability}
  dicts (host runs only); weft.compile() gives the tensor [N, C], with the labels in its
  outputs' map_keys.
- String class labels (a classifier trained on strings) come back as ONNX Runtime gives them,
  arrays of str objects; weft.compile() gives numpy str arrays, with the labels in its
  outputs' labels (a device-resident run gives their indices).
- get_device() says "GPU", as a GPU build of ONNX Runtime does, GPU or not;
  set_default_logger_severity and the telemetry switches are accepted and do nothing.
- run_async runs on a thread of its own (ONNX Runtime's: one of its intra-op pool), and
  RunOptions' settings and config entries are kept and ignored.
- io_binding, run_with_iobinding, run_with_ort_values and OrtValue are weft/ort_values.py's,
  which says how they differ. Inputs missing from a feed raise MissingInputs, an
  InvalidArgument that is also a ValueError (ONNX Runtime raises ValueError there).
- Not here: custom op libraries (SessionOptions.register_custom_ops_library raises
  NotImplemented) and add_initializer; disable_fallback and enable_fallback do nothing (Weft
  falls back only when a session is made).
"""

import enum
import json
import os
import threading
import time
import warnings

import numpy as np

from . import _cuda_libraries, _weft
from ._weft import WeftError
# ONNX Runtime's exception classes (NotImplemented is theirs, not the builtin).
from .capi import onnxruntime_pybind11_state as ort_errors
from .ort_values import ONNX_TYPES as _ONNX_TYPES
from .ort_values import IOBinding, OrtValue

# Weft's devices, by provider name.
_DEVICES = {"CUDAExecutionProvider": "cuda", "CPUExecutionProvider": "cpu"}


def get_available_providers():
    """The providers Weft has, CUDA first, as a GPU build of ONNX Runtime lists them. CUDA is
    listed whether or not this machine has a GPU: a session that asks for it and finds none
    falls back to the next provider with a warning."""
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


def get_device():
    """"GPU", as a GPU build of ONNX Runtime says (get_available_providers lists CUDA)."""
    return "GPU"


def get_version_string():
    """Weft's version (onnxruntime.get_version_string() gives ONNX Runtime's)."""
    from . import __version__
    return __version__


def get_all_providers():
    """The providers Weft knows: get_available_providers()'s."""
    return get_available_providers()


def preload_dlls(cuda=True, cudnn=True, msvc=True, directory=None):
    """Loads NVIDIA's libraries from pip's nvidia-* wheels where the loader does not find
    them, as a compile for "cuda" does anyway (_cuda_libraries.py); the arguments are ONNX
    Runtime's, and ignored."""
    _cuda_libraries.preload_once()


def set_default_logger_severity(severity):
    """Accepted and ignored: Weft logs only where $WEFT_LOG asks (docs/knobs.md)."""


def set_default_logger_verbosity(verbosity):
    """Accepted and ignored, as set_default_logger_severity."""


def disable_telemetry_events():
    """Accepted: Weft sends no telemetry."""


def enable_telemetry_events():
    """Accepted: Weft sends no telemetry."""


class ModelMetadata:
    """What the model file says about itself, as ONNX Runtime's ModelMetadata has it:
    producer_name, domain, description (the model's doc_string), graph_name,
    graph_description (the graph's doc_string), version (model_version) and
    custom_metadata_map (metadata_props: an exporter's class names, strides, ...)."""

    def __init__(self, fields):
        self.producer_name = fields["producer_name"]
        self.domain = fields["domain"]
        self.description = fields["description"]
        self.graph_name = fields["graph_name"]
        self.graph_description = fields["graph_description"]
        self.version = fields["version"]
        self.custom_metadata_map = dict(fields["custom_metadata_map"])


class GraphOptimizationLevel(enum.IntEnum):
    """ONNX Runtime's levels (and values). Weft fuses at every level but ORT_DISABLE_ALL."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """ONNX Runtime's execution modes; accepted and ignored (Weft runs kernels in order)."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


def _dynamic_shapes(opts):
    """Whether to compile once for every extent of the inputs' symbolic dims, as ONNX Runtime
    runs any shape: yes unless the session config entry "weft.dynamic_shapes" is "0"."""
    config = getattr(opts, "_config", {})
    return config.get("weft.dynamic_shapes", "1") != "0"


def _allow_bf16(opts):
    """compile()'s allow_bf16: the session config entry "weft.allow_bf16" set to "1"."""
    return getattr(opts, "_config", {}).get("weft.allow_bf16", "0") == "1"


class SessionOptions:
    """ONNX Runtime's session options, with its defaults. Any attribute may be set; the ones
    Weft reads are intra_op_num_threads, graph_optimization_level, enable_profiling and
    profile_file_prefix (see the module's docstring)."""

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_profiling = False
        self.profile_file_prefix = "weft_profile"
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.optimized_model_filepath = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.use_deterministic_compute = False
        self._config = {}

    def add_session_config_entry(self, key, value):
        """Kept; Weft reads "weft.dynamic_shapes" ("0": a compile per set of input shapes)
        and ignores the others."""
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise KeyError(f"SessionOptions has no config entry '{key}'")
        return self._config[key]

    def add_free_dimension_override_by_name(self, name, value):
        """Ignored: Weft takes each run's shapes from its inputs."""

    def add_free_dimension_override_by_denotation(self, denotation, value):
        """Ignored: Weft takes each run's shapes from its inputs."""

    def has_providers(self):
        """False: providers are InferenceSession's argument (add_provider is not here)."""
        return False

    def register_custom_ops_library(self, library_path):
        """Refused: a custom op library's kernels are ONNX Runtime's C API, which Weft has not."""
        raise ort_errors.NotImplemented(
            f"error: {library_path}: Weft does not load custom op libraries (ONNX Runtime's C "
            "API); their ops are not supported")

    def add_initializer(self, name, value):
        """Refused: Weft folds the model's own initializers at compile time."""
        raise ort_errors.NotImplemented(
            f"error: initializer '{name}': Weft takes initializers from the model only "
            "(add_initializer is not supported)")


class RunOptions:
    """ONNX Runtime's run options; any attribute or config entry may be set, and all are
    ignored."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config = {}

    def add_run_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        if key not in self._config:
            raise RuntimeError(f"RunOptions does not have configuration with key: {key}")
        return self._config[key]


class NodeArg:
    """An input or output: name, type ("tensor(float)", ...) and shape (ints, and strings
    for symbolic dims)."""

    def __init__(self, name, type, shape):
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _node_args(specs):
    return [NodeArg(s.name, _map_type(s) or ("tensor(string)" if s.labels else None)
                    or _ONNX_TYPES.get(s.dtype, f"tensor({s.dtype})"),
                    [] if s.map_keys else list(s.shape))
            for s in specs]


def _from_list(value, dtype):
    """A list or tuple given as an input, as an array of the input's dtype (bfloat16 inputs take
    float32 arrays); anything else as it is."""
    if not isinstance(value, (list, tuple)) or dtype is None:
        return value
    try:
        numpy_dtype = np.float32 if dtype == "bfloat16" else np.dtype(dtype)
    except TypeError:  # an ml_dtypes type: Weft's own error says what it needs
        return np.asarray(value)
    return np.asarray(value, dtype=numpy_dtype)


def _map_type(spec):
    """A ZipMap output's type, as ONNX Runtime names it; None for a tensor."""
    if not spec.map_keys:
        return None
    key = "int64" if isinstance(spec.map_keys[0], int) else "string"
    return f"seq(map({key},tensor(float)))"


def _as_maps(values, keys):
    """A ZipMap's rows [N, C] as ONNX Runtime returns them: one {key: float} dict per row."""
    if not isinstance(values, np.ndarray):
        raise WeftError("error: a ZipMap output (a sequence of maps) needs a run from host inputs")
    rows = values.reshape(1, -1) if values.ndim == 1 else values
    if rows.ndim != 2 or rows.shape[1] != len(keys):
        raise WeftError(f"error: ZipMap has {len(keys)} labels for values of shape {list(rows.shape)}")
    return [dict(zip(keys, map(float, row))) for row in rows]


def _provider_list(providers, provider_options):
    """[(name, options)] from ONNX Runtime's two ways of giving them: names with a parallel
    list of option dicts, or (name, options) tuples among the names."""
    providers = list(providers or [])
    if provider_options is not None:
        if len(provider_options) != len(providers):
            raise ValueError("'providers' and 'provider_options' must have the same length")
        if any(not isinstance(p, str) for p in providers):
            raise ValueError("give provider options either in 'providers' or in "
                             "'provider_options', not both")
        pairs = list(zip(providers, provider_options))
    else:
        pairs = []
        for p in providers:
            if isinstance(p, str):
                pairs.append((p, {}))
            elif isinstance(p, (tuple, list)) and len(p) == 2 and isinstance(p[0], str):
                pairs.append((p[0], p[1]))
            else:
                raise ValueError(f"a provider is a name or a (name, options) tuple, not {p!r}")
    out, seen = [], set()
    for name, options in pairs:
        if name not in _DEVICES and not name.endswith("ExecutionProvider"):
            known = ", ".join(f"'{n}'" for n in get_available_providers())
            raise ValueError(f"unknown provider '{name}'; Weft's providers are {known}")
        if name in seen:
            warnings.warn(f"duplicate provider '{name}' ignored")
            continue
        seen.add(name)
        out.append((name, dict(options or {})))
    return out


def _allow_tf32(options):
    return str(options.get("use_tf32", 0)).strip().lower() in ("1", "true")


class InferenceSession:
    """A compiled model with ONNX Runtime's session API (see the module's docstring)."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        # kwargs: ONNX Runtime's disabled_optimizers and the like, accepted and ignored.
        if isinstance(path_or_bytes, (bytearray, memoryview)):
            path_or_bytes = bytes(path_or_bytes)
        self._source = path_or_bytes
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self._profiling = bool(getattr(self._sess_options, "enable_profiling", False))
        self._start_ns = time.time_ns()
        self._events = []  # kernel times while profiling, as Chrome trace events
        self._create(providers, provider_options)

    def _create(self, providers, provider_options):
        """Compiles for the first provider that is available; CPU is the last resort."""
        wanted = _provider_list(providers, provider_options)
        if "CPUExecutionProvider" not in [name for name, _ in wanted]:
            wanted.append(("CPUExecutionProvider", {}))
        opts = self._sess_options
        threads = int(getattr(opts, "intra_op_num_threads", 0) or 0)
        if threads == 0 and not os.environ.get("WEFT_NUM_THREADS"):
            # ONNX Runtime's default, which OMP_NUM_THREADS does not change (Ultralytics sets it
            # to 1 for its training, and Weft's session ran on one thread under it).
            threads = _weft.default_threads(openmp=False)
        level = getattr(opts, "graph_optimization_level", GraphOptimizationLevel.ORT_ENABLE_ALL)
        fusion = level != GraphOptimizationLevel.ORT_DISABLE_ALL
        for i, (name, options) in enumerate(wanted):
            rest = [n for n, _ in wanted[i + 1:]]
            device = _DEVICES.get(name)
            if device is None:
                warnings.warn(f"Weft has no {name}; falling back to {rest}")
                continue
            if device == "cuda" and int(options.get("device_id", 0)) != 0:
                raise ValueError("Weft runs on CUDA device 0; choose the GPU with "
                                 "CUDA_VISIBLE_DEVICES instead of device_id")
            try:
                if device == "cuda":
                    _cuda_libraries.preload_once()
                model = _weft.compile(self._source, device=device, threads=threads,
                                      fusion=fusion, allow_tf32=_allow_tf32(options),
                                      dynamic_shapes=_dynamic_shapes(opts),
                                      allow_bf16=_allow_bf16(opts))
            except WeftError as e:
                # CUDA without a driver or GPU: the next provider, as ONNX Runtime does.
                if device == "cpu" or "not available" not in str(e):
                    raise ort_errors.as_onnxruntime_error(e) from None
                warnings.warn(f"{name} is not available ({e}); falling back to {rest}")
                continue
            self._model = model
            self._providers = [name] if device == "cpu" else [name, "CPUExecutionProvider"]
            self._provider_options = {n: {} for n in self._providers}
            self._provider_options[name] = {k: str(v) for k, v in options.items()}
            self._inputs = _node_args(model.inputs)
            self._outputs = _node_args(model.outputs)
            self._maps = {o.name: o.map_keys for o in model.outputs if o.map_keys}  # ZipMaps
            self._labels = {o.name for o in model.outputs if o.labels}  # string class labels
            self._dtypes = {i.name: i.dtype for i in model.inputs if not i.labels}
            return

    @property
    def weft_model(self):
        """The weft.Model underneath (for profile() and the like)."""
        return self._model

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_modelmeta(self):
        """The model's metadata (ModelMetadata)."""
        return ModelMetadata(self._model.metadata)

    def get_overridable_initializers(self):
        """None: Weft folds initializers into the compiled model."""
        return []

    def get_providers(self):
        """The providers in use: the one that won, then CPU, as ONNX Runtime lists them."""
        return list(self._providers)

    def get_provider_options(self):
        """{provider: {option: value as a string}} for the providers in use."""
        return {n: dict(o) for n, o in self._provider_options.items()}

    def get_session_options(self):
        return self._sess_options

    def set_providers(self, providers=None, provider_options=None):
        """Compiles the model again for these providers."""
        self._create(providers, provider_options)

    def disable_fallback(self):
        """Nothing to disable: Weft falls back to another provider only when the session is
        made (a CUDA session without a GPU), never during runs."""

    def enable_fallback(self):
        """As disable_fallback."""

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named in output_names (None or []: all of them, in the model's order)
        as a list of numpy arrays, from input_feed, {input name: array}. On a CUDA session
        whose inputs are all CUDA tensors the outputs are weft.DeviceArray (no copies)."""
        names = [o.name for o in self._outputs]
        wanted = list(output_names) if output_names else names
        for n in wanted:
            if n not in names:
                valid = ", ".join(f"'{v}'" for v in names)
                raise ort_errors.InvalidArgument(
                    f"error: unknown output '{n}'; the model's outputs are {valid}")
        out = self._run_feeds({name: _from_list(value, self._dtypes.get(name))
                               for name, value in input_feed.items()})
        return [_as_maps(out[n], self._maps[n]) if n in self._maps
                else out[n].astype(object) if n in self._labels and isinstance(out[n], np.ndarray)
                else out[n] for n in wanted]

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """run() on a thread of its own, then callback(outputs, user_data, "") there, or
        callback([], user_data, message) where the run failed. Inputs missing from the feed
        raise here, as ONNX Runtime's do."""
        self._check_feed(input_feed)

        def work():
            try:
                outputs = self.run(output_names, input_feed, run_options)
            except Exception as e:  # noqa: BLE001 (handed to the callback, as ONNX Runtime does)
                callback([], user_data, str(e))
                return
            callback(outputs, user_data, "")

        threading.Thread(target=work, daemon=True).start()

    def _check_feed(self, feeds):
        missing = [i.name for i in self._inputs if i.name not in feeds]
        if missing:
            names = ", ".join(f"'{n}'" for n in missing)
            raise ort_errors.MissingInputs(
                f"error: missing input{'s' if len(missing) > 1 else ''} {names}")

    def _run_feeds(self, feeds, outputs=None):
        """{output name: value} of a run, with ONNX Runtime's exception classes; "outputs"
        ({name: array}, every output) are written in place."""
        self._check_feed(feeds)
        try:
            if outputs is not None:
                return self._model.run(feeds, outputs=outputs)
            if not self._profiling:
                return self._model.run(feeds)
            start_us = (time.time_ns() - self._start_ns) / 1e3
            out, kernels = self._model.profile(feeds)
            self._record(kernels, start_us)
            return out
        except WeftError as e:
            raise ort_errors.as_onnxruntime_error(e) from None

    def io_binding(self):
        """Inputs and outputs bound by pointer or as OrtValues (weft/ort_values.py)."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        iobinding._run()

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """run() over OrtValues: the outputs named (None: all) as OrtValues."""
        names = [o.name for o in self._outputs]
        wanted = list(output_names) if output_names else names
        out = self.run(wanted, {n: v._value for n, v in input_dict_ort_values.items()})
        return [OrtValue(v) for v in out]

    def _record(self, kernels, start_us):
        """Kernel times as Chrome trace events, laid end to end from the run's start."""
        ts = start_us
        for k in kernels:
            self._events.append({
                "cat": "Node", "ph": "X", "name": k["node"] or k["kernel"], "ts": ts,
                "dur": k["us"], "pid": os.getpid(), "tid": threading.get_ident(),
                "args": {"op_name": k["op_type"], "kernel": k["kernel"],
                         "strategy": k["strategy"], "shapes": k["shapes"],
                         "bytes": k["bytes"]}})
            ts += k["us"]

    def end_profiling(self):
        """Writes the kernel times so far and returns the file's path ("" when profiling is
        off); profiling stops."""
        if not self._profiling:
            return ""
        self._profiling = False
        prefix = getattr(self._sess_options, "profile_file_prefix", "weft_profile")
        path = f"{prefix}_{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
        with open(path, "w") as f:
            json.dump(self._events, f)
        return path

    def get_profiling_start_time_ns(self):
        return self._start_ns
