"""The C++ op layer (libte_torch_ops.so, PyTorch's stable ABI): every op's kernel is
C++; its results are bit for bit the ctypes path's; each call shows in torch.profiler
as its op; the modules' eager step runs through it; the fallback warns."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import te_mlir
import te_mlir.torch as tet
from te_mlir import _abi
from conftest import REPO, needs_gpu
from test_ops import LIBS, bwd_args, make_args, mlp_lib


def test_kernels_are_cpp():
    """The test command builds the op library: the ops must not fall back to ctypes."""
    kind, where = tet.ops.kernel_info()
    assert kind == "c++", where
    cpp = tet.ops._cpp_ops()
    # built for the stable ABI of torch 2.11 (one binary for 2.11 .. this torch)
    assert cpp.target == (2, 11), cpp.target
    ops = mlp_lib("bf16", "f32")
    assert ops.kernel == "c++"


def _step_args(ops, fwd_name, M):
    lib = ops.library
    step = ops.step(fwd_name)
    args = make_args(lib.entry(fwd_name), M)
    bst = [torch.full(step.bwd.args[i].shape, step.bwd.args[i].initial_state)
           for i in step.bwd_state]
    return args, bst


def _same(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert torch.equal(a.view(torch.uint8) if a.dtype != torch.uint8 else a,
                       b.view(torch.uint8) if b.dtype != torch.uint8 else b), what


def _same_backward(ops, bargs):
    """The backward op's results and its arguments after the call are the ctypes path's,
    byte for byte, each path on its own copies of the arguments: a delayed backward writes
    its new recipe state over its state arguments (module info state_in_place)."""
    run = tet.ops.run_entry
    bwd = ops.library.entry("mlp_bwd")
    cargs, pargs = [t.clone() for t in bargs], [t.clone() for t in bargs]
    grads = ops.op("mlp_bwd")(*cargs)
    want = run(bwd, pargs)
    assert len(grads) == len(want) == len(bwd.returned)
    for k, (x, y) in enumerate(zip(grads, want)):
        _same(x, y, f"mlp_bwd result {k}")
    for k, (x, y) in enumerate(zip(cargs, pargs)):
        _same(x, y, f"mlp_bwd argument {k} after the call")


@pytest.mark.parametrize("recipe,dtype,wc", LIBS, ids=[f"{r}-{d}" for r, d, _ in LIBS])
@pytest.mark.parametrize("M", [16, 40])
def test_cpp_bitwise_equals_ctypes(recipe, dtype, wc, M):
    """Forward, backward and inference entries: the C++ kernel's results (quantized
    buffers included, padding and all) are the ctypes path's, byte for byte; the C++
    kernel ran (its call counter moved)."""
    ops = mlp_lib(recipe, dtype, wc)
    lib = ops.library
    run = tet.ops.run_entry
    inf = lib.entry("mlp")
    a = make_args(inf, M)
    before = ops.calls("mlp")
    got = ops.op("mlp")(*a)
    assert ops.calls("mlp") == before + 1
    got = got if isinstance(got, tuple) else (got,)
    for k, (x, y) in enumerate(zip(got, run(inf, a))):
        _same(x, y, f"mlp result {k}")
    args, bst = _step_args(ops, "mlp_fwd", M)
    outs = ops.op("mlp_fwd")(*args, *bst)
    want = run(lib.entry("mlp_fwd"), args)
    for k, (x, y) in enumerate(zip(outs, want)):
        _same(x, y, f"mlp_fwd result {k}")
    b0 = ops.calls("mlp_bwd")
    _same_backward(ops, bwd_args(ops, "mlp_fwd", args, outs))
    assert ops.calls("mlp_bwd") == b0 + 1


def test_quantized_padding_is_zero():
    """A quantized result's alignment padding comes back zeroed from the kernel (the
    runtime leaves it so; no per-gap memsets in the caller), however dirty the memory
    the allocator hands out."""
    ops = mlp_lib("fp8-current", "f32", True)
    e = ops.library.entry("mlp_fwd")
    args, bst = _step_args(ops, "mlp_fwd", 16)
    q = [r for r in e.results if r.is_qtensor]
    assert q, "the fp8 forward saves quantized tensors"
    for _ in range(3):
        junk = [torch.full((1 << 16,), 0xAB, dtype=torch.uint8) for _ in range(8)]
        del junk  # freed memory, full of 0xAB, for the next allocations
        outs = ops.op("mlp_fwd")(*args, *bst)
        for r in q:
            t = outs[r.index]
            for lo, hi in r.padding([16]):
                assert not t[lo:hi].any(), f"{r.label}: padding [{lo}, {hi}) not zero"


def _profiled(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return [e.name for e in prof.events() if e.name.startswith("te_mlir_")]


def test_profiler_shows_each_op_eager_module():
    """A module's eager fwd+bwd shows its two entries as ops, by entry name."""
    m = tet.LayerNormMLP(32, 64, params_dtype=torch.float32, device="cpu", target="cpu")
    x = torch.randn(2, 8, 32, requires_grad=True)
    ns = m.function().ops.namespace
    names = _profiled(lambda: m(x).sum().backward())
    assert f"{ns}::layernorm_mlp_fwd" in names, names
    assert f"{ns}::layernorm_mlp_bwd" in names, names
    # and the module's eager step ran the C++ kernels
    ops = m.function().ops
    c = ops.calls("layernorm_mlp_fwd"), ops.calls("layernorm_mlp_bwd")
    m(x).sum().backward()
    assert (ops.calls("layernorm_mlp_fwd"), ops.calls("layernorm_mlp_bwd")) == (c[0] + 1,
                                                                                c[1] + 1)


def test_profiler_shows_each_op_compiled_module():
    """Under torch.compile(fullgraph=True) the module's ops are still calls of the ops:
    the forward entry's op without autograd (<namespace>_raw, what the traced
    autograd.Function calls: no Python autograd kernel runs in the compiled step) and
    the backward entry's, each the C++ kernel."""
    m = tet.LayerNormLinear(32, 48, params_dtype=torch.float32, device="cpu", target="cpu")
    x = torch.randn(16, 32, requires_grad=True)
    ops = m.function().ops
    ns = ops.namespace
    cm = torch.compile(m, fullgraph=True)
    # (a graph another run of this test cached on disk may predate the raw ops)
    with torch._inductor.config.patch(force_disable_caches=True):
        cm(x).sum().backward()
    c = ops.calls("layernorm_linear_fwd"), ops.calls("layernorm_linear_bwd")
    names = _profiled(lambda: cm(x).sum().backward())
    assert f"{ns}_raw::layernorm_linear_fwd" in names, names
    assert f"{ns}::layernorm_linear_bwd" in names, names
    # the public forward op (Python autograd kernel) is not what the graph calls
    assert f"{ns}::layernorm_linear_fwd" not in names, names
    assert (ops.calls("layernorm_linear_fwd"), ops.calls("layernorm_linear_bwd")) == (
        c[0] + 1, c[1] + 1)


def test_raw_op_is_the_op_without_autograd():
    """<namespace>_raw::<fwd entry> runs the same C++ kernel (the same bits, the same call
    count) and has no autograd of its own (PyTorch's fallback, which warns on backward),
    where the op's outputs come from its autograd.Function."""
    m = tet.LayerNormLinear(32, 48, params_dtype=torch.float32, device="cpu", target="cpu")
    ops = m.function().ops
    x = torch.randn(16, 32, requires_grad=True)
    args = [x] + [getattr(m, n) for n in m._param_names]
    c = ops.calls("layernorm_linear_fwd")
    a = ops.op("layernorm_linear_fwd")(*args)
    b = ops.raw_op("layernorm_linear_fwd")(*args)
    assert ops.calls("layernorm_linear_fwd") == c + 2
    a, b = (a if isinstance(a, tuple) else (a,)), (b if isinstance(b, tuple) else (b,))
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert type(a[0].grad_fn).__name__.endswith("Backward")
    assert "NotImplemented" in b[0].grad_fn.name()


def test_eager_module_matches_op_autograd():
    """The modules' eager path (an autograd.Function over the ops below autograd) and
    the ops' registered autograd (what torch.compile traces) give the same bits."""
    for recipe in ("bf16", "fp8-delayed"):
        m = tet.LayerNormMLP(32, 64, params_dtype=torch.float32, device="cpu", target="cpu",
                             recipe=recipe)
        fn = m.function()
        x = torch.randn(16, 32, requires_grad=True)
        params = [x] + [getattr(m, n) for n in m._param_names]
        fstate = fn.initial_state()
        bstate_a = fn.initial_state(backward=True)
        bstate_b = fn.initial_state(backward=True)
        fast = fn.training_function()
        ya = fast.apply(*params, *fstate, *bstate_a)
        ga = torch.autograd.grad(ya[0].square().sum(), params)
        yb = fn.ops.op("layernorm_mlp_fwd")(*params, *fstate, *bstate_b)
        gb = torch.autograd.grad(yb[0].square().sum(), params)
        assert torch.equal(ya[0], yb[0])
        for k, (a, b) in enumerate(zip(ga, gb)):
            assert torch.equal(a, b), f"{recipe}: gradient {k}"
        for a, b in zip(bstate_a, bstate_b):  # the backward state, updated in place
            assert torch.equal(a, b), recipe


def test_ctypes_fallback_warns_and_matches():
    """TE_MLIR_TORCH_OPS=python (or a torch older than the op library's target): the
    ops run through ctypes, with a RuntimeWarning saying why, and give the same bits."""
    code = textwrap.dedent("""
        import torch
        import te_mlir.torch as tet
        torch.manual_seed(0)
        m = tet.LayerNormLinear(32, 48, params_dtype=torch.bfloat16, device="cpu",
                                target="cpu")
        x = torch.randn(16, 32, dtype=torch.bfloat16, requires_grad=True)
        y = m(x); y.float().square().sum().backward()
        print("KERNEL", tet.ops.kernel_info()[0], m.function().ops.kernel)
        import hashlib
        h = hashlib.sha256()
        for t in (y, x.grad, *[p.grad for p in m.parameters()]):
            h.update(t.detach().float().numpy().tobytes())
        print("HASH", h.hexdigest())
    """)
    out = {}
    for mode in ("python", ""):
        env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "TE_MLIR_TORCH_OPS": mode}
        r = subprocess.run([sys.executable, "-W", "always", "-c", code], env=env,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        lines = dict(ln.split(" ", 1) for ln in r.stdout.splitlines() if " " in ln)
        out[mode] = (lines, r.stderr)
    py, cpp = out["python"], out[""]
    assert py[0]["KERNEL"] == "python python", py
    assert "ctypes fallback" in py[1] and "TE_MLIR_TORCH_OPS=python" in py[1], py[1][-2000:]
    assert cpp[0]["KERNEL"] == "c++ c++", cpp
    assert "ctypes fallback" not in cpp[1]
    assert py[0]["HASH"] == cpp[0]["HASH"]


def test_cpp_kernel_errors():
    """Bad arguments to a C++ kernel: clear RuntimeErrors naming the argument, never a
    crash (wrong device, qtensor buffer of the wrong size or dtype, wrong rank)."""
    ops = mlp_lib("fp8-current", "f32", True)
    args, bst = _step_args(ops, "mlp_fwd", 16)
    outs = ops.op("mlp_fwd")(*args, *bst)
    bargs = bwd_args(ops, "mlp_fwd", args, outs)
    step = ops.step("mlp_fwd")
    qi = next(j for j, a in enumerate(step.bwd.args) if a.is_qtensor)
    bad = list(bargs)
    bad[qi] = bargs[qi][:-1]
    with pytest.raises(RuntimeError, match="quantized buffer of .* bytes, the entry wants"):
        ops.op("mlp_bwd")(*bad)
    bad[qi] = bargs[qi].view(torch.int8)
    with pytest.raises(RuntimeError, match="a quantized tensor is a 1-D uint8 byte buffer"):
        ops.op("mlp_bwd")(*bad)
    bad = list(args)
    bad[1] = bad[1].reshape(2, 16)
    with pytest.raises(RuntimeError, match="arg1"):
        ops.op("mlp_fwd")(*bad, *bst)
    # non-contiguous inputs are made contiguous: the same bits
    bad = list(args)
    bad[0] = torch.randn(32, 16).t()
    assert not bad[0].is_contiguous()
    got = ops.op("mlp_fwd")(*bad, *bst)
    want = ops.op("mlp_fwd")(*[a.contiguous() for a in bad], *bst)
    for a, b in zip(got, want):
        assert torch.equal(a, b)


def _auto_lib(recipe, dtype, wc):
    from test_ops import LIN, MLP
    text = LIN if dtype == "linear" else MLP.format(T=dtype)
    return te_mlir.compile(text, recipe=recipe, weight_cache=wc, target="auto")


def test_gpu_cpp_libraries_compile():
    """Compiles the libraries test_cuda_cpp_bitwise_equals_ctypes runs (target auto), so
    the cache filled here serves the GPU machine, which has no te-compile."""
    for recipe, dtype, wc in LIBS:
        assert te_mlir.Library(_auto_lib(recipe, dtype, wc)).target == "auto"


@needs_gpu
@pytest.mark.parametrize("recipe,dtype,wc", LIBS, ids=[f"{r}-{d}" for r, d, _ in LIBS])
def test_cuda_cpp_bitwise_equals_ctypes(recipe, dtype, wc):
    """On the GPU: every entry's C++ kernel gives the ctypes path's bytes, at two token
    counts, on torch's current stream."""
    ops = tet.load(_auto_lib(recipe, dtype, wc))
    assert ops.library.backend == "cuda" and ops.kernel == "c++"
    lib = ops.library
    run = tet.ops.run_entry
    for M in (16, 40):
        a = [t.cuda() for t in make_args(lib.entry("mlp"), M)]
        got = ops.op("mlp")(*a)
        got = got if isinstance(got, tuple) else (got,)
        for k, (x, y) in enumerate(zip(got, run(lib.entry("mlp"), a))):
            _same(x, y, f"mlp result {k}")
        args, bst = _step_args(ops, "mlp_fwd", M)
        args, bst = [t.cuda() for t in args], [t.cuda() for t in bst]
        outs = ops.op("mlp_fwd")(*args, *bst)
        for k, (x, y) in enumerate(zip(outs, run(lib.entry("mlp_fwd"), args))):
            _same(x, y, f"mlp_fwd result {k}")
        _same_backward(ops, [t.cuda() for t in bwd_args(ops, "mlp_fwd", args, outs)])
    torch.cuda.synchronize()


# The block recipes on 128-wide GEMMs (fp8-block's 128x128 weight blocks; MXFP8 and
# NVFP4 are Blackwell layouts, lowered for the cpu backend with --arch=sm_100a), at two
# token counts each that meet the recipe's alignment.
BLOCK = [("fp8-block", (), (128, 256)), ("mxfp8", ("--arch=sm_100a",), (32, 64)),
         ("nvfp4", ("--arch=sm_100a",), (16, 48))]


@pytest.mark.parametrize("recipe,extra,Ms", BLOCK, ids=[b[0] for b in BLOCK])
def test_opcheck_block_recipes_cpp(recipe, extra, Ms):
    """opcheck of every op of a block-recipe library (inference, fwd, fwd with cached
    weights, bwd) through the C++ kernels, and the kernels' bytes equal the ctypes
    path's."""
    from test_ops import MLP
    text = MLP.replace("32", "128").replace("64", "256").format(T="bf16")
    ops = tet.load(te_mlir.compile(text, recipe=recipe, weight_cache=True, target="cpu",
                                   extra_args=extra))
    lib = ops.library
    assert lib.recipe == recipe and ops.kernel == "c++"
    run = tet.ops.run_entry
    for M in Ms:
        a = make_args(lib.entry("mlp"), M)
        torch.library.opcheck(ops.op("mlp"), a)
        args = make_args(lib.entry("mlp_fwd"), M, requires_grad=True)
        torch.library.opcheck(ops.op("mlp_fwd"), args)
        outs = ops.op("mlp_fwd")(*[t.detach() for t in args])
        for k, (x, y) in enumerate(zip(outs, run(lib.entry("mlp_fwd"),
                                                  [t.detach() for t in args]))):
            _same(x, y, f"{recipe} mlp_fwd result {k}")
        cached = lib.entry("mlp_fwd_cached")
        names = {c.roles["te.cached_weight"] for c in cached.args if "te.cached_weight" in c.roles}
        extra_w = [outs[r.index] for r in lib.entry("mlp_fwd").results
                   if r.roles.get("te.saved") in names]
        torch.library.opcheck(ops.op("mlp_fwd_cached"), args + extra_w)
        bargs = bwd_args(ops, "mlp_fwd", args, outs)
        torch.library.opcheck(ops.op("mlp_bwd"), bargs)
        grads = ops.op("mlp_bwd")(*bargs)
        for k, (x, y) in enumerate(zip(grads, run(lib.entry("mlp_bwd"), bargs))):
            _same(x, y, f"{recipe} mlp_bwd result {k}")


@pytest.mark.parametrize("recipe", ["bf16", "fp8-current"])
def test_main_grad_in_place(recipe):
    """A te.main_grad library's backward op takes each main_grad as Tensor(a!) and
    writes main_grad + the weight's gradient into it (not returned): opcheck passes
    (schema, fake impl, mutation), and the C++ kernel's main_grads and results are the
    ctypes path's bytes, each computed from the same starting main_grad."""
    from test_ops import MLP
    text = MLP.format(T="bf16").replace("%w1: tensor<64x32xbf16>",
                                        "%w1: tensor<64x32xbf16> {te.main_grad}")
    text = text.replace("%w2: tensor<32x64xbf16>", "%w2: tensor<32x64xbf16> {te.main_grad}")
    ops = tet.load(te_mlir.compile(text, recipe=recipe, target="cpu"))
    bwd = ops.library.entry("mlp_bwd")
    assert ops.kernel == "c++" and sorted(bwd.in_place.values()) == \
        [a.index for a in bwd.args if a.role("te.main_grad_of")]
    assert len(bwd.returned) == len(bwd.results) - 2
    assert "Tensor(a!)" in str(ops.op("mlp_bwd")._schema)
    args, bst = _step_args(ops, "mlp_fwd", 16)
    outs = ops.op("mlp_fwd")(*args, *bst)
    bargs = bwd_args(ops, "mlp_fwd", args, outs)
    torch.library.opcheck(ops.op("mlp_bwd"), [t.clone() for t in bargs])
    mains = sorted(bwd.in_place.values())
    start = {j: bargs[j].clone() for j in mains}
    ptrs = {j: bargs[j].data_ptr() for j in mains}
    got = ops.op("mlp_bwd")(*bargs)
    want_args = [t.clone() for t in bargs]
    for j in mains:
        want_args[j] = start[j].clone()
    want = tet.ops.run_entry(bwd, want_args)
    assert len(got) == len(want) == len(bwd.returned)
    for k, (x, y) in enumerate(zip(got, want)):
        _same(x, y, f"{recipe} mlp_bwd result {k}")
    for j in mains:
        assert bargs[j].data_ptr() == ptrs[j]
        _same(bargs[j], want_args[j], f"{recipe} main_grad argument {j}")
        assert not torch.equal(bargs[j], start[j]), "main_grad was not accumulated into"


def test_full_op_table_falls_back_with_one_warning(monkeypatch):
    """libte_torch_ops.so has a fixed number of kernel slots per process: past them, a
    library's ops run through ctypes (the same bits: test_cpp_bitwise_equals_ctypes)
    with one warning, not an error."""
    cpp = tet.ops._cpp_ops()
    assert cpp is not None

    def full(namespace, entry):
        raise te_mlir.TeMlirError(f"{namespace}::{entry.name}: te_torch_ops_register: more "
                                  "than 2048 te-mlir ops in one process")
    monkeypatch.setattr(cpp, "register", full)
    monkeypatch.setattr(tet.ops, "_CPP_FULL_WARNED", False)
    torch.manual_seed(0)
    with pytest.warns(te_mlir.TeMlirWarning, match="ctypes path"):
        m = tet.LayerNormLinear(32, 72, params_dtype=torch.bfloat16, device="cpu",
                                target="cpu")
    assert m.function().ops.kernel == "python"
    x = torch.randn(16, 32, dtype=torch.bfloat16, requires_grad=True)
    y = m(x)
    y.float().square().sum().backward()
    assert torch.isfinite(y.float()).all() and x.grad is not None
    assert all(p.grad is not None for p in m.parameters())


@pytest.mark.parametrize("recipe", ["bf16", "fp8-current", "fp8-delayed"])
def test_split_wgrad_entry_ops(recipe):
    """te.delay_wgrad (te-split-wgrad): the ops of <fn>_bwd then <fn>_bwd_wgrad give the
    unsplit backward's gradients bit for bit. An FP8 wgrad entry's token dim comes only
    from quantized arguments (byte buffers carry no shape), so its op takes its dims as
    a trailing int[] (opcheck passes; a wrong count or value is refused by name)."""
    from test_ops import MLP
    plain_text = MLP.format(T="bf16")
    text = plain_text
    for a in ("%w1: tensor<64x32xbf16>", "%b1: tensor<64xbf16>", "%w2: tensor<32x64xbf16>",
              "%b2: tensor<32xbf16>"):
        text = text.replace(a, a + " {te.delay_wgrad}", 1)
    ops = tet.load(te_mlir.compile(text, recipe=recipe, target="cpu"))
    plain = tet.load(te_mlir.compile(plain_text, recipe=recipe, target="cpu"))
    lib = ops.library
    bwd, wg = lib.entry("mlp_bwd"), lib.entry("mlp_bwd_wgrad")
    assert wg.info["te.wgrad_of"] == "mlp_bwd"
    assert wg.takes_dims == (recipe != "bf16")
    assert ("int[] dims" in str(ops.op("mlp_bwd_wgrad")._schema)) == wg.takes_dims
    args, bst = _step_args(ops, "mlp_fwd", 16)
    outs = ops.op("mlp_fwd")(*args, *bst)
    bargs = bwd_args(ops, "mlp_fwd", args, outs)
    # results by index (the new recipe state written over its arguments is not
    # returned: module info state_in_place)
    res = dict(zip(bwd.returned, ops.op("mlp_bwd")(*bargs)))
    pouts = plain.op("mlp_fwd")(*args, *bst)
    pres = dict(zip(plain.library.entry("mlp_bwd").returned,
                    plain.op("mlp_bwd")(*bwd_args(plain, "mlp_fwd", args, pouts))))
    fwd = lib.entry("mlp_fwd")
    saved = {r.role("te.saved"): outs[r.index] for r in fwd.results if r.role("te.saved")}
    stash = {r.role("te.wgrad_stash"): res[r.index] for r in bwd.results
             if r.role("te.wgrad_stash")}
    given = {a.role("te.grad_of"): bargs[a.index] for a in bwd.args if a.role("te.grad_of")}
    wargs = []
    for a in wg.args:
        if a.role("te.wgrad_stash"):
            wargs.append(stash[a.role("te.wgrad_stash")])
        elif a.role("te.alias", "").startswith("input:"):
            wargs.append(args[int(a.role("te.alias")[6:])])
        elif a.role("te.saved"):
            wargs.append(saved[a.role("te.saved")])
        else:
            wargs.append(given[a.role("te.grad_of")])
    # the step's feeds of the wgrad entry, and its dims from the forward's (the wgrad
    # entry's two GEMMs share no dim: its d0, d1 are both the tokens)
    step = lib.step("mlp")
    assert step.wgrad is wg and len(step.wgrad_feeds) == len(wg.args)
    assert all((k == _abi.FEED_STASH) == bool(a.role("te.wgrad_stash"))
               for (k, _), a in zip(step.wgrad_feeds, wg.args))
    fwd_dims = fwd.bind_dims([None if a.is_qtensor else a.dtype for a in fwd.args],
                             [None if a.is_qtensor else list(t.shape)
                              for a, t in zip(fwd.args, args)])
    assert step.wgrad_dims(fwd_dims) == [16] * wg.num_dims
    extra = [step.wgrad_dims(fwd_dims)] if wg.takes_dims else []
    wres = ops.op("mlp_bwd_wgrad")(*wargs, *extra)
    wres = wres if isinstance(wres, tuple) else (wres,)
    torch.library.opcheck(ops.op("mlp_bwd_wgrad"), [*wargs, *extra])
    # the ctypes path (a torch too old for the op library) takes the same dims
    for k, t in enumerate(tet.ops.run_entry(wg, wargs, extra[0] if extra else None)):
        _same(wres[k], t, f"{recipe} wgrad result {k}: C++ against ctypes")
    want = {r.role("te.grad_of"): pres[r.index] for r in plain.library.entry("mlp_bwd").results
            if r.role("te.grad_of")}
    got = {r.role("te.grad_of"): res[r.index] for r in bwd.results if r.role("te.grad_of")}
    got.update({r.role("te.grad_of"): wres[r.index] for r in wg.results})
    assert sorted(got) == sorted(want) and len(wg.results) >= 2
    for of in want:
        _same(got[of], want[of], f"{recipe} gradient {of}")
    if wg.takes_dims:
        with pytest.raises(Exception, match=f"dims must hold {wg.num_dims} value"):
            ops.op("mlp_bwd_wgrad")(*wargs, [16] * (wg.num_dims + 1))
        with pytest.raises(Exception, match="quantized buffer of"):
            ops.op("mlp_bwd_wgrad")(*wargs, [32] * wg.num_dims)


def test_delayed_backward_state_written_in_place():
    """fp8-delayed: te-compile lists the backward's new amax history and scales as
    written over their state arguments (module info state_in_place). The op then
    mutates the state it is given (same storage, no copy after the entry, not among
    its returned results) and everything it computes is what the entry computes into
    separate buffers, bit for bit; the step copies no backward state back."""
    ops = mlp_lib("fp8-delayed", "f32", True)
    lib = ops.library
    bwd = lib.entry("mlp_bwd")
    step = ops.step("mlp_fwd")
    pairs = dict(bwd.in_place)
    state = {r.index for r in bwd.results if r.is_state}
    assert len(state) == 2 and set(pairs) == state, pairs
    assert all(bwd.args[a].role("te.state") == bwd.results[r].role("te.state")
               for r, a in pairs.items())
    assert not step.bwd_state_results  # nothing to copy back
    schema = ops.op("mlp_bwd")._schema
    mutated = [k for k, a in enumerate(schema.arguments)
               if a.alias_info is not None and a.alias_info.is_write]
    assert sorted(mutated) == sorted(pairs.values()), schema
    args, bst = _step_args(ops, "mlp_fwd", 16)
    outs = ops.op("mlp_fwd")(*args, *bst)
    bargs = bwd_args(ops, "mlp_fwd", args, outs)
    before = [t.clone() for t in bargs]
    # the reference: the same entry, every result in a buffer of its own
    saved = bwd.in_place, bwd.returned
    try:
        bwd.in_place, bwd.returned = {}, list(range(len(bwd.results)))
        ref = tet.ops.run_entry(bwd, [t.clone() for t in bargs])
    finally:
        bwd.in_place, bwd.returned = saved
    ptrs = {a: bargs[a].data_ptr() for a in pairs.values()}
    got = ops.op("mlp_bwd")(*bargs)
    assert len(got) == len(bwd.results) - len(pairs)
    for k, r in enumerate(bwd.returned):
        _same(got[k], ref[r], f"mlp_bwd result {r}")
    for r, a in pairs.items():
        assert bargs[a].data_ptr() == ptrs[a]
        _same(bargs[a], ref[r], f"{bwd.args[a].label} after the call")
        assert not torch.equal(bargs[a], before[a]), f"{bwd.args[a].label} unchanged"
