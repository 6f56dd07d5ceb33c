"""ONNX Runtime's exception classes, by the names and module path that scripts catch them by
(`except ort.capi.onnxruntime_pybind11_state.InvalidProtobuf:`), so that `import weft as ort`
keeps those except clauses working. Each is a weft.WeftError. weft.InferenceSession raises the
class of its error's kind (WeftError.code, from weft::ErrorCode), with Weft's message:

    no_such_file     NoSuchFile        the model file is missing
    invalid_model    InvalidProtobuf   the bytes are not an ONNX model
    not_implemented  NotImplemented    an op, domain, opset or IR version Weft lacks
    invalid_argument InvalidArgument   a run's inputs do not fit the model
    fail             Fail              anything else

ONNX Runtime raises some of these in other cases (an unknown op is InvalidGraph there); the
other classes are here for except clauses that name them. Where ONNX Runtime raises ValueError
(inputs missing from a run's feed), Weft raises MissingInputs, an InvalidArgument that is also
a ValueError.
"""

from .._weft import WeftError

__all__ = ["Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
           "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail",
           "ModelLoadCanceled", "ModelRequiresCompilation", "NotFound", "DeviceReset",
           "MissingInputs"]


class Fail(WeftError):
    code = "fail"


class InvalidArgument(WeftError):
    code = "invalid_argument"


class MissingInputs(InvalidArgument, ValueError):
    """Inputs missing from a run's feed (ValueError in ONNX Runtime)."""


class NoSuchFile(WeftError):
    code = "no_such_file"


class InvalidProtobuf(WeftError):
    code = "invalid_model"


class NotImplemented(WeftError):  # noqa: A001 (ONNX Runtime's name)
    code = "not_implemented"


class NoModel(WeftError):
    pass


class EngineError(WeftError):
    pass


class RuntimeException(WeftError):
    pass


class ModelLoaded(WeftError):
    pass


class InvalidGraph(WeftError):
    pass


class EPFail(WeftError):
    pass


class ModelLoadCanceled(WeftError):
    pass


class ModelRequiresCompilation(WeftError):
    pass


class NotFound(WeftError):
    pass


class DeviceReset(WeftError):
    pass


def as_onnxruntime_error(error):
    """The ONNX Runtime class of a WeftError's kind, with its message."""
    kinds = {c.code: c
             for c in (Fail, InvalidArgument, NoSuchFile, InvalidProtobuf, NotImplemented)}
    return kinds.get(getattr(error, "code", "fail"), Fail)(*error.args)
