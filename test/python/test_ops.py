"""The generated custom ops: opcheck on every op (fwd, bwd, inference, weight-cache;
two token counts), fake impls vs the module client, errors, aliasing, goldens."""
import ctypes
import json

import numpy as np
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import te_mlir
import te_mlir.torch as tet
from te_mlir import _abi
from te_mlir.library import DimExpr
from conftest import INPUTS, needs_gpu

MLP = """func.func @mlp(%x: tensor<?x32x{T}>, %g: tensor<32x{T}>, %b: tensor<32x{T}>, %w1: tensor<64x32x{T}>, %b1: tensor<64x{T}>, %w2: tensor<32x64x{T}>, %b2: tensor<32x{T}>) -> tensor<?x32x{T}> {{
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<?x32x{T}>, tensor<32x{T}>, tensor<32x{T}>, tensor<64x32x{T}>, tensor<64x{T}>, tensor<32x64x{T}>, tensor<32x{T}>) -> tensor<?x32x{T}>
  return %y : tensor<?x32x{T}>
}}
"""
LNL = """func.func @lnl(%x: tensor<?x32xf32>, %g: tensor<32xf32>, %w: tensor<16x32xf32>) -> (tensor<?x16xf32>, tensor<?x32xf32>) {
  %y, %ln = te.layernorm_linear %x norm rms_norm(%g) weight(%w) {return_layernorm_output} : (tensor<?x32xf32>, tensor<32xf32>, tensor<16x32xf32>) -> (tensor<?x16xf32>, tensor<?x32xf32>)
  return %y, %ln : tensor<?x16xf32>, tensor<?x32xf32>
}
"""
LIN = """func.func @mlp(%x: tensor<?x32xf32>, %w: tensor<16x32xf32>) -> tensor<?x16xf32> {
  %y = te.linear %x weight(%w) : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
"""


def mlp_lib(recipe="bf16", dtype="f32", weight_cache=False, checkpoint=False):
    text = LIN if dtype == "linear" else MLP.format(T=dtype)
    p = te_mlir.compile(text, recipe=recipe, weight_cache=weight_cache,
                        checkpoint=checkpoint, target="cpu")
    return tet.load(p)


def make_args(entry, M, requires_grad=False, gen=None):
    """Random arguments of a forward/inference entry at token count M (state: TE's
    initial values)."""
    gen = gen or torch.Generator().manual_seed(M)
    out = []
    for a in entry.args:
        if a.is_state:
            out.append(torch.full(a.shape, a.initial_state, dtype=torch.float32))
            continue
        shape = a.shape_at([M] * max(1, entry.num_dims))
        t = torch.randn(shape, generator=gen, dtype=torch.float32) * (shape[-1] ** -0.5
                                                                      if len(shape) == 2 and a.index else 1.0)
        if a.index and len(shape) == 1:
            t = 1.0 + 0.1 * t
        t = t.to(tet.ops.TORCH_DTYPES[a.dtype])
        out.append(t.requires_grad_(requires_grad and t.is_floating_point()))
    return out


def bwd_args(ops, fwd_name, args, outs):
    """The backward entry's arguments fed as te_module_step_feed says."""
    step = ops.step(fwd_name)
    gen = torch.Generator().manual_seed(7)
    res = []
    for j, (kind, k) in enumerate(step.feeds):
        spec = step.bwd.args[j]
        if kind == _abi.FEED_INPUT:
            res.append(args[k].detach())
        elif kind == _abi.FEED_RESULT:
            res.append(outs[k].detach())
        elif kind == _abi.FEED_GRAD:
            res.append(torch.randn(outs[k].shape, generator=gen).to(outs[k].dtype))
        elif kind == _abi.FEED_MAIN_GRAD:  # fp32 main_grad of forward input k
            res.append(torch.randn(args[k].shape, generator=gen, dtype=torch.float32))
        else:
            res.append(torch.full(spec.shape, spec.initial_state, dtype=torch.float32))
    return res


# (recipe, dtype or "linear": te.linear f32 under the recipe, named @mlp too, whose
# fp8-delayed backward binds d0 from a saved qtensor, weight cache)
LIBS = [("bf16", "f32", False), ("bf16", "bf16", False), ("fp8-current", "f32", True),
        ("fp8-delayed", "f32", True), ("fp8-delayed", "linear", True)]


@pytest.mark.parametrize("recipe,dtype,wc", LIBS, ids=[f"{r}-{d}" for r, d, _ in LIBS])
@pytest.mark.parametrize("M", [16, 32])
def test_opcheck_every_op(recipe, dtype, wc, M):
    ops = mlp_lib(recipe, dtype, wc)
    lib = ops.library
    names = set(lib.entries)
    checked = set()
    # inference entry: no autograd registered, inputs without grad
    inf = lib.entry("mlp")
    torch.library.opcheck(ops.op("mlp"), make_args(inf, M))
    checked.add("mlp")
    for fwd_name in [n for n in names if ops.step(n) is not None]:
        step = ops.step(fwd_name)
        fwd = lib.entry(fwd_name)
        args = make_args(lib.entry("mlp_fwd"), M, requires_grad=True)
        if fwd.cached_forward_of:
            outs = ops.op("mlp_fwd")(*[a.detach() for a in args],
                                     *[torch.full(lib.entry(step.bwd.name).args[i].shape, 1.0)
                                       for i in step.bwd_state])
            extra = [outs[r.index] for r in lib.entry("mlp_fwd").results
                     if r.roles.get("te.saved") in {a.roles["te.cached_weight"]
                                                    for a in fwd.args
                                                    if "te.cached_weight" in a.roles}]
            args = args + extra
        bst = [torch.full(step.bwd.args[i].shape, step.bwd.args[i].initial_state)
               for i in step.bwd_state]
        torch.library.opcheck(ops.op(fwd_name), args + bst)
        outs = ops.op(fwd_name)(*[a.detach() for a in args], *bst)
        torch.library.opcheck(ops.op(step.bwd.name), bwd_args(ops, fwd_name, args, outs))
        checked |= {fwd_name, step.bwd.name}
    assert checked == names, names - checked


def test_fake_matches_module_client():
    """Fake results (shapes, qtensor bytes) equal the module client's at several dims;
    symbolic shapes evaluate to the same."""
    ops = mlp_lib("fp8-delayed", "f32", True)
    lib = ops.library
    for e in lib.entries.values():
        for M in (8, 24, 40):
            dims = [M] * e.num_dims
            for r in e.results:
                if r.is_qtensor:
                    assert r.bytes_at(dims) == r.client_bytes(dims), (e.name, r.label)
                else:
                    assert r.shape_at(dims) == r.client_shape(dims), (e.name, r.label)
    fwd = lib.entry("mlp_fwd")
    args = make_args(fwd, 24)
    real = ops.op("mlp_fwd")(*args, *ops.function("mlp").initial_state(backward=True))
    with FakeTensorMode() as mode:
        fargs = [mode.from_tensor(a) for a in args]
        fake = ops.op("mlp_fwd")(*fargs, *[mode.from_tensor(t) for t in
                                          ops.function("mlp").initial_state(backward=True)])
    for f, r, spec in zip(fake, real, fwd.results):
        assert f.shape == r.shape and f.dtype == r.dtype, spec.label
        if spec.is_qtensor:
            assert f.numel() == spec.client_bytes([24])


def test_dim_expr_matches_runtime():
    L = _abi.runtime().lib
    for text, dims in [("d0", [5]), ("roundup(d0/32, 4)", [256]), ("ceildiv(d0, 128) * 4", [129]),
                       ("(d0 + d1) * 2 - 3", [4, 7]), ("roundup(ceildiv(d1,128),4)", [1, 300])]:
        v, inexact = ctypes.c_int64(), ctypes.c_int64()
        assert L.te_module_eval_dim(text.encode(), _abi.i64s(dims), len(dims), ctypes.byref(v),
                                    ctypes.byref(inexact)) == 0
        assert DimExpr(text).evaluate(dims) == v.value, text
    with pytest.raises(te_mlir.TeMlirError, match="not divisible by 32"):
        DimExpr("d0/32").evaluate([40])
    with pytest.raises(te_mlir.TeMlirError, match="malformed dim expression"):
        DimExpr("d0 *")


def test_errors_are_python_exceptions(tmp_path):
    ops = mlp_lib("fp8-current", "f32", True)
    f = ops.function("mlp")
    args = make_args(ops.library.entry("mlp"), 16)
    # wrong dtype, naming the argument (the op's C++ kernel raises RuntimeError, of which
    # TeMlirError is a subclass: the ctypes fallback's error)
    bad = list(args)
    bad[0] = bad[0].to(torch.bfloat16)
    with pytest.raises(RuntimeError, match="arg0 must be float32, got bfloat16"):
        f(*bad)
    # wrong shape
    bad = list(args)
    bad[3] = torch.zeros(64, 31)
    with pytest.raises(RuntimeError, match=r"arg3 dim 1 must be 32"):
        f(*bad)
    # a token count breaking the recipe's alignment rule (fp8: d0 % 8)
    # (the module info's checks: the rule and the entry's own message)
    assert ops.library.entry("mlp").info["checks"] == [
        {"expr": "d0", "multiple": 8, "message": "mlp: recipe fp8-current needs d0 % 8 == 0"}]
    assert [(e.text, m) for e, m, _ in ops.library.entry("mlp").checks] == [("d0", 8)]
    bad = list(args)
    bad[0] = torch.randn(12, 32)
    with pytest.raises(RuntimeError, match=r"recipe fp8-current needs d0 % 8 == 0, got 12"):
        f(*bad)
    # ... and under fake tensors (what torch.compile traces) as a failed torch._check
    with FakeTensorMode() as mode:
        with pytest.raises(Exception, match=r"needs d0 % 8 == 0"):
            ops.op("mlp")(*[mode.from_tensor(a) for a in bad])
    # wrong number of arguments
    with pytest.raises(te_mlir.TeMlirError, match="expected 7 arguments"):
        f(*args[:6])
    # a library whose sha256 is not the recorded one
    with pytest.raises(te_mlir.TeMlirError, match="has sha256 .* expected 0000"):
        te_mlir.Library(ops.library.path, sha256="0" * 64)
    # a file that is not a library
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"\x7fELF garbage")
    with pytest.raises(te_mlir.TeMlirError, match="cannot open library"):
        te_mlir.Library(junk)
    # an unknown entry
    with pytest.raises(te_mlir.TeMlirError, match="no entry 'nope'"):
        ops.op("nope")
    # gradients through an inference-only library
    inf = tet.load(te_mlir.compile(MLP.format(T="f32"), train=False, target="cpu"))
    xs = [a.clone().requires_grad_() for a in make_args(inf.library.entry("mlp"), 16)]
    with pytest.raises(te_mlir.TeMlirError, match="has no mlp_fwd/mlp_bwd"):
        inf.function("mlp")(*xs)
    with torch.no_grad():
        inf.function("mlp")(*xs)
    # te-compile errors carry its stderr (where te-compile can run: the GPU machine has
    # no MLIR and serves these tests from a cache filled elsewhere)
    with pytest.raises(te_mlir.TeMlirError, match="te-compile failed") as err:
        te_mlir.compile("func.func @f() {\n  bogus\n}\n")
    if "libMLIR" not in str(err.value):
        assert "custom op 'bogus'" in str(err.value), str(err.value)


def test_te_compile_that_cannot_start_says_what_to_do(tmp_path, monkeypatch):
    """A te-compile the loader cannot start (exit 127, as a developer build on the GPU
    machine, which lacks libMLIR) on a cache miss: the error keeps the loader's words and
    says why it happened there and what serves instead (the wheel's static te-compile, or a
    cache filled with the same binary). Any other failure gets no such hint."""
    build = tmp_path / "build"
    (build / "bin").mkdir(parents=True)
    tool = build / "bin" / "te-compile"
    loader = ("te-compile: error while loading shared libraries: libMLIR.so.22.1: cannot "
              "open shared object file: No such file or directory")
    tool.write_text(f"#!/bin/sh\necho '{loader}' >&2\nexit 127\n")
    tool.chmod(0o755)
    monkeypatch.setenv("TE_MLIR_BUILD", str(build))
    src = MLP.format(T="f32")
    with pytest.raises(te_mlir.TeMlirError) as err:
        te_mlir.compile(src, target="cpu", cache_dir=tmp_path / "cache")
    msg = str(err.value)
    assert "exit 127" in msg and "libMLIR.so.22.1" in msg, msg
    assert "cannot start on this machine" in msg and "wheel's te-compile" in msg, msg
    assert "TE_MLIR_CACHE" in msg, msg
    tool.write_text("#!/bin/sh\necho 'error: custom op bogus' >&2\nexit 1\n")
    with pytest.raises(te_mlir.TeMlirError) as err:
        te_mlir.compile(src, target="cpu", cache_dir=tmp_path / "cache")
    assert "custom op bogus" in str(err.value)
    assert "cannot start" not in str(err.value), str(err.value)


def test_no_output_aliases_an_input():
    ops = mlp_lib("bf16", "f32")
    lib = ops.library
    args = make_args(lib.entry("mlp_fwd"), 16)
    outs = ops.op("mlp_fwd")(*args)
    ins = {a.untyped_storage().data_ptr() for a in args}
    for o in outs:
        assert o.untyped_storage().data_ptr() not in ins
    b = bwd_args(ops, "mlp_fwd", args, outs)
    ins = {a.untyped_storage().data_ptr() for a in b}
    for o in ops.op("mlp_bwd")(*b):
        assert o.untyped_storage().data_ptr() not in ins
    # the function's outputs and gradients too
    xs = [a.clone().requires_grad_() for a in args]
    y = ops.function("mlp")(*xs)
    gs = torch.autograd.grad(y.sum(), xs)
    for t in [y, *gs]:
        assert all(t.untyped_storage().data_ptr() != x.untyped_storage().data_ptr() for x in xs)


def test_namespace_and_cache():
    ops = mlp_lib("bf16", "f32")
    assert ops.namespace == "te_mlir_" + ops.library.sha256[:12]
    assert tet.load(ops.library.path) is ops  # idempotent per library
    assert getattr(torch.ops, ops.namespace).mlp_fwd is not None
    other = mlp_lib("bf16", "bf16")
    assert other.namespace != ops.namespace
    # compile is cached by content
    assert te_mlir.compile(MLP.format(T="f32"), target="cpu") == ops.library.path


def test_optional_grad_gets_zeros():
    """A returned norm output (te.optional_grad) that is not used gets a zero gradient."""
    ops = tet.load(te_mlir.compile(LNL, target="cpu"))
    bwd = ops.library.entry("lnl_bwd")
    assert any(a.optional_grad for a in bwd.args)
    x = torch.randn(8, 32, requires_grad=True)
    g = torch.ones(32, requires_grad=True)
    w = (torch.randn(16, 32) * 0.2).requires_grad_()
    y, ln = ops.function("lnl")(x, g, w)
    gx, gg, gw = torch.autograd.grad(y.sum(), [x, g, w])
    ref_ln = torch.nn.functional.rms_norm(x, (32,), g, 1e-5)
    rx, rg, rw = torch.autograd.grad((ref_ln @ w.t()).sum(), [x, g, w])
    for a, b in [(gx, rx), (gg, rg), (gw, rw)]:
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(ln, ref_ln, rtol=1.3e-6, atol=1e-5)


# --------------------------------------------------------------------------- goldens


def _npy(path):
    a = np.load(path)
    if path.name.endswith(".bf16.npy"):
        return torch.from_numpy((a.astype(np.uint32) << 16).view(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(a)


def _file(d, stem):
    for suf in (".npy", ".bf16.npy"):
        if (d / (stem + suf)).exists():
            return d / (stem + suf)
    raise FileNotFoundError(d / stem)


GOLDENS = ["ln_linear_f32", "ln_mlp_gelu_f32", "ln_mlp_gelu_bf16", "rms_swiglu_f32",
           "ln_linear_f32_fp8_current", "rms_swiglu_f32_fp8_current", "rms_swiglu_f32_fp8_delayed"]


@pytest.mark.parametrize("case", GOLDENS)
def test_goldens(case):
    """The committed torch-mlir exports (parameters as arguments) through te_mlir.compile
    and the custom ops, against test/Integration/golden/make_goldens.py's expected values (autograd; FP8:
    its emulation of the FP8 step) under the config's tolerances (TE's, §7.2); for
    fp8-delayed also the first step's new recipe state."""
    d = INPUTS / case
    cfg = json.loads((d / "config.json").read_text())
    ops = tet.load(te_mlir.compile(d / "model.mlir", recipe=cfg.get("recipe", "bf16"),
                                   target="cpu"))
    f = ops.function(cfg["func"])
    n = len(cfg["arg_names"])
    args = [_npy(_file(d / "args", f"arg{i}")).requires_grad_() for i in range(n)]
    state = f.initial_state()
    bstate = f.initial_state(backward=True)
    outs, _ = f.call(*args, *state, bwd_state=bstate or None)
    y = outs[0]
    dy = _npy(_file(d / "grads_in", "result0"))
    grads = torch.autograd.grad(y, args, dy)
    tol = dict(atol=cfg["fwd_atol"], rtol=cfg["fwd_rtol"])
    torch.testing.assert_close(y.float(), _npy(_file(d / "expected" / "fwd", "result0")).float(),
                               **tol)
    tol = dict(atol=cfg["bwd_atol"], rtol=cfg["bwd_rtol"])
    for i, g in enumerate(grads):
        torch.testing.assert_close(g.float(), _npy(_file(d / "expected" / "bwd", f"grad_arg{i}"))
                                   .float(), **tol, msg=lambda m, i=i: f"grad_arg{i}: {m}")
    if cfg.get("recipe") == "fp8-delayed":
        new_fwd = outs[1:]
        for spec, t in zip(f.state_specs, new_fwd):
            ref = _npy(d / "expected" / "fwd" / f"state.{spec.roles['te.state']}.npy")
            # the amaxes are of te-mlir's fp32 values vs the emulation's: a few ulp apart at most (the scales follow them)
            torch.testing.assert_close(t, ref, rtol=2.5e-7, atol=0)
        for spec, t in zip(f.bwd_state_specs, bstate):
            ref = _npy(d / "expected" / "bwd" / f"state.{spec.roles['te.state']}.npy")
            torch.testing.assert_close(t, ref, rtol=2.5e-7, atol=0)


# --------------------------------------------------------------------------- GPU


def cuda_ops():
    """The GPU tests' library: --target=auto (it runs on cuda where a GPU is visible)."""
    return tet.load(te_mlir.compile(MLP.format(T="bf16"), target="auto"))


def test_gpu_libraries_compile():
    """Compiles what the GPU tests use (so a cache filled here serves a GPU machine that
    cannot run te-compile: docs/python.md)."""
    lib = te_mlir.Library(te_mlir.compile(MLP.format(T="bf16"), target="auto"))
    assert lib.target == "auto" and set(lib.entries) == {"mlp", "mlp_fwd", "mlp_bwd"}


@needs_gpu
def test_cuda_ops_on_a_side_stream():
    ops = cuda_ops()
    assert ops.library.backend == "cuda"
    args = [a.cuda() for a in make_args(ops.library.entry("mlp"), 64)]
    for M in (64, 128):  # every op on cuda, two token counts
        torch.library.opcheck(ops.op("mlp"), [a.cuda() for a in make_args(
            ops.library.entry("mlp"), M)])
        fa = [a.cuda().requires_grad_() for a in make_args(ops.library.entry("mlp_fwd"), M)]
        torch.library.opcheck(ops.op("mlp_fwd"), fa)
        outs = ops.op("mlp_fwd")(*[a.detach() for a in fa])
        torch.library.opcheck(ops.op("mlp_bwd"), [t.cuda() for t in bwd_args(
            ops, "mlp_fwd", fa, outs)])
    ref = ops.op("mlp")(*args)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())  # args were made on the default stream
    with torch.cuda.stream(s):
        xs = [a * 1 for a in args]  # produced on s, no sync
        y = ops.op("mlp")(*xs)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, ref, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="runs on the cuda backend"):
        ops.op("mlp")(*[a.cpu() for a in args])


@needs_gpu
def test_cuda_saved_bundle_memory():
    ops = cuda_ops()
    fwd = ops.library.entry("mlp_fwd")
    M = 256
    args = [a.cuda().requires_grad_(a.is_floating_point()) for a in make_args(fwd, M)]
    f = ops.function("mlp")
    f(*[a.detach() for a in args])  # warm up (workspace)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    y = f(*args)
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - before
    saved = sum(r.client_bytes([M]) for r in fwd.results if r.is_saved)
    out = y.numel() * y.element_size()
    assert saved + out <= held <= saved + out + 512 * (len(fwd.results) + 1)


def test_caller_arena(monkeypatch):
    """Entries take their arena from a torch buffer of te_module_entry_arena_bytes (exact
    for dynamic dims); one that is too small is a clear error, and the context is reset
    after it (the next call runs)."""
    ops = mlp_lib("fp8-current", "f32", True)
    e = ops.library.entry("mlp_fwd")
    assert e.arena == "dynamic" and e.arena_bytes([16]) > 0
    assert e.arena_bytes([64]) > e.arena_bytes([16])
    args = make_args(e, 16)
    good = ops.op("mlp_fwd")(*args)  # the C++ kernel: its arena from torch, the same size
    run = tet.ops.run_entry  # the ctypes path, whose arena size can be lied about
    assert all(torch.equal(a, b) for a, b in zip(good, run(e, args)))
    monkeypatch.setattr(te_mlir.Entry, "arena_bytes", lambda self, dims, donated=None: 256)
    with pytest.raises(te_mlir.TeMlirError, match="arena"):
        run(e, args)
    monkeypatch.undo()
    again = run(e, args)
    for a, b in zip(good, again):
        assert torch.equal(a, b)


@pytest.mark.parametrize("M", [8, 24])
def test_opcheck_returned_norm_output(M):
    """LayerNormLinear returning its norm output: the backward reads it through
    te.alias output:1 (re-saved from the forward's outputs) and its gradient is
    te.optional_grad."""
    ops = tet.load(te_mlir.compile(LNL, target="cpu"))
    lib = ops.library
    feeds = lib.feeds("lnl")
    assert (_abi.FEED_RESULT, 1) in feeds
    torch.library.opcheck(ops.op("lnl"), make_args(lib.entry("lnl"), M))
    args = make_args(lib.entry("lnl_fwd"), M, requires_grad=True)
    torch.library.opcheck(ops.op("lnl_fwd"), args)
    outs = ops.op("lnl_fwd")(*[a.detach() for a in args])
    torch.library.opcheck(ops.op("lnl_bwd"), bwd_args(ops, "lnl_fwd", args, outs))


def test_step_run_matches_the_ops():
    """te_mlir.Step.run (te_module_step_run: the forward, then the backward fed from it;
    what bench/bench.py times) on caller buffers gives the ops' results (cpu)."""
    ops = mlp_lib("bf16", "f32")
    lib = ops.library
    step = lib.step("mlp")
    assert (step.fwd.name, step.bwd.name) == lib.steps["mlp"]
    assert step.feeds == lib.feeds("mlp")
    args = make_args(step.fwd, 16)
    outs = ops.op("mlp_fwd")(*args)
    bargs = bwd_args(ops, "mlp_fwd", args, outs)
    want = ops.op("mlp_bwd")(*bargs)

    dims = step.fwd.bind_dims([a.dtype for a in step.fwd.args], [list(t.shape) for t in args])
    bdims = step.bwd_dims(dims)

    def empty(specs, at):
        return [torch.empty(s.client_shape(at), dtype=tet.ops.TORCH_DTYPES[s.dtype])
                for s in specs]

    fr, br = empty(step.fwd.results, dims), empty(step.bwd.results, bdims)
    grads = [None] * len(fr)
    for (kind, k), t in zip(step.feeds, bargs):
        if kind == _abi.FEED_GRAD:
            grads[k] = t
    ctx = lib.context()
    step.run(ctx, [t.data_ptr() for t in args], [t.data_ptr() for t in fr],
             [t.data_ptr() if t is not None else None for t in grads], [None] * len(bargs),
             [t.data_ptr() for t in br], dims)
    ctx.synchronize()
    assert len(fr) == len(outs) and len(br) == len(want)
    assert all(torch.equal(a, b) for a, b in zip(fr, outs))
    assert all(torch.equal(a, b) for a, b in zip(br, want))
