"""NVIDIA's libraries from pip's wheels, for compiles on device "cuda".

Weft loads NVRTC, cuBLAS and cuDNN at run time by their sonames (dlopen), which finds them on
the loader's path: a CUDA toolkit's, or LD_LIBRARY_PATH. PyTorch's CUDA wheels install them
under site-packages/nvidia/*/lib instead (nvidia/cu13/lib; the CUDA 12 packages'
nvidia/cuda_nvrtc/lib, nvidia/cublas/lib; nvidia/cudnn/lib), which the loader does not
search. Before a compile for "cuda", preload() loads each library that none of its sonames
finds from there; Weft's dlopen of the soname then gets the library already loaded (glibc
matches a loaded object's soname). Nothing is loaded for a compile on the CPU.
"""
import ctypes
import glob
import os

# The sonames Weft tries (toolchain/nvrtc.cc, runtime/cuda/cublas_api.cc, cudnn_api.cc) and
# the library's file in a wheel's lib directory.
LIBRARIES = (
    (("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"), "libnvrtc.so.*"),
    (("libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"), "libcublas.so.*"),
    (("libcudnn.so", "libcudnn.so.9", "libcudnn.so.8"), "libcudnn.so.*"),
)

_held = []  # the libraries loaded, kept loaded


def _loads(name):
    try:
        _held.append(ctypes.CDLL(name))
        return True
    except OSError:
        return False


def _version(path):
    """libcudnn.so.10.1 -> (10, 1): versions compare as numbers (10 after 9)."""
    tail = os.path.basename(path).split(".so.", 1)[-1]
    return tuple(int(p) if p.isdigit() else -1 for p in tail.split("."))


def wheel_directories():
    """The lib directories of the installed nvidia-* wheels (the "nvidia" namespace package)."""
    try:
        import nvidia
    except ImportError:
        return []
    dirs = []
    for root in getattr(nvidia, "__path__", []):
        dirs += sorted(glob.glob(os.path.join(root, "*", "lib")))
    return dirs


def preload(loads=_loads, directories=wheel_directories):
    """Loads from the wheels each library that none of its sonames loads; returns the paths
    loaded (the newest version in a directory, the first directory that has one)."""
    found, dirs = [], None
    for names, pattern in LIBRARIES:
        if any(loads(name) for name in names):
            continue
        dirs = directories() if dirs is None else dirs
        for d in dirs:
            files = sorted(glob.glob(os.path.join(d, pattern)), key=_version, reverse=True)
            if files and loads(files[0]):
                found.append(files[0])
                break
    return found


_preloaded = None


def preload_once():
    """preload(), the first time only (a process's later compiles find what it loaded)."""
    global _preloaded
    if _preloaded is None:
        _preloaded = preload()
    return _preloaded
