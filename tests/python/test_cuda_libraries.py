"""Before a compile for "cuda", NVIDIA's libraries that the loader does not find come from pip's
nvidia-* wheels (python/weft/_cuda_libraries.py): NVRTC, cuBLAS and cuDNN, the newest of each
(by version number) in the first wheel directory that has it, never a neighbour with a similar name (NVRTC's
builtins, cuBLASLt, cuDNN's sub-libraries); nothing where the sonames load."""
import os

from weft import _cuda_libraries

# A wheel layout: PyTorch's CUDA 13 wheels (nvidia/cu13/lib) and cuDNN's (nvidia/cudnn/lib).
FILES = {
    "cu13/lib": ["libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc-builtins.so.13.2",
                 "libnvrtc.alt.so.13", "libcublasLt.so.13", "libcublas.so.13"],
    "cudnn/lib": ["libcudnn.so.9", "libcudnn.so.10", "libcudnn_ops.so.9", "libcudnn_graph.so.9"],
}


def wheels(tmp_path):
    dirs = []
    for d, names in FILES.items():
        os.makedirs(tmp_path / d)
        for name in names:
            (tmp_path / d / name).write_bytes(b"")
        dirs.append(str(tmp_path / d))
    return dirs


def test_loads_each_library_from_the_wheels_where_the_loader_does_not_find_it(tmp_path):
    dirs = wheels(tmp_path)
    tried = []

    def loads(name):  # no soname loads; every file in a wheel does
        tried.append(name)
        return os.path.isabs(name)

    found = _cuda_libraries.preload(loads, lambda: dirs)
    assert [os.path.basename(f) for f in found] == ["libnvrtc.so.13", "libcublas.so.13",
                                                    "libcudnn.so.10"]
    assert [t for t in tried if not os.path.isabs(t)] == [
        n for names, _ in _cuda_libraries.LIBRARIES for n in names]


def test_nothing_from_the_wheels_where_the_sonames_load(tmp_path):
    dirs = wheels(tmp_path)
    assert _cuda_libraries.preload(lambda name: not os.path.isabs(name), lambda: dirs) == []


def test_wheel_directories_are_lib_folders_of_the_nvidia_package():
    for d in _cuda_libraries.wheel_directories():  # none without nvidia-* wheels
        assert os.path.basename(d) == "lib" and os.sep + "nvidia" + os.sep in d
