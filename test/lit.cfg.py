# -*- Python -*-
# lit configuration of the te-mlir regression suite (check-te).

import os
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "expected-imports.txt", "check_imports.sh", "check_backward.sh", "check_block_layout.py", "fake_module.py"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.te_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%te_libs", config.te_libs_dir))
config.substitutions.append(("%te_opt_path", os.path.join(config.te_tools_dir, "te-opt")))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%te_src", os.path.dirname(config.test_source_root)))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# FileCheck variables do not leak across CHECK-LABELs (Triton does the same).
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

if config.te_enable_sanitizers:
    # Debian's libMLIR is not instrumented: leaks inside it are not ours.
    # Header-inlined LLVM allocators poison their slabs in our instrumented
    # code while the uninstrumented libMLIR writes them: ignore user
    # poisoning (a false positive of mixed instrumentation).
    config.environment["ASAN_OPTIONS"] = "detect_leaks=0:allow_user_poisoning=0"
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

config.substitutions.append(("%te_bin", config.te_tools_dir))

tools = [
    ToolSubst("te-opt", unresolved="fatal"),
    ToolSubst("te-compile", unresolved="fatal"),
    ToolSubst("te-run", unresolved="fatal"),
    ToolSubst("mlir-opt", unresolved="fatal"),
]
llvm_config.add_tool_substitutions(tools, [config.te_tools_dir, config.llvm_tools_dir])

if config.te_build_plugin and not config.te_enable_sanitizers:
    config.available_features.add("plugin")

# `cuda`: the runtime was built with CUDA and a GPU is visible.
def _gpu_visible():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except Exception:
        return False
    return out.returncode == 0 and "GPU" in out.stdout

if config.te_enable_cuda and _gpu_visible():
    config.available_features.add("cuda")

# Wheels for the tests that need PyTorch's stack: a Python named by
# TE_TORCH_PYTHON when that is set (only that one), else python3 / python on
# PATH, that imports the modules. Without one, those tests are UNSUPPORTED,
# never passed.
def _python_importing(imports, timeout):
    env = os.environ.get("TE_TORCH_PYTHON")
    candidates = [env] if env else [shutil.which("python3"), shutil.which("python")]
    for python in candidates:
        if not python:
            continue
        try:
            out = subprocess.run([python, "-c", "import " + imports],
                                 capture_output=True, timeout=timeout)
        except Exception:
            continue
        if out.returncode == 0:
            return python
    return None

# `hf-wheels` (%hf_python): torch, torch_mlir and transformers, for the tests
# that export Hugging Face blocks (Integration/hf-models.mlir).
_hf_python = _python_importing("torch, torch_mlir, transformers", 300)
if _hf_python:
    config.available_features.add("hf-wheels")
    config.substitutions.append(("%hf_python", _hf_python))

# `torch-mlir-wheel` (%torch_python): the torch-mlir wheel, for
# utils/check_residual.py (residual modules of te-compile --partition must be
# valid torch-mlir).
_torch_python = _python_importing(
    "torch_mlir.ir, torch_mlir.passmanager, torch_mlir.compiler_utils", 120)
if _torch_python:
    config.available_features.add("torch-mlir-wheel")
    config.substitutions.append(("%torch_python", _torch_python))
