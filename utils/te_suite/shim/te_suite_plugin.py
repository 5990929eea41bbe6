"""pytest plugin of utils/te_suite (loaded with -p te_suite_plugin by run.py): puts
te_mlir.torch under TransformerEngine's names before the test modules import them,
keeps only the tests of te_mlir's modules, and classifies every case.

Environment (set by run.py): TE_SUITE_MODE (cpu | gpu), TE_SUITE_RESULTS (the JSON file
written at the end), TE_SUITE_CHUNK ("i/n": run only the i-th of n slices of the target
cases), TE_SUITE_SAMPLE (keep one target case in N, chosen by a hash of its
id, of each test function with at least SAMPLED cases; default 1: all), TE_SUITE_TARGET (the modules' te-compile target)."""
import collections
import json
import os
import re
import sys
import zlib
from pathlib import Path

import pytest

MODE = os.environ.get("TE_SUITE_MODE", "cpu")

# test file -> {test function: ids to leave out (a param id substring)}: the tests that
# build Linear / LayerNormLinear / LayerNormMLP / LayerNorm / RMSNorm. Everything else in
# the files is "not a target" (attention, TransformerLayer, GroupedLinear, GEMMs, ...).
TARGETS = {
    "test_numerics.py": {
        "test_linear_accuracy": (), "test_linear_accuracy_delay_wgrad_compute": (),
        "test_linear_accuracy_save_original_input": (), "test_rmsnorm_accuracy": (),
        "test_layernorm_accuracy": (), "test_layernorm_linear_accuracy": (),
        "test_layernorm_linear_accuracy_delay_wgrad_compute": (),
        "test_layernorm_mlp_accuracy": (), "test_layernorm_mlp_accuracy_delay_wgrad_compute": (),
        "test_layernorm_mlp_accuracy_checkpoint": (), "test_noncontiguous": (),
    },
    "test_sanity.py": {
        "test_sanity_normalization_amp": (), "test_sanity_layernorm_linear": (),
        "test_sanity_linear": (), "test_sanity_linear_with_zero_tokens": (),
        "test_sanity_layernorm_mlp": (), "test_model_multiple_cast": (),
        "test_quantized_model_init_high_precision_init_val": (),
        "test_quantized_param_attrs_survive_apply": (),
        "test_linear_frozen_weights_memory_default_recipe": (),
        "test_inference_mode": ("GroupedLinear", "ops.Linear"),
    },
    "test_jit.py": {"test_torch_dynamo": ("TransformerLayer",)},
}
# cpu mode only: what cannot mean anything on the CPU
CPU_ONLY_OUT = {
    "test_linear_frozen_weights_memory_default_recipe":
        "measures torch.cuda.max_memory_allocated (no CUDA memory on the CPU)",
}

SAMPLED = 100  # TE_SUITE_SAMPLE thins only test functions with this many target cases
_results = {}  # nodeid -> {"status", "message"}
_deselected = {}  # nodeid -> reason
_counts = {}  # "targets": the target cases before TE_SUITE_CHUNK's slicing


def _install():
    if MODE == "cpu":
        import cuda_on_cpu
        cuda_on_cpu.install()
        import transformer_engine.pytorch  # noqa: F401  (the fake package)
        return
    # gpu: TransformerEngine first, before te_mlir loads its runtime library
    import transformer_engine.pytorch as te
    import te_suite_modules
    for name, obj in te_suite_modules.replacements("gpu").items():
        setattr(te, name, obj)


def pytest_configure(config):
    _install()


def _target_reason(item):
    """None when `item` is a target case, else why not."""
    fname = Path(str(item.fspath)).name
    funcs = TARGETS.get(fname, {})
    name = getattr(item, "originalname", None) or item.name.split("[")[0]
    if name not in funcs:
        return "not a target (does not build te_mlir's modules)"
    param = item.name[len(name):]
    for out in funcs[name]:
        if out in param:
            return f"not a target ({out})"
    if MODE == "cpu" and name in CPU_ONLY_OUT:
        return "cpu mode: " + CPU_ONLY_OUT[name]
    return None


def pytest_collection_modifyitems(session, config, items):
    sample = max(1, int(os.environ.get("TE_SUITE_SAMPLE", "1")))
    reasons = [_target_reason(item) for item in items]
    per_test = collections.Counter(item.nodeid.split("[")[0] for item, r in zip(items, reasons)
                                   if r is None)
    keep, drop = [], []
    for item, reason in zip(items, reasons):
        if (reason is None and sample > 1 and per_test[item.nodeid.split("[")[0]] >= SAMPLED
                and zlib.crc32(item.nodeid.encode()) % sample):
            reason = f"sampled out (one target case in {sample} runs)"
        if reason is None:
            keep.append(item)
        else:
            drop.append(item)
            _deselected[item.nodeid] = reason
    _counts["targets"] = len(keep)
    chunk = os.environ.get("TE_SUITE_CHUNK")  # "i/n": the i-th of n contiguous slices
    if chunk:
        i, n = map(int, chunk.split("/"))
        lo, hi = i * len(keep) // n, (i + 1) * len(keep) // n
        drop += keep[:lo] + keep[hi:]
        keep = keep[lo:hi]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _te_mlir_dirs():
    dirs = [str(Path(__file__).resolve().parent / "te_suite_modules.py")]
    try:
        import te_mlir
        dirs.append(str(Path(te_mlir.__file__).resolve().parent))
    except ImportError:
        pass
    return dirs


def _first_line(exc):
    """The exception's type and first line, and when it has more (te-compile's command, then
    its stderr) the first error line after it, or the last line."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    msg = f"{type(exc).__name__}: {lines[0][:400] if lines else ''}"
    if len(lines) > 1:
        errs = [ln for ln in lines[1:] if "error" in ln.lower() and "see above" not in ln]
        msg += f" | {(errs or lines[-1:])[0].strip()[:400]}"
    return msg


# te-compile's error line when it refuses a construct by name (not a crash or a verifier
# failure, which are bugs)
CAPACITY = re.compile(r"more than \d+ te-mlir ops in one process")
REFUSAL = re.compile(r"not supported|unsupported|not implemented|not decomposed yet")


def classify(excinfo):
    """("unsupported" | "failed", message) for a test body's exception: unsupported when
    te_mlir refused the case by name (a TeMlirError or NotImplementedError raised in
    te_mlir's Python; a te-compile failure only when its error line is a refusal, REFUSAL)."""
    exc = excinfo.value
    msg = _first_line(exc)
    try:
        from te_mlir import TeMlirError
    except ImportError:  # pragma: no cover
        TeMlirError = ()
    if not isinstance(exc, (TeMlirError, NotImplementedError)):
        return "failed", msg
    where = str(excinfo.traceback[-1].path)
    if not any(where.startswith(d) for d in _te_mlir_dirs()):
        return "failed", msg
    if CAPACITY.search(msg):  # a process-wide limit, not a refusal of this case
        return "failed", msg
    if str(exc).startswith("te-compile failed"):  # a refusal by name, or a compiler bug
        return ("unsupported" if REFUSAL.search(msg.split(" | ", 1)[-1]) else "failed"), msg
    return "unsupported", msg


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    prev = _results.get(item.nodeid)
    if rep.skipped and call.when in ("setup", "call"):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        _results[item.nodeid] = {"status": "skipped", "message": reason.removeprefix("Skipped: ")}
    elif rep.failed:
        if call.when == "call" and call.excinfo is not None:
            status, msg = classify(call.excinfo)
        else:
            status = "error"
            msg = (f"{call.when}: " + _first_line(call.excinfo.value)) if call.excinfo else \
                f"{call.when} failed"
        if prev is None or prev["status"] in ("passed",):
            _results[item.nodeid] = {"status": status, "message": msg}
    elif rep.passed and call.when == "call":
        _results[item.nodeid] = {"status": "passed"}


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("TE_SUITE_RESULTS")
    if out:
        Path(out).write_text(json.dumps({"mode": MODE, "cases": _results,
                                         "deselected": _deselected, **_counts}))
