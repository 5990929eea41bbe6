#!/usr/bin/env python3
"""Training-step benchmark: te-compile'd libraries vs PyTorch eager and torch.compile.

One Python process. For every case library in --lib-dir (built by bench/compile_cases.sh
from bench/cases/<case>.mlir with `te-compile --train`):

  * loads libte_runtime.so (RTLD_GLOBAL) and the case library with ctypes, creates one
    te_rt context (CUDA backend), reads te_module_info() and feeds <fn>_bwd from <fn>_fwd
    exactly as tools/te-run --step does (te.alias input:N/output:N, te.saved names,
    te.grad_of output:N);
  * builds the same step in PyTorch (F.layer_norm / F.rms_norm, F.linear, tanh GELU or
    SwiGLU, torch.autograd.grad), eager and torch.compile(default mode), on the SAME
    seeded bf16 tensors and the same output gradient;
  * checks te-mlir's output and every gradient against eager (max|a-b|/max|b|) and both
    against an fp32 reference (||a-ref||/||ref||);
  * times a full step (fwd + bwd) of each engine by wall clock between device
    synchronizations (te_rt_synchronize + torch.cuda.synchronize), median of --reps
    repetitions of N back-to-back steps after warm-up. te-mlir runs on its own
    non-blocking CUDA stream (lib/Runtime/Context.cpp), which is not exported, so CUDA
    events on torch's stream cannot time it; all engines use the same wall-clock method.

Also: device-to-device copy bandwidth (CUDA events), and te-mlir's norm kernels alone
(te_rt_norm_fwd / te_rt_norm_bwd through the C ABI) next to torch's.

Prints one JSON line per measurement and writes everything to --out.
`--device cpu --no-compile` runs the same flow on the runtime's cpu backend (for a syntax
and plumbing check on a machine without a GPU, with tiny case libraries).
"""
import argparse
import ctypes
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

EPS = 1e-5
TOL = 5e-2  # bf16 tolerance on max|te - eager| / max|eager|

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
    def __init__(self, path, backend):
        try:
            self.lib = ctypes.CDLL(os.path.abspath(path), mode=ctypes.RTLD_GLOBAL)
        except OSError as ex:
            # libte_runtime.so's runpath is /usr/local/cuda/lib; fall back to the CUDA 13
            # libraries of torch's nvidia wheels (same sonames) if that is not there.
            print("loading the runtime failed (%s); preloading torch's CUDA libraries" % ex,
                  flush=True)
            for so in ("libcudart.so.13", "libcublasLt.so.13"):
                for d in [os.path.join(p, "nvidia", sub, "lib") for p in sys.path if p
                          for sub in ("cu13", "cuda_runtime", "cublas")] + ["/usr/local/cuda/lib64"]:
                    if os.path.exists(os.path.join(d, so)):
                        ctypes.CDLL(os.path.join(d, so), mode=ctypes.RTLD_GLOBAL)
                        break
            self.lib = ctypes.CDLL(os.path.abspath(path), mode=ctypes.RTLD_GLOBAL)
        L = self.lib
        L.te_rt_version.restype = ctypes.c_char_p
        L.te_rt_last_error.restype = ctypes.c_char_p
        L.te_rt_context_create.restype = ctypes.c_void_p
        L.te_rt_context_create.argtypes = [ctypes.c_int32]
        L.te_rt_context_destroy.argtypes = [ctypes.c_void_p]
        L.te_rt_synchronize.argtypes = [ctypes.c_void_p]
        L.te_rt_synchronize.restype = ctypes.c_int32
        vp, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
        L.te_rt_norm_fwd.argtypes = [vp, i32, i32, vp, vp, vp, ctypes.c_double, i32, i64, i64, vp,
                                     vp, vp]
        L.te_rt_norm_fwd.restype = i32
        L.te_rt_norm_bwd.argtypes = [vp, i32, i32, vp, vp, vp, vp, vp, i32, i64, i64, vp, vp, vp]
        L.te_rt_norm_bwd.restype = i32
        self.ctx = L.te_rt_context_create(backend)
        if not self.ctx:
            raise RuntimeError("te_rt_context_create: " + self.error())
        self.cuda = backend == 1

    def error(self):
        e = self.lib.te_rt_last_error()
        return e.decode() if e else "(no error text)"

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} returned {rc}: {self.error()}")

    def sync(self):
        self.check(self.lib.te_rt_synchronize(self.ctx), "te_rt_synchronize")
        if self.cuda:
            torch.cuda.synchronize()

    def close(self):
        if self.ctx:
            self.lib.te_rt_context_destroy(self.ctx)
            self.ctx = None


def ptrs(tensors):
    arr = (ctypes.c_void_p * max(1, len(tensors)))()
    for i, t in enumerate(tensors):
        arr[i] = t.data_ptr()
    return arr


def check_tensor(t, spec, what):
    if t.dtype != DTYPES[spec["dtype"]] or list(t.shape) != list(spec["shape"]):
        raise RuntimeError(f"{what}: have {t.dtype} {list(t.shape)}, entry wants "
                           f"{spec['dtype']} {spec['shape']}")
    if not t.is_contiguous():
        raise RuntimeError(what + ": not contiguous")


class TEStep:
    """A training step of a te-compile --train library: <fn>_fwd then <fn>_bwd."""

    def __init__(self, rt, path, inputs, dys, dev):
        self.rt = rt
        self.lib = ctypes.CDLL(os.path.abspath(path))
        self.lib.te_module_info.restype = ctypes.c_char_p
        self.info = json.loads(self.lib.te_module_info().decode())
        ents = {e["name"]: e for e in self.info["entries"]}
        fwd_name = next(n for n, e in ents.items() if "te.forward_of" in e)
        fwd = ents[fwd_name]
        bwd = next(e for e in ents.values() if e.get("te.backward_of") == fwd["te.forward_of"])
        for e in (fwd, bwd):
            if e["dims"]:
                raise RuntimeError(e["name"] + ": dynamic dims are not handled here")
        self.fwd_e, self.bwd_e = fwd, bwd
        self.arena = {"fwd": fwd.get("arena_bytes"), "bwd": bwd.get("arena_bytes")}
        for i, (t, spec) in enumerate(zip(inputs, fwd["args"], strict=True)):
            check_tensor(t, spec, f"{fwd['name']} arg {i}")
        # forward results: the module's outputs first, then the saved bundle
        self.fwd_out = [torch.empty(s["shape"], dtype=DTYPES[s["dtype"]], device=dev)
                        for s in fwd["results"]]
        outputs = [t for t, s in zip(self.fwd_out, fwd["results"]) if "te.saved" not in s]
        saved = {s["te.saved"]: t for t, s in zip(self.fwd_out, fwd["results"]) if "te.saved" in s}
        bargs, self.feed = [], []
        for i, a in enumerate(bwd["args"]):
            if "te.alias" in a:
                kind, k = a["te.alias"].split(":")
                t = (inputs if kind == "input" else outputs)[int(k)]
                how = a["te.alias"]
            elif "te.saved" in a:
                t, how = saved[a["te.saved"]], "saved " + a["te.saved"]
            elif "te.grad_of" in a:
                kind, k = a["te.grad_of"].split(":")
                assert kind == "output", a
                t, how = dys[int(k)], "grad_of " + a["te.grad_of"]
            else:
                raise RuntimeError(f"{bwd['name']} arg {i}: cannot feed {a}")
            check_tensor(t, a, f"{bwd['name']} arg {i} ({how})")
            bargs.append(t)
            self.feed.append(how)
        self.bwd_out = [torch.empty(s["shape"], dtype=DTYPES[s["dtype"]], device=dev)
                        for s in bwd["results"]]
        # te.grad_of input:N of each backward result
        self.grad_index = [int(s["te.grad_of"].split(":")[1]) for s in bwd["results"]]
        self.outputs = outputs
        self._keep = (inputs, dys, bargs)
        self.fa, self.fr = ptrs(inputs), ptrs(self.fwd_out)
        self.ba, self.br = ptrs(bargs), ptrs(self.bwd_out)
        self.f = getattr(self.lib, fwd["symbol"])
        self.b = getattr(self.lib, bwd["symbol"])
        for f in (self.f, self.b):
            f.restype = ctypes.c_int32
            f.argtypes = [ctypes.c_void_p] * 4
        self.ctx = rt.ctx

    def __call__(self):
        rc = self.f(self.ctx, self.fa, self.fr, None)
        if rc:
            self.rt.check(rc, self.fwd_e["symbol"])
        rc = self.b(self.ctx, self.ba, self.br, None)
        if rc:
            self.rt.check(rc, self.bwd_e["symbol"])

    def grads(self, n_inputs):
        g = [None] * n_inputs
        for t, k in zip(self.bwd_out, self.grad_index):
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


# --------------------------------------------------------------------------- one case


def run_case(name, path, rt, dev, args, results):
    kind, M, H, F_ = parse_case(name)
    fn, inputs, names, dy, flops = make_inputs(kind, M, H, F_, dev)
    sync_t = (lambda: torch.cuda.synchronize()) if dev == "cuda" else (lambda: None)
    rec = dict(case=name, kind=kind, M=M, H=H, F=F_, gemm_tflop=flops / 1e12)

    # --- te-mlir: correctness run on poisoned buffers, then timing
    if dev == "cuda":
        torch.cuda.synchronize()
    te = TEStep(rt, path, inputs, [dy], dev)
    rec["te_arena_bytes"] = te.arena
    rec["te_bwd_feed"] = te.feed
    for t in te.fwd_out + te.bwd_out:
        t.fill_(float("nan"))  # every element must be written
    rt.sync()
    te()
    rt.sync()
    te_y = te.outputs[0].clone()
    te_g = [g.clone() if g is not None else None for g in te.grads(len(inputs))]

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

    checks = {}
    pairs = [("y", te_y, ey, y32)] + [("d" + n, te_g[i], eg[i], g32[i]) for i, n in enumerate(names)]
    ok = True
    for label, t, e, r in pairs:
        if t is None:
            checks[label] = "missing"
            ok = False
            continue
        c = dict(te_vs_eager_maxrel=max_rel(t, e), te_vs_fp32=norm_rel(t, r),
                 eager_vs_fp32=norm_rel(e, r))
        checks[label] = c
        if not (c["te_vs_eager_maxrel"] <= TOL):  # NaN fails too
            ok = False
    rec["check"] = checks
    rec["check_pass"] = ok
    del y32, g32
    emit(dict(rec, what="check"), results)

    # --- timings
    t_te = time_step(te, rt.sync, args.reps, args.min_rep_s)
    # A second correctness pass after the timing loop: the buffers were reused many times.
    te_y2 = te.outputs[0]
    rec["te_rerun_identical"] = bool(torch.equal(te_y2, te_y))
    rec["te"] = t_te
    emit(dict(case=name, engine="te-mlir", **t_te, tflops=flops / t_te["ms"] / 1e9), results)
    del te_y, te_g

    t_eager = time_step(lambda: torch_step(fn), sync_t, args.reps, args.min_rep_s)
    rec["eager"] = t_eager
    emit(dict(case=name, engine="eager", **t_eager, tflops=flops / t_eager["ms"] / 1e9), results)

    if not args.no_compile:
        try:
            torch._dynamo.reset()
            cf = torch.compile(fn, dynamic=False)
            t0 = time.time()
            cy, cg = torch_step(cf)
            rec["compile_s"] = time.time() - t0
            rec["compile_vs_eager_y_maxrel"] = max_rel(cy.detach(), ey)
            rec["compile_vs_eager_dx_maxrel"] = max_rel(cg[0].detach(), eg[0])
            del cy, cg
            t_c = time_step(lambda: torch_step(cf), sync_t, args.reps, args.min_rep_s)
            rec["compile"] = t_c
            emit(dict(case=name, engine="compile", **t_c, tflops=flops / t_c["ms"] / 1e9), results)
        except Exception as ex:  # keep going: report the failure
            rec["compile_error"] = repr(ex)[:500]
            traceback.print_exc()
    for eng in ("te", "eager", "compile"):
        if eng in rec:
            rec[eng + "_tflops"] = flops / rec[eng]["ms"] / 1e9
    if "te" in rec:
        rec["speedup_vs_eager"] = rec["eager"]["ms"] / rec["te"]["ms"]
        if "compile" in rec:
            rec["speedup_vs_compile"] = rec["compile"]["ms"] / rec["te"]["ms"]
    emit(dict(rec, what="case"), results)
    del te, leaves, ey, eg, inputs, dy


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
                    rt.check(L.te_rt_norm_fwd(rt.ctx, kind, 1, P(x), P(gamma), P(beta), EPS, 0,
                                              rows, cols, P(z), P(mu), P(rs)), "te_rt_norm_fwd")

                def bwd():
                    rt.check(L.te_rt_norm_bwd(rt.ctx, kind, 1, P(dz), P(x), P(mu), P(rs),
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


# --------------------------------------------------------------------------- main


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib-dir", default=os.path.join(root, "bench", "build"))
    ap.add_argument("--runtime", default=os.path.join(root, "build-rt-cuda", "lib",
                                                      "libte_runtime.so"))
    ap.add_argument("--cases", default="", help="comma-separated substrings to select cases")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-extras", action="store_true", help="skip copy BW and norm kernels")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-rep-s", type=float, default=0.2,
                    help="each repetition runs back-to-back steps for at least this long")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "bench.json"))
    args = ap.parse_args()
    dev = args.device
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
    rt = Runtime(args.runtime, 1 if dev == "cuda" else 0)
    env["te_rt_version"] = rt.lib.te_rt_version().decode()
    emit(env, results)

    if dev == "cuda" and not args.no_extras:
        try:
            copy_bandwidth(results, dev)
        except Exception:
            traceback.print_exc()

    libs = sorted(glob.glob(os.path.join(args.lib_dir, "*.so")),
                  key=lambda p: (parse_case(os.path.basename(p)[:-3])[1:], p)
                  if re.match(r".*_\d+x\d+x\d+\.so$", p) else ((0, 0, 0), p))
    sel = [s for s in args.cases.split(",") if s]
    for path in libs:
        name = os.path.basename(path)[:-3]
        if sel and not any(s in name for s in sel):
            continue
        try:
            run_case(name, path, rt, dev, args, results)
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
    rt.close()
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)

    # summary table
    print("\n%-32s %10s %10s %10s %8s %8s %8s %8s %8s  %s" % (
        "case", "te ms", "eager ms", "compile ms", "vs eag", "vs comp", "te TF/s", "eag TF/s",
        "cmp TF/s", "check"))
    for r in results:
        if r.get("what") != "case" or "te" not in r:
            if r.get("what") == "case" and "error" in r:
                print("%-32s ERROR %s" % (r["case"], r["error"][:120]))
            continue
        c = r.get("compile", {}).get("ms", float("nan"))
        print("%-32s %10.4f %10.4f %10.4f %8.3f %8.3f %8.1f %8.1f %8.1f  %s" % (
            r["case"], r["te"]["ms"], r["eager"]["ms"], c, r["speedup_vs_eager"],
            r.get("speedup_vs_compile", float("nan")), r["te_tflops"], r["eager_tflops"],
            r.get("compile_tflops", float("nan")), "PASS" if r["check_pass"] else "FAIL"))


if __name__ == "__main__":
    main()
