"""ONNX Runtime's session options for the benchmarks, which time it in the same process as
Weft and the other peers.

By default ONNX Runtime's worker threads keep spinning for up to a second after a run returns,
taking cores from whatever is timed next: on 2 cores, Weft ran the GPT-2 block of cnn_bench.py
at 7.4-10 ms right after ONNX Runtime's runs, 5.6-6.3 ms otherwise (AMD EPYC, 2026-12-01).
session.force_spinning_stop parks them when a run returns; they still spin within a run, and
ONNX Runtime's own times stayed within 3% (6.51-6.59 against 6.58-6.77 ms).
"""
import onnxruntime as ort


def session_options(threads=None):
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    options.add_session_config_entry("session.force_spinning_stop", "1")
    return options


def described(result):
    """How a stored run's ONNX Runtime sessions were set up, for its table's text: runs from
    before 2026-12-01 (no "ort_threads_parked" field) had the default options."""
    if result.get("ort_threads_parked"):
        return "its threads parked after each run, session.force_spinning_stop: bench/ort_options.py"
    return "default options"
