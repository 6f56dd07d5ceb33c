"""The machine a benchmark ran on, as its results file records it (standard library only, for
the benches that run under the system Python)."""
import os
import platform


def machine():
    """The CPU's model name, core count and widest vector ISA: a VM's generic model name ("AMD
    EPYC") covers CPUs with and without AVX-512, whose kernels differ."""
    model, named, flags = platform.processor(), False, []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and not named:
                    model, named = line.split(":", 1)[1].strip(), True
                if line.startswith("flags"):
                    flags = line.split(":", 1)[1].split()
                    break
    except OSError:
        pass
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else None
    return f"{model}, {os.cpu_count()} cores" + (f", {isa}" if isa else "")
