#!/usr/bin/env python3
"""Training-step benchmark: te-compile'd libraries vs PyTorch eager and torch.compile.

One Python process. Case libraries in --lib-dir (built by bench/compile_cases.sh from
bench/cases/<case>.mlir with `te-compile --train`): <case>.so (bf16) and, per FP8 recipe,
<case>.fp8-current.so / <case>.fp8-delayed.so / <case>.fp8-block.so. For every case:

  * PyTorch runs the step in bf16 (F.layer_norm / F.rms_norm, F.linear, tanh GELU or
    SwiGLU, torch.autograd.grad) on seeded bf16 tensors and an output gradient, eager
    and torch.compile(default mode), plus an fp32 reference (same inputs upcast, no TF32);
  * for every recipe library of the case: loads libte_runtime.so (--runtime) through
    te_mlir (python/te_mlir: its ctypes bindings, checked against the runtime's headers)
    and opens the library as a te_mlir.Library, i.e. with the runtime's module client
    (te_module_*, the one te-run uses: include/te/Runtime/TEModule.h), which reads
    te_module_info(), binds the dims, sizes every buffer and says how <fn>_bwd is fed
    from <fn>_fwd (te.alias input:N/output:N, te.saved names, te.grad_of output:N);
    te_mlir.Step.run (te_module_step_run) runs both. Quantized tensors (dtype
    "qtensor") are byte buffers of the size the client gives. Delayed-scaling state
    (args/results tagged te.state) starts as TE initializes it (amax histories 0,
    scales 1) and is carried from step to step: two buffer sets per state tensor,
    swapped after every step;
  * checks te-mlir's output and every gradient: bf16 against eager (max|a-b|/max|b|
    <= 5e-2); FP8 against the fp32 reference (||a-ref||/||ref|| <= 0.1; a failing FP8
    case is recorded with its errors and not timed), with the bf16 engines' errors
    beside it. fp8-delayed is checked after 3 state-carrying steps (TE's first step runs
    with scale 1; its errors are recorded as first_step_check);
  * times a full step (fwd + bwd) of each engine by wall clock between device
    synchronizations (te_rt_synchronize + torch.cuda.synchronize), median of --reps
    repetitions of N back-to-back steps after warm-up. te-mlir runs on its own
    non-blocking CUDA stream (lib/Runtime/Context.cpp), which is not exported, so CUDA
    events on torch's stream cannot time it; all engines use the same wall-clock method;
  * --graph (default both): on the cuda backend, also captures one te-mlir step (fwd
    entry + bwd entry, plus te_rt_copy of the new recipe state over the old, so replays
    advance it) into a CUDA graph, checks that a replay's results equal a normal step's
    bit for bit on the same inputs and state, and times graph launches the same way
    ("te_graph").

  * --weight-cache libraries <case>.<recipe>.wc.so (16-token FP8 cases): "te_cached", a
    first microbatch (fwd + bwd) fills the cache, then steps of <fn>_fwd_cached + bwd
    (asserted bit-identical to the uncached step from the same state, recipe state aside),
    its CUDA graph, and the bytes / bandwidth floor of such a step;
  * peers in the same process and inputs: torch.compile(mode="reduce-overhead") (bf16)
    and, with --te auto|on (transformer_engine.pytorch), TE's LayerNormLinear /
    LayerNormMLP with the same weights under fp8_autocast of each recipe te-mlir ran,
    eager and make_graphed_callables (<= --te-graph-max-tokens), and with
    is_first_microbatch=False where te-mlir has a weight cache; their errors against fp32
    beside te-mlir's. Summary: te-mlir's best of step / graph over the best peer of the
    recipe, with spreads; also written as markdown next to --out (<out>.md).

Also: device-to-device copy bandwidth (CUDA events), and te-mlir's norm kernels alone
(te_rt_norm_fwd / te_rt_norm_bwd through te_mlir's bindings of the C ABI) next to torch's.

Prints one JSON line per measurement and writes everything to --out.
`--device cpu --no-compile` runs the same flow on the runtime's cpu backend (a syntax
and plumbing check on a machine without a GPU, with tiny case libraries; no graphs).
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import te_mlir  # noqa: E402
from te_mlir import _abi  # noqa: E402

EPS = 1e-5
TOL = 5e-2  # bf16 tolerance on max|te - eager| / max|eager|
FP8_TOL = 0.1  # FP8 tolerance on ||te - fp32|| / ||fp32|| (quantization noise is ~3-8%)
RECIPES = ("bf16", "fp8-current", "fp8-delayed", "fp8-block")
DELAYED_WARMUP = 3  # state-carrying steps before the checked step of a recipe with state

# --------------------------------------------------------------------------- models


def ln_mlp_gelu(x, g, b, w1, b1, w2, b2):
    h = F.layer_norm(x, (x.shape[-1],), g, b, EPS)
    return F.linear(F.gelu(F.linear(h, w1, b1), approximate="tanh"), w2, b2)


def rms_mlp_swiglu(x, g, w1, w2):
    h = F.rms_norm(x, (x.shape[-1],), g, EPS)
    a, c = F.linear(h, w1).chunk(2, dim=-1)  # te: activated half first
    return F.linear(F.silu(a) * c, w2)


def ln_linear(x, g, b, w, bias):
    return F.linear(F.layer_norm(x, (x.shape[-1],), g, b, EPS), w, bias)


def parse_case(name):
    m = re.fullmatch(r"(ln_mlp_gelu|rms_mlp_swiglu|ln_linear)_(\d+)x(\d+)x(\d+)", name)
    if not m:
        raise ValueError("unknown case name " + name)
    return m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))


def make_inputs(kind, M, H, F_, dev, seed=1234):
    """Seeded bf16 inputs (not zeros; weights ~ 1/sqrt(fan_in) so activations are O(1))."""
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)

    def r(*shape, std=1.0, mean=0.0):
        t = torch.randn(*shape, device=dev, dtype=torch.float32, generator=gen) * std + mean
        return t.to(torch.bfloat16)

    x = r(M, H)
    if kind == "ln_mlp_gelu":
        args = [x, r(H, std=0.1, mean=1.0), r(H, std=0.1), r(F_, H, std=H ** -0.5), r(F_, std=0.1),
                r(H, F_, std=F_ ** -0.5), r(H, std=0.1)]
        fn, out_cols, flops = ln_mlp_gelu, H, 2 * M * H * F_ * 2
        names = ["x", "gamma", "beta", "w1", "b1", "w2", "b2"]
    elif kind == "rms_mlp_swiglu":
        args = [x, r(H, std=0.1, mean=1.0), r(2 * F_, H, std=H ** -0.5), r(H, F_, std=F_ ** -0.5)]
        fn, out_cols, flops = rms_mlp_swiglu, H, 2 * M * H * 2 * F_ + 2 * M * F_ * H
        names = ["x", "gamma", "w1", "w2"]
    else:  # ln_linear: F_ is the output width N
        args = [x, r(H, std=0.1, mean=1.0), r(H, std=0.1), r(F_, H, std=H ** -0.5), r(F_, std=0.1)]
        fn, out_cols, flops = ln_linear, F_, 2 * M * H * F_
        names = ["x", "gamma", "beta", "w", "bias"]
    dy = r(M, out_cols)
    return fn, args, names, dy, 3 * flops  # fwd + dgrad + wgrad


# --------------------------------------------------------------------------- te-mlir

DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}


class Runtime:
    """te-mlir's runtime as the benchmark drives it: te_mlir's (python/te_mlir/_abi.py)
    loaded from `path`, and one context of the device's backend. te-mlir runs on the
    context's own non-blocking CUDA stream; sync() waits for it and for torch's."""

    def __init__(self, path, dev):
        self.rt = te_mlir.runtime(os.path.abspath(path))
        self.lib = self.rt.lib
        self.version = self.rt.version
        self.ctx = self.rt.context(dev)
        self.cuda = dev == "cuda"

    def check(self, rc, what):
        self.rt.check(rc, what)

    def sync(self):
        self.ctx.synchronize()
        if self.cuda:
            torch.cuda.synchronize()

    def graph_skip_reason(self):
        """Why graph mode cannot run here (None when it can)."""
        if not self.cuda:
            return "cpu backend: CUDA graphs need the cuda backend"
        return None


def ptrs(tensors):
    return _abi.addresses([t.data_ptr() if t is not None else None for t in tensors])


class Spec:
    """An argument or result of an entry at bound dims, as the module client gives it:
    dtype, roles, shape, buffer bytes and, for a qtensor, its inner tensors' byte ranges."""

    def __init__(self, tensor, dims):
        self.dtype, self.label, self.roles = tensor.dtype, tensor.label, tensor.roles
        self.shape = tensor.client_shape(dims)
        self.bytes, self.alignment = tensor.client_bytes(dims), tensor.alignment
        self.inner = tensor.client_layout(dims)  # (name, first byte, bytes)
        self.initial = tensor.initial_state

    def get(self, key, default=None):
        return self.roles.get(key, default)

    def __getitem__(self, key):
        return self.roles[key]

    def __contains__(self, key):
        return key in self.roles


def alloc_buffer(spec, dev):
    """An uninitialized buffer for `spec`: a typed tensor, or for a qtensor a uint8 byte
    buffer whose start is aligned to the qtensor's alignment."""
    if spec.dtype != "qtensor":
        return torch.empty(spec.shape, dtype=DTYPES[spec.dtype], device=dev)
    n, align = spec.bytes, spec.alignment
    raw = torch.empty(n + align, dtype=torch.uint8, device=dev)
    off = (-raw.data_ptr()) % align
    return raw[off:off + n]


def poison(t):
    """NaN in float buffers; 0xFF bytes in quantized ones (an FP8 NaN, a NaN scale_inv)."""
    t.fill_(255 if t.dtype == torch.uint8 else float("nan"))


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(
        a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def same_result(a, b, spec):
    """Bit equality of two values of a result; for a qtensor only its inner tensors count
    (the alignment padding between them is not part of the value, and is not written)."""
    if spec.dtype != "qtensor":
        return same_bits(a, b)
    return a.shape == b.shape and all(torch.equal(a[o:o + n], b[o:o + n])
                                      for _, o, n in spec.inner)


def initial_state(spec, dev):
    """TE's initial recipe state for a te.state argument, as the module client gives it."""
    if spec.initial is None:
        raise RuntimeError("te.state %s: expected float32, got %s" % (spec["te.state"],
                                                                     spec.dtype))
    return torch.full(spec.shape, spec.initial, dtype=torch.float32, device=dev)


def check_tensor(t, spec, what):
    if spec.dtype == "qtensor":
        if t.dtype != torch.uint8 or t.dim() != 1 or t.numel() != spec.bytes:
            raise RuntimeError(f"{what}: have {t.dtype} {list(t.shape)}, entry wants a qtensor "
                               f"buffer of {spec.bytes} bytes")
    elif t.dtype != DTYPES[spec.dtype] or list(t.shape) != list(spec.shape):
        raise RuntimeError(f"{what}: have {t.dtype} {list(t.shape)}, entry wants "
                           f"{spec.dtype} {spec.shape}")
    if not t.is_contiguous():
        raise RuntimeError(what + ": not contiguous")


class TEStep:
    """A training step of a te-compile --train library: <fn>_fwd then <fn>_bwd, through
    the runtime's module client (te_module_step_*: which entries, where each backward
    argument comes from, the dims, the run).

    Recipe state (te.state args/results, fp8-delayed) has two buffer sets A and B per
    state tensor: a step at parity 0 reads A and writes B, at parity 1 reads B and
    writes A, and step() flips the parity, so each step consumes the state the previous
    one returned. Every other buffer is the same at both parities."""

    def __init__(self, rt, path, inputs, dys, dev):
        self.rt, self.dev = rt, dev
        self.lib = te_mlir.Library(path, backend=dev)
        self.step = self.lib.step()
        fwd, bwd = self.step.fwd, self.step.bwd
        self.fwd_name, self.bwd_name = fwd.name, bwd.name
        self.fwd_e, self.bwd_e = fwd, bwd
        # forward dims from the module inputs (in order; recipe state after them)
        given = iter(inputs)
        shapes = [None if a.is_state else next(given, None) for a in fwd.args]
        self.fwd_shapes = shapes
        self.fdims = self._bind_dims(fwd, shapes)
        self.bdims = self.step.bwd_dims(self.fdims)
        self.dims = _abi.i64s(self.fdims)
        self.arena = {"fwd": self._arena(fwd, self.fdims), "bwd": self._arena(bwd, self.bdims)}
        self.pairs = []  # (A, B, name) per carried state tensor
        self.in_place_state = []  # names of state the backward writes in place
        self.in_place_tensors = []  # and its buffers (argument and result at once)
        self.feed = []

        # forward: the module inputs in order, recipe state after them
        it = iter(inputs)

        def feed_fwd(i, a):
            t = next(it, None)
            if t is None:
                raise RuntimeError(f"{self.fwd_name} arg {i}: more arguments than inputs")
            return t, "input"

        self.fa, self.fr, self.fwd_res_labels, self.fwd_res_specs = self._bind(
            fwd, self.fdims, feed_fwd)
        if next(it, None) is not None:
            raise RuntimeError(f"{self.fwd_name}: fewer arguments than inputs")
        fres = self.fr[0]
        self.outputs = [t for t, s in zip(fres, self.fwd_res_specs)
                        if "te.saved" not in s and "te.state" not in s]

        # backward: fed as the module client says (te_module_step_feed)
        self.grads_in = [None] * len(fres)

        def feed_bwd(i, a):
            kind, k = self.step.feeds[i]
            if kind == _abi.FEED_INPUT:
                t, how = inputs[k], a["te.alias"]
            elif kind == _abi.FEED_RESULT:
                if "te.state" in self.fwd_res_specs[k]:
                    raise RuntimeError(f"{self.bwd_name} arg {i}: alias of a state result")
                t = fres[k]
                how = a["te.alias"] if "te.alias" in a else "saved " + a["te.saved"]
            elif kind == _abi.FEED_GRAD:
                t, how = dys[k], "grad_of " + a["te.grad_of"]
                self.grads_in[k] = t
            else:
                raise RuntimeError(f"{self.bwd_name} arg {i}: cannot feed {a.label}")
            self.feed.append(how)
            return t, how

        self.ba, self.br, self.bwd_res_labels, self.bwd_res_specs = self._bind(
            bwd, self.bdims, feed_bwd)
        self.qtensors = sum(s.dtype == "qtensor" for s in self._arg_specs + self.fwd_res_specs
                            + self.bwd_res_specs)
        # te.grad_of input:N of each backward gradient result
        self.grad_results = [(int(s["te.grad_of"].split(":")[1]), t)
                             for t, s in zip(self.br[0], self.bwd_res_specs) if "te.grad_of" in s]
        self._keep = (inputs, dys)
        self.g = ptrs(self.grads_in)
        self.p = [(ptrs(self.fa[q]), ptrs(self.fr[q]), ptrs(self.ba[q]), ptrs(self.br[q]))
                  for q in (0, 1)]
        self.ctx = rt.ctx
        self.parity = 0

    @staticmethod
    def _bind_dims(e, tensors):
        """Entry e's dims from the shapes of `tensors` (None: not given)."""
        return e.bind_dims([None] * len(tensors),
                           [list(t.shape) if t is not None else None for t in tensors])

    @staticmethod
    def _arena(e, dims):
        n = e.arena_bytes(dims)
        return "dynamic" if n is None else n

    def _bind(self, e, dims, feed):
        """Argument and result tensors of entry `e` at parity 0 and 1 (they differ only
        in the state buffers), a label and a Spec per result."""
        name = e.name
        args, res = ([], []), ([], [])
        state = {}  # te.state name -> (A, B)
        # A backward's recipe state the entry writes over its argument (module info
        # state_in_place, as the PyTorch ops run it): one buffer at both parities,
        # nothing to copy or swap (in-place results of other kinds are not state).
        in_place = set(e.in_place.values())
        specs = [Spec(a, dims) for a in e.args]
        if e is self.fwd_e:
            self._arg_specs = list(specs)
        else:
            self._arg_specs += specs
        for i, a in enumerate(specs):
            if "te.state" in a:
                A = initial_state(a, self.dev)
                state[a["te.state"]] = (A, A if i in in_place else A.clone())
                if e is self.bwd_e:
                    self.feed.append("state " + a["te.state"])
                args[0].append(A)
                args[1].append(state[a["te.state"]][1])
                continue
            t, how = feed(i, a)
            check_tensor(t, a, f"{name} arg {i} ({how})")
            args[0].append(t)
            args[1].append(t)
        labels, rspecs = [], []
        for i, tensor in enumerate(e.results):
            r = Spec(tensor, dims)
            sname = r.get("te.state")
            if sname is not None and sname in state:
                A, B = state.pop(sname)
                check_tensor(A, r, f"{name} result {i} (state {sname})")
                if A is B:  # written in place: always in A
                    self.in_place_state.append(sname)
                    self.in_place_tensors.append(A)
                else:
                    self.pairs.append((A, B, sname))
                res[0].append(B)
                res[1].append(A)
            else:
                t = alloc_buffer(r, self.dev)
                res[0].append(t)
                res[1].append(t)
            labels.append("%s:%d%s" % (name, i, "".join(
                " " + k + "=" + r[k] for k in ("te.saved", "te.grad_of", "te.state") if k in r)))
            rspecs.append(r)
        return args, res, labels, rspecs

    def call(self, q):
        fa, fr, ba, br = self.p[q]
        self.step.run(self.ctx, fa, fr, self.g, ba, br, self.dims)

    def __call__(self):
        """One training step; the state it returns feeds the next."""
        self.call(self.parity)
        if self.pairs:
            self.parity ^= 1

    def results(self, q=None):
        """(label, tensor, spec) of every result of both entries at parity q (default: the
        buffers the next step writes)."""
        q = self.parity if q is None else q
        return list(zip(self.fwd_res_labels + self.bwd_res_labels, self.fr[q] + self.br[q],
                        self.fwd_res_specs + self.bwd_res_specs))

    def state_read(self):
        """The state buffers the next step at parity 0 reads: A of every pair, and the
        state written in place."""
        return [A for A, _, _ in self.pairs] + self.in_place_tensors

    def state_copy(self):
        """Copies of state_read(), for restore_state."""
        return [A.clone() for A in self.state_read()]

    def restore_state(self, S):
        for A, s in zip(self.state_read(), S):
            A.copy_(s)

    def poison(self):
        for _, t, _ in self.writable():
            poison(t)

    def writable(self, q=None):
        """results(q) without the state written in place (its buffer is also the
        backward's state argument: poisoning it would poison the step's input)."""
        return [x for x in self.results(q) if x[2].get("te.state") not in self.in_place_state]

    def canon(self):
        """Moves the current state into the A buffers (parity 0). Synchronize first."""
        if self.parity == 1:
            for A, B, _ in self.pairs:
                A.copy_(B)
            self.parity = 0

    def grads(self, n_inputs):
        g = [None] * n_inputs
        for k, t in self.grad_results:
            g[k] = t
        return g


# --------------------------------------------------------------------------- timing


def time_step(step, sync, reps, min_rep_s, warmup=3, max_iters=500):
    for _ in range(warmup):
        step()
    sync()
    t0 = time.perf_counter()
    step()
    sync()
    one = time.perf_counter() - t0
    iters = int(min(max_iters, max(3, math.ceil(min_rep_s / max(one, 1e-6)))))
    per = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        sync()
        per.append((time.perf_counter() - t0) / iters * 1e3)
    return dict(ms=statistics.median(per), ms_min=min(per), ms_max=max(per), iters=iters,
                reps=reps)


def max_rel(a, b):
    a, b = a.float(), b.float()
    if not torch.isfinite(a).all():
        return float("nan")
    d = (a - b).abs().max().item()
    s = b.abs().max().item()
    return d / s if s > 0 else d


def norm_rel(a, ref):
    a, ref = a.float(), ref.float()
    if not torch.isfinite(a).all():
        return float("nan")
    return ((a - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def emit(rec, results):
    print(json.dumps(rec), flush=True)
    results.append(rec)


def worst(errs):
    """(value, label) of the largest error; NaN counts as the largest."""
    items = [(v, k) for k, v in errs.items() if isinstance(v, float)]
    if not items:
        return float("nan"), "-"
    bad = [(v, k) for v, k in items if v != v]
    return bad[0] if bad else max(items)


# --------------------------------------------------------------------------- CUDA graph


def capture(te, rt, copy_state, call=None):
    """Records one step at parity 0 (fwd entry, bwd entry and, with copy_state, te_rt_copy
    of every new state buffer B over the old one A) into a graph. `call(q)` runs the step
    (default te.call; CachedStep.call for the weight cache's fwd_cached + bwd)."""
    call = call or te.call
    rt.ctx.capture_begin()
    err = None
    try:
        call(0)
        if copy_state:
            for A, B, name in te.pairs:
                rt.ctx.copy(A.data_ptr(), B.data_ptr(), B.numel() * B.element_size())
    except Exception as ex:  # end the capture before reporting
        err = ex
    try:
        g = rt.ctx.capture_end()
    except te_mlir.TeMlirError:
        if err is None:
            raise
        g = None
    if err is not None:
        if g is not None:
            g.destroy()
        raise err
    return g


def te_graph(te, rt, args, call=None):
    """te-mlir's step as a CUDA graph: a normal step from state S is the reference; the
    graph, replayed from the same state on poisoned result buffers, must reproduce every
    result bit for bit; then replays are timed like the steps. Returns a dict with
    'timing' or 'error'. `call(q)`: the step (default te.call), as in capture()."""
    call = call or te.call
    out = {}
    rt.sync()
    te.canon()
    rt.sync()
    S = te.state_copy()

    def restore():
        te.restore_state(S)

    te.poison()
    rt.sync()
    call(0)  # reads A (= S), writes B
    rt.sync()
    ref = [t.clone() for _, t, _ in te.results(0)]
    restore()
    te.poison()
    rt.sync()
    call(0)
    rt.sync()
    out["step_deterministic"] = all(same_result(t, r, spec)
                                    for (_, t, spec), r in zip(te.results(0), ref))

    mode = getattr(args, "graph_state", "advance")
    copy_state = bool(te.pairs) and mode == "advance"
    pingpong = bool(te.pairs) and mode == "pingpong"
    try:
        g = capture(te, rt, copy_state, call)
    except Exception as ex:
        if not copy_state:
            raise
        out["capture_with_state_copy_error"] = repr(ex)[:300]
        copy_state = False
        g = capture(te, rt, False, call)
    out["state_mode"] = ("no recipe state" if not te.pairs else
                         "advanced: te_rt_copy of the new state over the old inside the graph"
                         if copy_state else
                         "ping-pong: two graphs, one per parity (state A -> B, then B -> A), "
                         "launched in turn" if pingpong else
                         "frozen: every replay reads the state buffers as they were at capture")
    g1 = None
    try:
        restore()
        te.poison()
        rt.sync()
        g.launch()
        rt.sync()
        bad = [label for (label, t, spec), r in zip(te.results(0), ref)
               if not same_result(t, r, spec)]
        if copy_state:
            bad += ["state copy " + n for A, B, n in te.pairs if not same_bits(A, B)]
        out["graph_identical"] = not bad
        if bad:
            out["error"] = ("a graph replay differs from a normal step (same inputs and state) "
                            "in: " + ", ".join(bad[:8]) + (" ..." if len(bad) > 8 else "") +
                            ("" if out["step_deterministic"] else
                             " (the normal step itself is not deterministic)"))
            return out
        y_ref = te.outputs[0].clone()

        launch = g.launch
        if pingpong:
            # The graph of parity 1 (reads B, writes A): the pair advances the state
            # without copies, as a caller holding both graphs may run them.
            g1 = capture(te, rt, False, lambda _q: call(1))
            graphs, turn = (g, g1), [0]

            def launch():
                graphs[turn[0]].launch()
                turn[0] ^= 1
        out["timing"] = time_step(launch, rt.sync, args.reps, args.min_rep_s)
        rt.sync()
        # (ping-pong: the state advanced, so the output may differ from the first replay's)
        out["rerun_identical"] = None if pingpong else same_bits(te.outputs[0], y_ref)
    finally:
        rt.sync()
        g.destroy()
        if g1 is not None:
            g1.destroy()
    return out


# --------------------------------------------------------------------------- FP8 weight cache


class CachedStep:
    """te-mlir's FP8 weight cache (a te-compile --train --weight-cache library, <case>.<recipe>
    .wc.so): <fn>_fwd_cached (TE's is_first_microbatch=False) takes, after <fn>_fwd's own
    arguments, the quantized weights <fn>_fwd saved (arguments tagged te.cached_weight = the
    te.saved name of that forward result) instead of quantizing them, and has <fn>_fwd's
    results, so <fn>_bwd is fed from its results exactly as after <fn>_fwd (docs/generated/TEPasses.md, te-weight-cache: its
    results are bit-identical while the weights are unchanged; under delayed scaling the
    cached weights' amax slots record 0). A step is fwd_cached + bwd on `te`'s buffers; the
    cached weights live in their own buffers, filled from a first-microbatch step."""

    def __init__(self, te):
        self.te, self.rt = te, te.rt
        self.entry = None
        for e in te.lib.entries.values():
            if e.cached_forward_of == te.fwd_name:
                self.entry = e
        if self.entry is None:
            raise RuntimeError("no entry with te.cached_forward_of = %s (not a --weight-cache "
                               "library?)" % te.fwd_name)
        e = self.entry
        self.name = e.name
        n_fwd, n = len(te.fwd_e.args), len(e.args)
        if len(e.results) != len(te.fwd_e.results):
            raise RuntimeError(f"{self.name}: not the results of {te.fwd_name}")
        self.dims = te._bind_dims(e, te.fwd_shapes + [None] * (n - n_fwd))
        for i in range(n_fwd):
            a, b = Spec(e.args[i], self.dims), te._arg_specs[i]
            if a.dtype != b.dtype or a.shape != b.shape or a.roles != b.roles:
                raise RuntimeError(f"{self.name} arg {i} ({a.label}) is not {te.fwd_name}'s "
                                   f"({b.label})")
        for i, tensor in enumerate(e.results):
            a = Spec(tensor, self.dims)
            b = te.fwd_res_specs[i]
            if a.dtype != b.dtype or a.shape != b.shape or a.bytes != b.bytes:
                raise RuntimeError(f"{self.name} result {i} ({a.label}) is not {te.fwd_name}'s")
        saved = {s.get("te.saved"): k for k, s in enumerate(te.fwd_res_specs) if "te.saved" in s}
        self.weights, self.sources, self.specs = [], [], []
        for i in range(n_fwd, n):
            a = Spec(e.args[i], self.dims)
            w = a.get("te.cached_weight")
            if w is None or w not in saved:
                raise RuntimeError(f"{self.name} arg {i} ({a.label}): not a te.cached_weight of "
                                   f"a te.saved result of {te.fwd_name}")
            k = saved[w]
            if te.fwd_res_specs[k].bytes != a.bytes or te.fwd_res_specs[k].dtype != a.dtype:
                raise RuntimeError(f"{self.name} arg {i}: {w} is not the saved result's size")
            # The cache lives in the forward's saved-weight result buffer itself (the
            # same at both parities): fwd_cached then returns each saved weight by
            # copying a buffer onto itself, which te_rt_copy skips, so a cached step
            # moves no weight bytes besides the GEMMs' reads.
            t = te.fr[0][k]
            self.weights.append(t)
            self.sources.append(k)
            self.specs.append(a)
        if not self.weights:
            raise RuntimeError(f"{self.name}: no te.cached_weight argument")
        self.p = [(ptrs(te.fa[q] + self.weights), te.p[q][1], te.p[q][2], te.p[q][3])
                  for q in (0, 1)]
        self._dims, self._bdims = _abi.i64s(self.dims), _abi.i64s(te.bdims)

    def fill(self):
        """The cache from the forward's saved weights (the last first-microbatch step): they
        are the cache's buffers already (saved results are the same buffers at both
        parities), so this only checks that and waits for the step."""
        self.rt.sync()
        for t, k in zip(self.weights, self.sources):
            assert t.data_ptr() == self.te.fr[0][k].data_ptr()
        self.rt.sync()

    def call(self, q):
        fa, fr, ba, br = self.p[q]
        te = self.te
        self.entry.run(te.ctx, fa, fr, self._dims)
        te.bwd_e.run(te.ctx, ba, br, self._bdims)

    def __call__(self):
        """One later-microbatch step (fwd_cached + bwd); carries the state like TEStep."""
        self.call(self.te.parity)
        if self.te.pairs:
            self.te.parity ^= 1


def run_cached(rec, path, rt, dev, args, inputs, names, dy, refs, results):
    """te-mlir's weight cache for one FP8 recipe of a case (rec["te_cached*"]): the first
    microbatch (fwd + bwd, fills the cache), then steps of fwd_cached + bwd. Checks, from one
    recipe state S, that fwd_cached + bwd with the weights cached by the uncached step from
    S reproduces every non-state result of that step bit for bit (the design's promise;
    the state results may differ only where the weights' amax is recorded as 0), and
    the errors against fp32; times the cached step and its CUDA graph."""
    recipe, flops = rec["recipe"], rec["gemm_tflop"] * 1e12
    rt.sync()
    te = TEStep(rt, path, inputs, [dy], dev)
    cs = CachedStep(te)
    info = rec["te_cached_info"] = dict(lib=os.path.basename(path), entry=cs.name,
                                        cached_weights=[(s["te.cached_weight"], s.bytes)
                                                        for s in cs.specs])
    for _ in range(DELAYED_WARMUP if te.pairs else 1):  # like run_te's checked step
        te()
    rt.sync()
    te.canon()
    rt.sync()
    S = te.state_copy()
    te.poison()
    rt.sync()
    te.call(0)  # first microbatch from S: the reference, and what fills the cache
    rt.sync()
    ref = [t.clone() for _, t, _ in te.results(0)]
    cs.fill()
    te.restore_state(S)
    cache = {t.data_ptr() for t in cs.weights}  # the cache's buffers keep their bytes
    for _, t, _ in te.writable():
        if t.data_ptr() not in cache:
            poison(t)
    rt.sync()
    cs.call(0)  # a later microbatch from the same S
    rt.sync()
    dump_results(args, os.path.basename(path) + ".cached", te.results(0))
    diff, state_diff = [], []
    for (label, t, spec), r in zip(te.results(0), ref):
        if not same_result(t, r, spec):
            (state_diff if "te.state" in spec else diff).append(label)
    info["identical_to_uncached"] = not diff
    info["property"] = ("fwd_cached + bwd from state S with the weights the uncached step "
                        "from S saved: every non-state result bit-identical to that step's")
    info["state_results_differing"] = state_diff
    got = [te.outputs[0]] + te.grads(len(inputs))
    info["te_cached_vs_fp32"] = {label: (norm_rel(t, r) if t is not None else "missing")
                                 for (label, _, r), t in zip(refs, got)}
    w, wl = worst(info["te_cached_vs_fp32"])
    print("check %s %s cached weights: %s  te_cached vs fp32 worst %.2e (%s)%s" % (
        rec["case"], recipe, "bit-identical to the uncached step" if not diff else
        "DIFFERS from the uncached step in " + ", ".join(diff[:6]), w, wl,
        ("  state differing: " + ", ".join(state_diff)) if state_diff else ""), flush=True)
    if diff:
        rec["te_cached_error"] = ("fwd_cached + bwd differs from the uncached step (same "
                                  "state, same weights) in: " + ", ".join(diff))
        return
    if w != w or w > args.fp8_tol:
        rec["te_cached_error"] = "FP8 check failed: worst %.3g on %s; not timed" % (w, wl)
        return
    te.parity = 1 if te.pairs else 0  # cs.call(0) read A and wrote B

    # bandwidth floor: the bytes a cached step must move at least, at the copy bandwidth
    def nbytes(t):
        return t.numel() * t.element_size()
    wbytes = sum(s.bytes for s in cs.specs)
    in_bytes = sum(nbytes(t) for t, n in zip(inputs, names) if not n.startswith("w")) + nbytes(dy)
    out_bytes = nbytes(te.outputs[0]) + sum(nbytes(t) for t in te.grads(len(inputs))
                                            if t is not None)
    state_bytes = 2 * sum(nbytes(A) for A, _, _ in te.pairs)
    fl = dict(fp8_weight_bytes=wbytes, activation_and_vector_input_bytes=in_bytes,
              output_and_gradient_bytes=out_bytes, recipe_state_bytes=state_bytes,
              total_bytes=wbytes + in_bytes + out_bytes + state_bytes)
    bw = getattr(args, "copy_tb_s", None)
    if bw:
        fl["copy_tb_s"] = bw
        fl["fp8_weights_us"] = wbytes / (bw * 1e12) * 1e6
        fl["total_us"] = fl["total_bytes"] / (bw * 1e12) * 1e6
    else:
        fl["note"] = "no copy bandwidth measured (cpu or --no-extras): bytes only"
    rec["te_cached_bandwidth_floor"] = fl

    if args.graph != "only":
        t = time_step(cs, rt.sync, args.reps, args.min_rep_s)
        rt.sync()
        rec["te_cached"] = t
        emit(dict(case=rec["case"], recipe=recipe, engine="te-mlir-cached", **t,
                  tflops=flops / t["ms"] / 1e9), results)
    if args.graph != "off":
        why = rt.graph_skip_reason()
        if why:
            rec["te_cached_graph_skipped"] = why
        else:
            try:
                gr = te_graph(te, rt, args, call=cs.call)
            except Exception as ex:
                traceback.print_exc()
                gr = dict(error=repr(ex)[:500])
            rec["te_cached_graph_info"] = {k: v for k, v in gr.items() if k != "timing"}
            if "timing" in gr:
                rec["te_cached_graph"] = gr["timing"]
                emit(dict(case=rec["case"], recipe=recipe, engine="te-mlir-cached-graph",
                          **gr["timing"], tflops=flops / gr["timing"]["ms"] / 1e9), results)
            else:
                rec["te_cached_graph_error"] = gr.get("error", "no timing")
    rt.sync()
    del te, cs


# --------------------------------------------------------------------------- one case


def dump_results(args, name, results):
    """--dump: every result of the checked step, bytes on the CPU, to DIR/<name>.pt (to
    compare two runtimes bit for bit: utils/same_dumps.py)."""
    if not args.dump:
        return
    os.makedirs(args.dump, exist_ok=True)
    torch.save({label: t.detach().cpu() for label, t, _ in results if t is not None},
               os.path.join(args.dump, name + ".pt"))


def run_te(rec, path, rt, dev, args, inputs, dy, refs, eager_err, te_bf16_err, results):
    """One recipe library of a case: checked step, timing, graph. Fills rec."""
    recipe, flops = rec["recipe"], rec["gemm_tflop"] * 1e12
    fp8 = recipe != "bf16"
    rt.sync()
    te = TEStep(rt, path, inputs, [dy], dev)
    rec["te_arena_bytes"] = te.arena
    rec["te_bwd_feed"] = te.feed
    rec["te_qtensors"] = te.qtensors
    rec["te_state"] = [n for _, _, n in te.pairs]
    rec["te_state_in_place"] = te.in_place_state

    def tensors():
        return [te.outputs[0]] + te.grads(len(inputs))

    # --- correctness: every result written (poisoned buffers), errors per tensor
    if te.pairs:
        # TE's first step quantizes with the initial scales (1); carry the state a few
        # steps and check a step that runs on scales from real amaxes.
        te.poison()
        rt.sync()
        te()
        rt.sync()
        rec["first_step_check"] = {label: (norm_rel(t, r) if t is not None else "missing")
                                   for (label, _, r), t in zip(refs, tensors())}
        for _ in range(DELAYED_WARMUP - 1):
            te()
    # te-mlir's steps run on the runtime's own stream: finish them before
    # torch (another stream) writes into their buffers.
    rt.sync()
    te.poison()
    rt.sync()
    te()
    rt.sync()
    rec["checked_step"] = DELAYED_WARMUP + 1 if te.pairs else 1
    got = [t.clone() if t is not None else None for t in tensors()]
    dump_results(args, rec["lib"], te.results(te.parity ^ 1 if te.pairs else 0))
    checks, ok = {}, True
    for (label, e, r), t in zip(refs, got):
        if t is None:
            checks[label] = "missing"
            ok = False
            continue
        c = dict(te_vs_fp32=norm_rel(t, r), te_vs_eager_maxrel=max_rel(t, e),
                 eager_vs_fp32=eager_err[label])
        if fp8 and te_bf16_err is not None:
            c["te_bf16_vs_fp32"] = te_bf16_err.get(label)
        passed = c["te_vs_fp32"] <= args.fp8_tol if fp8 else c["te_vs_eager_maxrel"] <= TOL
        ok = ok and passed  # NaN fails
        checks[label] = c
    rec["check"] = checks
    rec["check_pass"] = ok
    rec["check_rule"] = ("||te - fp32|| / ||fp32|| <= %g on y and every gradient" % args.fp8_tol
                         if fp8 else "max|te - eager| / max|eager| <= %g" % TOL)
    emit(dict(rec, what="check"), results)
    te_err = {k: c["te_vs_fp32"] for k, c in checks.items() if isinstance(c, dict)}
    w, wl = worst(te_err)
    rec["te_worst_vs_fp32"] = [w, wl]
    line = "check %s %s: %s  te vs fp32 worst %.2e (%s)" % (
        rec["case"], recipe, "PASS" if ok else "FAIL", w, wl)
    if fp8:
        line += "  [bf16 for context: eager vs fp32 worst %.2e" % worst(eager_err)[0]
        line += (", te-bf16 vs fp32 worst %.2e]" % worst(te_bf16_err)[0]
                 if te_bf16_err else ", te-bf16 not run]")
        if "first_step_check" in rec:
            line += "  first step (initial scales) worst %.2e" % worst(
                rec["first_step_check"])[0]
    else:
        line += "  te vs eager max-rel worst %.2e" % worst(
            {k: c["te_vs_eager_maxrel"] for k, c in checks.items() if isinstance(c, dict)})[0]
    print(line, flush=True)
    if fp8 and not ok:
        rec["error"] = "FP8 check failed (%s): worst %.3g on %s; not timed" % (
            rec["check_rule"], w, wl)
        return

    # --- timing of the normal step (state carried from step to step)
    if args.graph != "only":
        t = time_step(te, rt.sync, args.reps, args.min_rep_s)
        rt.sync()
        # the buffers were reused many times: same output as the checked step?
        rec["te_rerun_identical"] = same_bits(te.outputs[0], got[0])
        if te.pairs:  # later steps run on later scales
            rec["te_rerun_vs_checked_normrel"] = norm_rel(te.outputs[0], got[0])
        rec["te"] = t
        emit(dict(case=rec["case"], recipe=recipe, engine="te-mlir", **t,
                  tflops=flops / t["ms"] / 1e9), results)

    # --- the same step as a CUDA graph
    if args.graph != "off":
        why = rt.graph_skip_reason()
        if why:
            rec["te_graph_skipped"] = why
            print("graph %s %s: skipped (%s)" % (rec["case"], recipe, why), flush=True)
        else:
            try:
                gr = te_graph(te, rt, args)
            except Exception as ex:
                traceback.print_exc()
                gr = dict(error=repr(ex)[:500])
            rec["te_graph_info"] = {k: v for k, v in gr.items() if k != "timing"}
            if "timing" in gr:
                rec["te_graph"] = gr["timing"]
                emit(dict(case=rec["case"], recipe=recipe, engine="te-mlir-graph",
                          **gr["timing"], tflops=flops / gr["timing"]["ms"] / 1e9), results)
            else:
                rec["te_graph_error"] = gr.get("error", "no timing")
                print("graph %s %s: FAILED %s" % (rec["case"], recipe, rec["te_graph_error"]),
                      flush=True)
    rt.sync()


def run_case(name, libs, rt, dev, args, results, TE=None):
    """Every recipe library of one case (and its weight-cache library), then PyTorch eager,
    torch.compile and torch.compile(mode="reduce-overhead") (bf16), then TransformerEngine's
    module for every recipe te-mlir ran (TE: load_te's modules, or None)."""
    kind, M, H, F_ = parse_case(name)
    fn, inputs, names, dy, flops = make_inputs(kind, M, H, F_, dev)
    sync_t = (lambda: torch.cuda.synchronize()) if dev == "cuda" else (lambda: None)
    base = dict(case=name, kind=kind, M=M, H=H, F=F_, gemm_tflop=flops / 1e12)

    # --- eager reference (autograd.grad: fresh gradients, no accumulation, like te)
    leaves = [t.detach().clone().requires_grad_() for t in inputs]

    def torch_step(f):
        y = f(*leaves)
        return y, torch.autograd.grad(y, leaves, dy)

    ey, eg = torch_step(fn)
    ey, eg = ey.detach(), [g.detach() for g in eg]
    # fp32 reference (no TF32)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    leaves32 = [t.detach().float().requires_grad_() for t in inputs]
    y32 = fn(*leaves32)
    g32 = torch.autograd.grad(y32, leaves32, dy.float())
    y32, g32 = y32.detach(), [g.detach() for g in g32]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    del leaves32
    refs = [("y", ey, y32)] + [("d" + n, eg[i], g32[i]) for i, n in enumerate(names)]
    eager_err = {label: norm_rel(e, r) for label, e, r in refs}
    emit(dict(base, what="reference", eager_vs_fp32=eager_err), results)

    # --- te-mlir, one library per recipe (bf16 first: its errors are the FP8 context)
    recs, te_bf16_err = {}, None
    for recipe in [r for r in RECIPES if r in libs]:
        rec = dict(base, recipe=recipe, lib=os.path.basename(libs[recipe]))
        recs[recipe] = rec
        try:
            run_te(rec, libs[recipe], rt, dev, args, inputs, dy, refs, eager_err, te_bf16_err,
                   results)
        except Exception as ex:
            traceback.print_exc()
            rec["error"] = repr(ex)[:1000]
            rec["traceback"] = traceback.format_exc()[-4000:]
        if "wc:" + recipe in libs:  # the FP8 weight cache (second and later microbatches)
            try:
                run_cached(rec, libs["wc:" + recipe], rt, dev, args, inputs, names, dy, refs,
                           results)
            except Exception as ex:
                traceback.print_exc()
                rec["te_cached_error"] = repr(ex)[:1000]
                rec["te_cached_traceback"] = traceback.format_exc()[-4000:]
        if recipe == "bf16" and "check" in rec:
            te_bf16_err = {k: c["te_vs_fp32"] for k, c in rec["check"].items()
                           if isinstance(c, dict)}
        if dev == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()

    # --- PyTorch bf16, eager and torch.compile
    torch_rec = {}
    torch_rec["eager"] = time_step(lambda: torch_step(fn), sync_t, args.reps, args.min_rep_s)
    emit(dict(case=name, engine="eager", **torch_rec["eager"],
              tflops=flops / torch_rec["eager"]["ms"] / 1e9), results)
    if not args.no_compile:
        try:
            torch._dynamo.reset()
            cf = torch.compile(fn, dynamic=False)
            t0 = time.time()
            cy, cg = torch_step(cf)
            torch_rec["compile_s"] = time.time() - t0
            torch_rec["compile_vs_eager_y_maxrel"] = max_rel(cy.detach(), ey)
            torch_rec["compile_vs_eager_dx_maxrel"] = max_rel(cg[0].detach(), eg[0])
            del cy, cg
            t_c = time_step(lambda: torch_step(cf), sync_t, args.reps, args.min_rep_s)
            torch_rec["compile"] = t_c
            emit(dict(case=name, engine="compile", **t_c, tflops=flops / t_c["ms"] / 1e9),
                 results)
        except Exception as ex:  # keep going: report the failure
            torch_rec["compile_error"] = repr(ex)[:500]
            traceback.print_exc()
        # torch.compile(mode="reduce-overhead"): Inductor with CUDA graphs (cuda only)
        if dev == "cuda":
            try:
                torch._dynamo.reset()
                co = torch.compile(fn, dynamic=False, mode="reduce-overhead")

                def ro():
                    torch.compiler.cudagraph_mark_step_begin()
                    return torch_step(co)

                t0 = time.time()
                ry, rg = ro()
                torch_rec["compile_ro_s"] = time.time() - t0
                ry, rg = ro()  # the cudagraph tree records on the first calls
                got = [ry.detach().clone()] + [g.detach().clone() for g in rg]
                torch_rec["compile_ro_vs_fp32"] = {lab: norm_rel(t, r) for (lab, _, r), t
                                                   in zip(refs, got)}
                torch_rec["compile_ro_vs_eager_y_maxrel"] = max_rel(got[0], ey)
                del ry, rg, got
                t_ro = time_step(ro, sync_t, args.reps, args.min_rep_s)
                torch_rec["compile_ro"] = t_ro
                emit(dict(case=name, engine="compile-ro", **t_ro, tflops=flops / t_ro["ms"] / 1e9),
                     results)
            except Exception as ex:
                torch_rec["compile_ro_error"] = repr(ex)[:500]
                torch_rec["compile_ro_traceback"] = traceback.format_exc()[-4000:]
                traceback.print_exc()
            torch._dynamo.reset()
    if dev == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

    # --- TransformerEngine's modules, every recipe te-mlir ran, same weights / x / dy
    if TE is not None:
        for recipe, rec in recs.items():
            try:
                run_te_peers(rec, TE, kind, M, H, F_, inputs, dy, refs, eager_err, args,
                             "wc:" + recipe in libs, results)
            except Exception as ex:
                traceback.print_exc()
                rec.setdefault("te_pt_errors", {})["all"] = dict(
                    error=repr(ex)[:1000], traceback=traceback.format_exc()[-4000:])
    del refs, y32, g32

    # --- ratios (speedup = other time / te time; > 1 means te-mlir is faster)
    bf16 = recs.get("bf16", {})
    for recipe, rec in recs.items():
        rec.update(torch_rec)
        for eng in ("te", "te_graph", "eager", "compile", "compile_ro", "te_cached",
                    "te_cached_graph", "te_pt", "te_pt_graph", "te_pt_cached",
                    "te_pt_cached_graph"):
            if isinstance(rec.get(eng), dict) and "ms" in rec[eng]:
                rec[eng + "_tflops"] = flops / rec[eng]["ms"] / 1e9
        for eng, pre in (("te", ""), ("te_graph", "graph_")):
            if eng not in rec:
                continue
            rec[pre + "speedup_vs_eager"] = rec["eager"]["ms"] / rec[eng]["ms"]
            if "compile" in rec:
                rec[pre + "speedup_vs_compile"] = rec["compile"]["ms"] / rec[eng]["ms"]
            if recipe != "bf16" and eng in bf16:  # G11: FP8 vs our own bf16
                rec[pre + "speedup_vs_te_bf16"] = bf16[eng]["ms"] / rec[eng]["ms"]
        if "te" in rec and "te_graph" in rec:
            rec["graph_speedup_vs_te"] = rec["te"]["ms"] / rec["te_graph"]["ms"]
        rec["summary"] = peer_summary(rec)
        emit(dict(rec, what="case"), results)
    del leaves, ey, eg, inputs, dy


# --------------------------------------------------------------------------- extras


def copy_bandwidth(results, dev):
    n = 1 << 29  # 1 GiB of bf16 per buffer
    src = torch.randn(n // 2, device=dev, dtype=torch.float32).view(torch.bfloat16)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    per = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10):
            dst.copy_(src)
        e.record()
        torch.cuda.synchronize()
        per.append(s.elapsed_time(e) / 10)
    ms = statistics.median(per)
    bytes_ = 2 * src.numel() * src.element_size()
    emit(dict(what="copy_bw", bytes_read_plus_written=bytes_, ms=ms, tb_s=bytes_ / ms / 1e9), results)
    del src, dst
    return bytes_ / ms / 1e9


def norm_kernels(rt, results, dev, reps, min_rep_s):
    L = rt.lib
    for kind_name, kind in (("layernorm", 0), ("rmsnorm", 1)):
        for rows, cols in ((8192, 4096), (32768, 4096), (4096, 1024)):
            try:
                g = torch.Generator(device=dev)
                g.manual_seed(7)
                x = torch.randn(rows, cols, device=dev, generator=g).to(torch.bfloat16)
                gamma = (1 + 0.1 * torch.randn(cols, device=dev, generator=g)).to(torch.bfloat16)
                beta = (0.1 * torch.randn(cols, device=dev, generator=g)).to(torch.bfloat16) \
                    if kind == 0 else None
                dz = torch.randn(rows, cols, device=dev, generator=g).to(torch.bfloat16)
                z = torch.empty_like(x)
                dx = torch.empty_like(x)
                dgamma = torch.empty_like(gamma)
                dbeta = torch.empty_like(gamma) if kind == 0 else None
                mu = torch.empty(rows, device=dev) if kind == 0 else None
                rs = torch.empty(rows, device=dev)
                P = lambda t: t.data_ptr() if t is not None else None
                torch.cuda.synchronize()

                def fwd():
                    rt.check(L.te_rt_norm_fwd(rt.ctx.handle, kind, 1, P(x), P(gamma), P(beta), EPS, 0,
                                              rows, cols, P(z), P(mu), P(rs)), "te_rt_norm_fwd")

                def bwd():
                    rt.check(L.te_rt_norm_bwd(rt.ctx.handle, kind, 1, P(dz), P(x), P(mu), P(rs),
                                              P(gamma), 0, rows, cols, P(dx), P(dgamma),
                                              P(dbeta)), "te_rt_norm_bwd")

                fwd()
                rt.sync()
                ref = F.layer_norm(x, (cols,), gamma, beta, EPS) if kind == 0 else \
                    F.rms_norm(x, (cols,), gamma, EPS)
                err = max_rel(z, ref)
                tf = time_step(fwd, rt.sync, reps, min_rep_s)
                tb = time_step(bwd, rt.sync, reps, min_rep_s)
                tt = time_step((lambda: F.layer_norm(x, (cols,), gamma, beta, EPS)) if kind == 0
                               else (lambda: F.rms_norm(x, (cols,), gamma, EPS)),
                               torch.cuda.synchronize, reps, min_rep_s)
                # torch norm backward alone (autograd of the norm only)
                xl = x.detach().clone().requires_grad_()
                gl = gamma.detach().clone().requires_grad_()
                bl = beta.detach().clone().requires_grad_() if beta is not None else None
                yl = F.layer_norm(xl, (cols,), gl, bl, EPS) if kind == 0 else \
                    F.rms_norm(xl, (cols,), gl, EPS)
                lv = [xl, gl] + ([bl] if bl is not None else [])
                ttb = time_step(lambda: torch.autograd.grad(yl, lv, dz, retain_graph=True),
                                torch.cuda.synchronize, reps, min_rep_s)
                nbytes = rows * cols * 2
                emit(dict(what="norm", norm=kind_name, rows=rows, cols=cols, z_maxrel_vs_torch=err,
                          te_fwd_us=tf["ms"] * 1e3, te_fwd_tb_s=2 * nbytes / tf["ms"] / 1e9,
                          te_bwd_us=tb["ms"] * 1e3, te_bwd_tb_s=3 * nbytes / tb["ms"] / 1e9,
                          torch_fwd_us=tt["ms"] * 1e3, torch_fwd_tb_s=2 * nbytes / tt["ms"] / 1e9,
                          torch_bwd_us=ttb["ms"] * 1e3,
                          torch_bwd_tb_s=3 * nbytes / ttb["ms"] / 1e9), results)
                del x, z, dx, dz, yl, xl
            except Exception as ex:
                traceback.print_exc()
                emit(dict(what="norm", norm=kind_name, rows=rows, cols=cols, error=repr(ex)[:300]),
                     results)


# --------------------------------------------------------------------------- TransformerEngine


def load_te(mode, dev):
    """transformer_engine.pytorch for --te auto|on|off: ((te.pytorch, te.common.recipe) or
    None, a record of what happened). `on` exits with a message when it does not import."""
    info = dict(mode=mode, used=False)
    if mode == "off":
        info["reason"] = "--te off"
        return None, info
    if dev != "cuda":
        info["reason"] = "--device %s: TransformerEngine runs on CUDA only" % dev
        if mode == "on":
            sys.exit("bench.py: --te on needs --device cuda")
        return None, info
    try:
        import transformer_engine
        import transformer_engine.pytorch as tep
        from transformer_engine.common import recipe as ter
    except Exception as ex:
        info["reason"] = "transformer_engine.pytorch does not import: " + repr(ex)[:500]
        info["traceback"] = traceback.format_exc()[-3000:]
        if mode == "on":
            sys.exit("bench.py: --te on, but " + info["reason"] +
                     " (put TransformerEngine on PYTHONPATH, or use --te auto/off)")
        return None, info
    info.update(used=True, version=getattr(transformer_engine, "__version__", None)
                or getattr(tep, "__version__", "?"),
                path=os.path.dirname(os.path.abspath(transformer_engine.__file__)))
    return (tep, ter), info


def te_recipe(ter, r):
    return {"fp8-delayed": ter.DelayedScaling, "fp8-current": ter.Float8CurrentScaling,
            "fp8-block": ter.Float8BlockScaling}[r]()


def te_autocast(TE, r):
    """fp8_autocast(enabled=r != "bf16", fp8_recipe=...) (te.pytorch.autocast where a newer
    TE has it); bf16: no autocast (TE then runs its bf16 path, as with enabled=False)."""
    tep, ter = TE
    if r == "bf16":
        import contextlib
        return contextlib.nullcontext()
    if hasattr(tep, "autocast"):
        try:
            return tep.autocast(enabled=True, recipe=te_recipe(ter, r))
        except TypeError:
            pass
    return tep.fp8_autocast(enabled=True, fp8_recipe=te_recipe(ter, r))


def te_reset(TE):
    """FP8GlobalStateManager.reset() between TE runs (TE's own tests do this), if present."""
    import importlib
    for name in ("transformer_engine.pytorch.fp8", "transformer_engine.pytorch.quantization"):
        try:
            importlib.import_module(name).FP8GlobalStateManager.reset()
            return
        except Exception:
            continue


def te_module(TE, kind, H, F_, inputs):
    """TE's module for a case with the case's weights copied in (params_dtype bf16), and its
    parameters in the order of inputs[1:] (so gradients line up with the names). SwiGLU:
    TE's swiglu puts the first half of fc1's output through SiLU and multiplies by the
    second, te-mlir's "activated half first": fc1_weight is w1 as it is."""
    tep, _ = TE
    dt = torch.bfloat16
    with torch.no_grad():
        if kind == "ln_mlp_gelu":
            m = tep.LayerNormMLP(H, F_, eps=EPS, bias=True, normalization="LayerNorm",
                                 activation="gelu", params_dtype=dt)
            pn = ["layer_norm_weight", "layer_norm_bias", "fc1_weight", "fc1_bias",
                  "fc2_weight", "fc2_bias"]
        elif kind == "rms_mlp_swiglu":
            m = tep.LayerNormMLP(H, F_, eps=EPS, bias=False, normalization="RMSNorm",
                                 activation="swiglu", params_dtype=dt)
            pn = ["layer_norm_weight", "fc1_weight", "fc2_weight"]
        else:
            m = tep.LayerNormLinear(H, F_, eps=EPS, bias=True, normalization="LayerNorm",
                                    params_dtype=dt)
            pn = ["layer_norm_weight", "layer_norm_bias", "weight", "bias"]
        m = m.cuda()
        params = [getattr(m, n) for n in pn]
        for p, t in zip(params, inputs[1:]):
            if p.shape != t.shape:
                raise RuntimeError("TE %s.%s is %s, the case's is %s" % (
                    type(m).__name__, pn[len(params) - 1], list(p.shape), list(t.shape)))
            p.copy_(t)
    return m, params


def te_graphed(TE, m, x, r, caching):
    """make_graphed_callables(m, (x,), fp8_enabled=..., fp8_recipe=..., fp8_weight_caching=...)
    (the newer names enabled/recipe/cache_quantized_params where the old ones are gone).
    With caching the callable needs is_first_microbatch=bool (TE's graph.py asserts it)."""
    import inspect
    tep, ter = TE
    fn = tep.make_graphed_callables
    try:
        ps = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        ps = {}
    fp8 = r != "bf16"
    old = not ps or "fp8_enabled" in ps
    kw = {("fp8_enabled" if old else "enabled"): fp8}
    if fp8:
        kw["fp8_recipe" if old else "recipe"] = te_recipe(ter, r)
    if caching:
        kw["fp8_weight_caching" if old or "cache_quantized_params" not in ps
           else "cache_quantized_params"] = True
    return fn(m, (x,), **kw), sorted(kw)


def run_te_peers(rec, TE, kind, M, H, F_, inputs, dy, refs, eager_err, args, cached, results):
    """TransformerEngine's module for one recipe of a case, same weights, x and dy:
    "te_pt" (eager), "te_pt_graph" (make_graphed_callables, <= --te-graph-max-tokens) and,
    with `cached` (the case has a te-mlir weight-cache library of the recipe),
    "te_pt_cached" / "te_pt_cached_graph": a first step with is_first_microbatch=True, then
    steps with False. Every variant: DELAYED_WARMUP steps, a checked step (y and every
    gradient against fp32, norm_rel), then time_step like the other engines. A failure is
    recorded with its traceback in rec["te_pt_errors"][variant]; the others still run."""
    r = rec["recipe"]
    sync = torch.cuda.synchronize
    flops = rec["gemm_tflop"] * 1e12
    checks = rec.setdefault("te_pt_check", {})
    errors = rec.setdefault("te_pt_errors", {})
    skipped = rec.setdefault("te_pt_skipped", {})
    if r == "fp8-block" and (M % 128 or H % 128 or F_ % 128):
        skipped["all"] = "fp8-block needs dims that are multiples of 128"
        return
    variants = [("te_pt", False, False)]
    if M <= args.te_graph_max_tokens:
        variants.append(("te_pt_graph", True, False))
    else:
        skipped["te_pt_graph"] = "more than --te-graph-max-tokens %d tokens" % args.te_graph_max_tokens
    if cached and r != "bf16":
        variants.append(("te_pt_cached", False, True))
        if M <= args.te_graph_max_tokens:
            variants.append(("te_pt_cached_graph", True, True))

    for label, graphed, caching in variants:
        m = gm = x = f = params = None
        try:
            te_reset(TE)
            m, params = te_module(TE, kind, H, F_, inputs)
            x = inputs[0].detach().clone().requires_grad_()
            f = m
            if graphed:
                f, kwn = te_graphed(TE, m, x, r, caching)
                rec.setdefault("te_pt_graph_kwargs", {})[label] = kwn

            def step(first=None):
                kw = {} if first is None else dict(is_first_microbatch=first)
                with te_autocast(TE, r):
                    y = f(x, **kw)
                return [y] + list(torch.autograd.grad(y, [x] + params, dy))

            later = (lambda: step(False)) if caching else step
            for _ in range(DELAYED_WARMUP):  # the recipe state evolves, as te-mlir's
                step(True) if caching else step()
            if caching:
                step(True)  # the first microbatch: quantizes and caches the weights
            sync()
            got = [t.detach().clone() for t in later()]
            sync()
            errs = {lab: norm_rel(t, ref) for (lab, _, ref), t in zip(refs, got)}
            if r == "bf16":
                checks[label + "_vs_eager_maxrel"] = {lab: max_rel(t, e) for (lab, e, _), t
                                                      in zip(refs, got)}
            checks[label] = errs
            if label == "te_pt" and isinstance(rec.get("check"), dict):
                for lab, v in errs.items():
                    if isinstance(rec["check"].get(lab), dict):
                        rec["check"][lab]["te_pytorch_vs_fp32"] = v
            del got
            t = time_step(later, sync, args.reps, args.min_rep_s)
            rec[label] = t
            w, wl = worst(errs)
            emit(dict(case=rec["case"], recipe=r, engine=label.replace("te_pt", "TE").replace(
                "_", "-"), **t, tflops=flops / t["ms"] / 1e9, worst_vs_fp32=[w, wl]), results)
        except Exception as ex:
            traceback.print_exc()
            errors[label] = dict(error=repr(ex)[:1000], traceback=traceback.format_exc()[-4000:])
        finally:
            del m, gm, x, f, params
            sync()
            torch.cuda.empty_cache()
    te_reset(TE)


# --------------------------------------------------------------------------- summary


def spread_pct(t):
    return 100.0 * (t["ms_max"] - t["ms_min"]) / t["ms"] if t and t.get("ms") else float("nan")


def peer_summary(rec):
    """te-mlir's best of step / graph against the best peer of the same recipe (bf16: eager,
    compile, compile reduce-overhead, TE, TE graphed; FP8: TE and TE graphed of the recipe);
    with the weight cache, te-mlir's cached step against TE's is_first_microbatch=False.
    ratio = best peer ms / te-mlir ms (> 1: te-mlir faster); spread = (max - min) / median
    over the repetitions, in %."""
    r = rec.get("recipe", "bf16")
    out = {}
    groups = [("step", ("te", "te_graph"),
               ("eager", "compile", "compile_ro", "te_pt", "te_pt_graph") if r == "bf16"
               else ("te_pt", "te_pt_graph")),
              ("cached", ("te_cached", "te_cached_graph"), ("te_pt_cached", "te_pt_cached_graph"))]
    for g, mine, peers in groups:
        mine = {k: rec[k] for k in mine if isinstance(rec.get(k), dict) and "ms" in rec[k]}
        peers = {k: rec[k] for k in peers if isinstance(rec.get(k), dict) and "ms" in rec[k]}
        if not mine and not peers:
            continue
        s = dict(peers_ms={k: v["ms"] for k, v in peers.items()},
                 peers_spread_pct={k: spread_pct(v) for k, v in peers.items()})
        if mine:
            b = min(mine, key=lambda k: mine[k]["ms"])
            s.update(te_mlir=b, te_mlir_ms=mine[b]["ms"], te_mlir_spread_pct=spread_pct(mine[b]))
        if peers:
            p = min(peers, key=lambda k: peers[k]["ms"])
            s.update(best_peer=p, best_peer_ms=peers[p]["ms"],
                     best_peer_spread_pct=spread_pct(peers[p]))
        if mine and peers:
            s["ratio"] = s["best_peer_ms"] / s["te_mlir_ms"]
        out[g] = s
    return out


PEER_NAMES = dict(eager="torch eager", compile="torch.compile",
                  compile_ro="compile reduce-overhead", te_pt="TE", te_pt_graph="TE graphed",
                  te_pt_cached="TE cached", te_pt_cached_graph="TE cached graphed",
                  te="step", te_graph="graph", te_cached="cached step",
                  te_cached_graph="cached graph")


def fmt_ms(v):
    if v is None or v != v:
        return "—"
    return "%.3f" % v if v >= 1 else "%.4f" % v


def peer_rows(results):
    """One row per case / recipe (and a "+ weight cache" row where there is one)."""
    rows = []
    for rec in results:
        if rec.get("what") != "case" or "summary" not in rec:
            continue
        for g, s in rec["summary"].items():
            rows.append((rec, g, s))
    return rows


def worst_of(d):
    return worst(d)[0] if isinstance(d, dict) and d else float("nan")


def peer_table(results, env):
    """The summary as a markdown table, in the layout of the peers_h200 tables."""
    lines = ["# te-mlir against TransformerEngine, PyTorch eager and torch.compile",
             "", "%s, torch %s, TransformerEngine %s, te-mlir runtime %s, %s; "
             "fwd+bwd step, ms (median of %s repetitions; spread = (max - min) / median)." % (
                 env.get("gpu", env.get("device", "?")), env.get("torch"),
                 env.get("te_pytorch", {}).get("version") or "not run (" + str(
                     env.get("te_pytorch", {}).get("reason")) + ")",
                 env.get("te_rt_version"), env.get("date"), env.get("reps")),
             "", "Last column: the best peer's time over te-mlir's best of step / graph (bf16: "
             "eager, torch.compile, compile reduce-overhead, TE, TE graphed; FP8: TE and TE "
             "graphed of the same recipe; \"cached\" rows: the second and later microbatches "
             "with FP8 weights cached, against TE with is_first_microbatch=False); above 1 "
             "means te-mlir is faster. Errors: worst ||y or gradient - fp32|| / ||fp32||.", "",
             "| case | recipe | te-mlir (best of step / graph) | spread | TE | TE + CUDA graph | "
             "torch eager | torch.compile | compile reduce-overhead | best peer (spread) | "
             "worst error te-mlir / TE | te-mlir vs best peer |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    last = None
    for rec, g, s in peer_rows(results):
        r = rec.get("recipe", "bf16")
        cached = g == "cached"
        pm = s["peers_ms"]
        te_k, teg_k = ("te_pt_cached", "te_pt_cached_graph") if cached else ("te_pt", "te_pt_graph")
        torch_cols = ["—"] * 3 if (r != "bf16" or cached) else [
            fmt_ms(pm.get(k)) for k in ("eager", "compile", "compile_ro")]
        if cached:
            e_mine = worst_of(rec.get("te_cached_info", {}).get("te_cached_vs_fp32"))
            e_te = worst_of(rec.get("te_pt_check", {}).get("te_pt_cached"))
        else:
            e_mine = rec.get("te_worst_vs_fp32", [float("nan")])[0]
            e_te = worst_of(rec.get("te_pt_check", {}).get("te_pt"))
        mine = ("%s (%s)" % (fmt_ms(s["te_mlir_ms"]), PEER_NAMES[s["te_mlir"]])
                if "te_mlir" in s else "—")
        best = ("%s %s (%.0f%%)" % (PEER_NAMES[s["best_peer"]], fmt_ms(s["best_peer_ms"]),
                                    s["best_peer_spread_pct"]) if "best_peer" in s else "—")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            rec["case"] if rec["case"] != last else "", r + (" cached weights" if cached else ""),
            mine, "%.0f%%" % s["te_mlir_spread_pct"] if "te_mlir" in s else "—",
            fmt_ms(pm.get(te_k)), fmt_ms(pm.get(teg_k)), *torch_cols, best,
            "%s / %s" % tuple("—" if v != v else "%.3f" % v for v in (e_mine, e_te)),
            "**%.2fx**" % s["ratio"] if "ratio" in s else "—"))
        last = rec["case"]
    return "\n".join(lines) + "\n"


def print_peer_summary(results):
    print("\nPEERS (ms; ratio = best peer / te-mlir best of step and graph, > 1: te-mlir faster)")
    print("%-30s %-20s %-22s %-34s %7s  %s" % ("case", "recipe", "te-mlir (spread)",
                                               "best peer (spread)", "ratio", "all peers"))
    for rec, g, s in peer_rows(results):
        mine = ("%s %s (%.0f%%)" % (PEER_NAMES[s["te_mlir"]], fmt_ms(s["te_mlir_ms"]),
                                    s["te_mlir_spread_pct"]) if "te_mlir" in s else "-")
        best = ("%s %s (%.0f%%)" % (PEER_NAMES[s["best_peer"]], fmt_ms(s["best_peer_ms"]),
                                    s["best_peer_spread_pct"]) if "best_peer" in s else "-")
        print("%-30s %-20s %-22s %-34s %7s  %s" % (
            rec["case"], rec.get("recipe", "bf16") + (" cached" if g == "cached" else ""), mine,
            best, "%.2fx" % s["ratio"] if "ratio" in s else "-",
            " ".join("%s=%s" % (PEER_NAMES[k], fmt_ms(v)) for k, v in s["peers_ms"].items())))


# --------------------------------------------------------------------------- main


def find_libs(lib_dir, sel, recipes):
    """{case: {recipe: path}} from <case>.so (bf16) and <case>.<recipe>.so, smallest first;
    a weight-cache library <case>.<recipe>.wc.so under the key "wc:<recipe>"."""
    libs = {}
    for path in sorted(glob.glob(os.path.join(lib_dir, "*.so"))):
        base = os.path.basename(path)[:-3]
        parts = base.split(".")
        case, recipe = parts[0], (parts[1] if len(parts) > 1 else "bf16")
        wc = parts[2:] == ["wc"]  # <case>.<recipe>.wc.so: the weight-cache library
        if len(parts) > 2 and not wc:
            print("skipping %s: not a case library name" % path, flush=True)
            continue
        try:
            parse_case(case)
        except ValueError:
            print("skipping %s: not a case library name" % path, flush=True)
            continue
        if recipe not in RECIPES:
            print("skipping %s: unknown recipe %s" % (path, recipe), flush=True)
            continue
        if (sel and not any(s in case for s in sel)) or recipe not in recipes:
            continue
        libs.setdefault(case, {})[("wc:" if wc else "") + recipe] = path
    return dict(sorted(libs.items(), key=lambda kv: (parse_case(kv[0])[1:], kv[0])))


def summary(results):
    def ms(r, k):
        return r[k]["ms"] if k in r else float("nan")

    print("\n%-30s %-11s %9s %9s %9s %9s %7s %7s %7s %7s %7s %7s %7s  %s" % (
        "case", "recipe", "te ms", "graph ms", "eager ms", "comp ms", "vs eag", "vs comp",
        "g v eag", "g v cmp", "vs bf16", "te TF/s", "g TF/s", "check"))
    for r in results:
        if r.get("what") != "case":
            continue
        rc = r.get("recipe", "bf16")
        if "te" not in r and "te_graph" not in r:
            print("%-30s %-11s ERROR %s" % (r["case"], rc, (r.get("error") or "no timing")[:150]))
            continue
        g = r.get("te_graph_error") or r.get("te_graph_skipped")
        print("%-30s %-11s %9.4f %9.4f %9.4f %9.4f %7.3f %7.3f %7.3f %7.3f %7.3f %7.1f %7.1f  %s%s" % (
            r["case"], rc, ms(r, "te"), ms(r, "te_graph"), ms(r, "eager"), ms(r, "compile"),
            r.get("speedup_vs_eager", float("nan")), r.get("speedup_vs_compile", float("nan")),
            r.get("graph_speedup_vs_eager", float("nan")),
            r.get("graph_speedup_vs_compile", float("nan")),
            r.get("speedup_vs_te_bf16", float("nan")), r.get("te_tflops", float("nan")),
            r.get("te_graph_tflops", float("nan")), "PASS" if r.get("check_pass") else "FAIL",
            ("  graph: " + g[:80]) if g else ""))


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib-dir", default=os.path.join(root, "bench", "build"))
    ap.add_argument("--runtime", default=os.path.join(root, "build-rt-cuda", "lib",
                                                      "libte_runtime.so"))
    ap.add_argument("--cases", default="", help="comma-separated substrings to select cases")
    ap.add_argument("--recipes", default=",".join(RECIPES),
                    help="comma-separated recipes to run (default: %(default)s)")
    ap.add_argument("--graph", default="both", choices=["both", "off", "only"],
                    help="te-mlir as a CUDA graph too (both), not (off), or only the graph "
                         "(the normal step still runs for the checks); skipped with a note "
                         "on cpu")
    ap.add_argument("--graph-state", default="advance",
                    choices=["advance", "pingpong", "frozen"],
                    help="fp8-delayed's recipe state in the CUDA graph: advance (default; "
                         "the graph copies each new state buffer over the old after the "
                         "step, a copy node per buffer, as a caller keeping its state in "
                         "one place does), pingpong (two graphs, state A -> B and B -> A, "
                         "launched in turn: the state advances without copies) or frozen "
                         "(no copies: every replay reads the state as it was at capture)")
    ap.add_argument("--fp8-tol", type=float, default=FP8_TOL,
                    help="FP8 libraries fail (and are not timed) when ||te - fp32|| / ||fp32|| "
                         "of the output or any gradient exceeds this (default %(default)s)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--te", default="auto", choices=["auto", "on", "off"],
                    help="TransformerEngine (transformer_engine.pytorch) as a same-run peer: "
                         "auto (if it imports; the JSON records whether and its version), on "
                         "(exit if it does not import), off")
    ap.add_argument("--te-graph-max-tokens", type=int, default=4096,
                    help="TE + CUDA graph (make_graphed_callables) for cases with at most "
                         "this many tokens (default %(default)s)")
    ap.add_argument("--no-extras", action="store_true", help="skip copy BW and norm kernels")
    ap.add_argument("--dump", metavar="DIR",
                    help="save every result of each library's checked step (and of the "
                         "weight cache's later microbatch) to DIR/<library>.pt, to compare "
                         "runtimes bit for bit")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-rep-s", type=float, default=0.2,
                    help="each repetition runs back-to-back steps for at least this long")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "bench.json"))
    args = ap.parse_args()
    dev = args.device
    recipes = [r for r in args.recipes.split(",") if r]
    for r in recipes:
        if r not in RECIPES:
            ap.error("unknown recipe %s (choose from %s)" % (r, ", ".join(RECIPES)))
    results = []
    env = dict(what="env", torch=torch.__version__, torch_cuda=torch.version.cuda,
               python=sys.version.split()[0], date=time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    if dev == "cuda":
        p = torch.cuda.get_device_properties(0)
        env.update(gpu=torch.cuda.get_device_name(0), sms=p.multi_processor_count,
                   mem_gib=round(p.total_memory / 2 ** 30, 1))
        try:
            env["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                 "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception as ex:
            env["nvidia_smi"] = repr(ex)
    torch.manual_seed(0)
    rt = Runtime(args.runtime, dev)
    env["te_rt_version"] = rt.version
    env["te_rt_graphs"] = True  # the runtime's ABI has CUDA graphs (te_rt_capture_begin)
    env["graph_mode"] = args.graph
    env["fp8_tol"] = args.fp8_tol
    env["reps"] = args.reps
    env["device"] = dev
    TE, env["te_pytorch"] = load_te(args.te, dev)
    print("TransformerEngine peer: " + ("transformer_engine %s (%s)" % (
        env["te_pytorch"]["version"], env["te_pytorch"]["path"]) if TE else
        "skipped: " + env["te_pytorch"]["reason"]), flush=True)
    if args.graph != "off" and rt.graph_skip_reason():
        env["graph_note"] = "graph timing skipped: " + rt.graph_skip_reason()
    emit(env, results)
    if "graph_note" in env:
        print("NOTE: " + env["graph_note"], flush=True)

    if dev == "cuda" and not args.no_extras:
        try:
            args.copy_tb_s = copy_bandwidth(results, dev)
        except Exception:
            traceback.print_exc()

    sel = [s for s in args.cases.split(",") if s]
    for name, libs in find_libs(args.lib_dir, sel, recipes).items():
        try:
            run_case(name, libs, rt, dev, args, results, TE)
        except Exception as ex:
            traceback.print_exc()
            emit(dict(what="case", case=name, error=repr(ex)[:1000]), results)
        if dev == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)

    if dev == "cuda" and not args.no_extras:
        norm_kernels(rt, results, dev, args.reps, min(args.min_rep_s, 0.05))
    peers = dict(what="peer_summary", rows=[
        dict(case=rec["case"], recipe=rec.get("recipe", "bf16"), group=g, **s)
        for rec, g, s in peer_rows(results)])
    results.append(peers)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    md = os.path.splitext(args.out)[0] + ".md"
    with open(md, "w") as f:
        f.write(peer_table(results, env))
    summary(results)
    print_peer_summary(results)
    print("\nwrote %s and %s" % (args.out, md), flush=True)


if __name__ == "__main__":
    main()
