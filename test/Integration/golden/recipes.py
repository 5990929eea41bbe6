"""TransformerEngine's quantization recipes emulated in PyTorch: what te-mlir computes for
one training step of a LayerNormLinear / LayerNormMLP under a recipe (fp8_step), from its
quantizers (qdq, qdq_block, qdq_mx, qdq_nvfp4) and the delayed-scaling state update, with
the self-checks that guard them; and the activations as PyTorch computes them.
make_goldens.py, beside it, writes the goldens of every recipe configuration with it.

The recipes (a recipe configuration of make_goldens.py: Config.recipe set; FP8_CONFIGS there)
---------------------------------------------------------------------------------------------
Per-tensor FP8 recipes of TransformerEngine with the HYBRID format (E4M3 for forward
tensors, E5M2 for gradients): "fp8-current" (Float8CurrentScaling, power_2_scales off) and
"fp8-delayed" (DelayedScaling: amax_history_len 1024, amax_compute_algo "max", margin 0);
and the block-scaled "fp8-block" (Float8BlockScaling) and "mxfp8" (MXFP8BlockScaling),
below.
Each is a variant of a static base configuration (Config.base) with the same module,
shapes, seed and data (named <base>_<recipe> unless fp8_variant is given a name): model.mlir is the same torch-mlir export (the recipe is a
te-compile option, config.json "recipe", passed to `te-compile --recipe`, with
`--arch sm_100a` where config.json "arch" is "blackwell" (mxfp8)), args/ and
grads_in/ are the base case's, and expected/ holds what te-mlir computes under the recipe,
given by a PyTorch emulation (fp8_step), NOT by autograd.  The emulation
(T = the activation dtype; round_T = cast to T, round-to-nearest-even; math in fp32):

    fp8(v, fmt)      clamp v to [-max, max] (NaN stays NaN; E4M3 max 448, E5M2 57344),
                     then round to nearest even into torch.float8_e4m3fn / float8_e5m2
    qdq(t, fmt, s)   fp8(t.float() * s).float() * fp32(1 / s)
    scale s          current: fp8_max / amax (fp32), amax = max|t| of the stored values,
                     1 when amax is 0 or not finite, FLT_MAX when the quotient is inf;
                     delayed (first step from TE's initial state): 1
    forward          z = round_T(norm(x)) (fp32 norm, section 8.1/8.2);
                     zq = qdq(z, E4M3), wq = qdq(W, E4M3) for every weight;
                     LayerNormMLP: fc1 = round_T(zq @ w1q^T + b1),
                     a = round_T(act(fc1.float())), aq = qdq(a, E4M3),
                     y = round_T(aq @ w2q^T + b2);  LayerNormLinear: y = round_T(zq @ wq^T + b)
    backward         dyq = qdq(dy, E5M2);  LayerNormMLP: dact = round_T(dyq @ w2q),
                     dW2 = round_T(dyq^T @ aq), db2 = round_T(sum_rows dy),
                     dfc1 = round_T(act'(fc1) * dact) (fp32 autograd of the activation),
                     db1 = round_T(sum_rows dfc1), dfc1q = qdq(dfc1, E5M2),
                     dz = round_T(dfc1q @ w1q), dW1 = round_T(dfc1q^T @ zq);
                     LayerNormLinear: dz = round_T(dyq @ wq), dW = round_T(dyq^T @ zq),
                     db = round_T(sum_rows dy);  then the norm backward of dz (fp32,
                     section 8.1/8.2, from x, mu, rsigma, gamma), each result rounded to T.
Every GEMM is the fp32 GEMM of the dequantized operands (bias added in fp32, the result
rounded once); a weight's columnwise copy has the same bytes as its rowwise one, so dgrad
uses the same wq.  With current scaling every qdq computes its scale from its own tensor.
Delayed scaling also updates its recipe state, which te-run writes as extra outputs, so a
delayed case also has
    expected/fwd/state.<module>_0.amax_history_fwd.npy  [1024, 3*GEMMs] f32
    expected/fwd/state.<module>_0.scales_fwd.npy        [3*GEMMs] f32
    expected/bwd/state.<module>_0.amax_history_bwd.npy  [1024, 2*GEMMs] f32
    expected/bwd/state.<module>_0.scales_bwd.npy        [2*GEMMs] f32
(names: "state." + the te.state name).

Float8BlockScaling ("fp8-block", TE's DeepSeek-style recipe; reference sections 4.4, 8.4,
9) with TE's defaults: E4M3 for every tensor, gradients included; power-of-2 scales;
x_block_scaling_dim 1, w_block_scaling_dim 2, grad_block_scaling_dim 1 (1x128 blocks for
the norm output z, the activation a and the gradients dy, dfc1; 128x128 blocks for the
weights); every GEMM split-accumulated, so again the fp32 GEMM of the dequantized
operands.  Stateless.  On the 2-D view [M, K] of a tensor (fp32):

    qdq_block(t, 1-D rowwise)     per row i and 128-column block (the last may be
                                  partial): amax = max|t[i, block]|
    qdq_block(t, 1-D columnwise)  per column j and 128-row block: amax over t[block, j]
                                  (the 1x128 blocks of t^T; an independent quantization,
                                  not the transpose of the rowwise one)
    qdq_block(t, 2-D)             per 128x128 block (rowwise = columnwise)
    scale s (per block)           448 / amax (fp32; 1 when amax is 0 or not finite,
                                  FLT_MAX when the quotient is inf), then rounded down to
                                  a power of 2 by masking the mantissa bits (TE's
                                  compute_scale_from_amax: scale_bits &= 0xFF800000)
    element                       fp8(t * s, E4M3).float() * fp32(1 / s)
    forward                       as above with zq = qdq_block(z, 1-D rowwise),
                                  wq = qdq_block(W, 2-D), aq = qdq_block(a, 1-D rowwise)
    backward                      the GEMMs read the usage TE's general_gemm picks
                                  (section 0.1: dgrad dy.row x W.col, wgrad dy.col x x.col):
                                  dyq = qdq_block(dy, 1-D rowwise) for dgrad,
                                  dyq_c = qdq_block(dy, 1-D columnwise) for wgrad, likewise
                                  dfc1q / dfc1q_c, zq_c = qdq_block(z, 1-D columnwise),
                                  aq_c = qdq_block(a, 1-D columnwise); LayerNormMLP:
                                  dact = round_T(dyq @ w2q), dW2 = round_T(dyq_c^T @ aq_c),
                                  dz = round_T(dfc1q @ w1q), dW1 = round_T(dfc1q_c^T @ zq_c);
                                  LayerNormLinear: dz = round_T(dyq @ wq),
                                  dW = round_T(dyq_c^T @ zq_c); bias gradients, dfc1 and the
                                  norm backward as above (the weights' 2-D blocks make
                                  W.col = W.row)

MXFP8BlockScaling ("mxfp8"; reference sections 4.3, 0.1, 8.4, 9) with TE's defaults:
E4M3 for every tensor, gradients included; one E8M0 (power-of-2) scale per 32 consecutive
elements; no 2-D blocks (weights are blocked like every other tensor); stateless.  MXFP8
GEMMs are a Blackwell feature: config.json "arch" is "blackwell" (te-compile --arch
sm_100a).  On the 2-D view [M, K] (M, K multiples of 32), bit for bit the runtime's
quantizeMXFP8Rowwise / quantizeMXFP8Columnwise (lib/Runtime/cpu/Quantize.cpp):

    qdq_mx(t, rowwise)            per row i and 32-column block (1x32): amax = max|t[i, b]|
    qdq_mx(t, columnwise)         per column j and 32-row block (32x1): amax over t[b, j];
                                  an independent quantization of the high-precision values
    amax                          fp32, NaN elements ignored (the runtime's std::max loop)
    E8M0 exponent e (per block)   q = fp32(amax / 448) (round to nearest); e = the biased
                                  exponent of the smallest power of two >= q, from q's bits
                                  (floatToE8M0RoundUp, cvt.rp.satfinite.ue8m0): normal q its
                                  exponent field, +1 if its mantissa is not zero, at most
                                  254; q <= 2^-127 (zero included) 0, subnormal q above
                                  2^-127 1; i.e. clamp(ceil(log2 q) + 127, 0, 254)
    element                       fp8(t * 2^(127 - e), E4M3).float() * 2^(e - 127) (both
                                  factors exact fp32 powers of two, products in fp32)
    forward                       zq = qdq_mx(z, rowwise), wq = qdq_mx(W, rowwise),
                                  aq = qdq_mx(a, rowwise)
    backward                      as fp8-block's with qdq_mx: dgrad reads dy / dfc1 rowwise
                                  and the weight COLUMNWISE, wq_c = qdq_mx(W, columnwise),
                                  which differs from wq; LayerNormMLP
                                  dact = round_T(dyq @ w2q_c),
                                  dW2 = round_T(dyq_c^T @ aq_c),
                                  dz = round_T(dfc1q @ w1q_c),
                                  dW1 = round_T(dfc1q_c^T @ zq_c);
                                  LayerNormLinear dz = round_T(dyq @ wq_c),
                                  dW = round_T(dyq_c^T @ zq_c); bias gradients (from the
                                  unquantized tensors), dfc1 and the norm backward as above
Note: E4M3 rounding commutes with a power-of-2 scaling except in E4M3's subnormal range
(below 2^-6), and fp8-block and mxfp8 both scale a block's amax into (224, 448]; so the
two recipes, and W.row / W.col, give the same dequantized value for every element whose
magnitude is at least 2^-6 / 224 (~2^-13.8) times the amax of each block it is in.  On
the h128 cases' Gaussian-like data the mxfp8 goldens therefore equal the fp8-block ones
(ln_linear_f32: byte-identical; ln_mlp_gelu_bf16: 8 elements one bf16 ulp apart).
ln_linear_f32_mxfp8_spread separates them: its parameters spread magnitudes over the
32-column blocks of the hidden dim (spread_params: gamma and beta of column j times
2^-8*((j // 32) % 4), the weight's column j divided by it; the same function of x), so
each 128 columns of the norm output span 2^24 and the weight's the other way; the
fp8-block emulation misses its forward by ~74% and its input gradient by ~54% in norm
(checked when the golden is made), and run_goldens.sh holds te-mlir to 1e-2.
fp8_step implements all three families: its quantizer returns a (rowwise, columnwise)
pair, the same tensor twice for the per-tensor recipes and for 2-D-blocked weights, two
independent quantizations for 1-D blocks and for every mxfp8 tensor.
config.json of an fp8-block case also has "block_len" (128), "block_scaling_dim"
({"x": 1, "weight": 2, "grad": 1}) and "power_2_scales" (true); of an mxfp8 case "arch"
("blackwell"), "block_len" (32), "block_scaling_dim" ({"x": 1, "weight": 1, "grad": 1}),
"power_2_scales" (true) and "scale_format" ("E8M0").
NVFP4BlockScaling ("nvfp4"; reference section 4.5) with TE's defaults, a Blackwell recipe
("arch": "blackwell"): E2M1 for every tensor, one E4M3 scale per 16 elements and an fp32
global amax per copy; weights in 16x16 tiles; the random Hadamard transform on the
columnwise (wgrad) copies of the norm output, the activation and the gradients; gradients
rounded stochastically.  TE's fp32 activations need the transform off: the f32 case
compiles with te-compile --recipe '#te.nvfp4<rht = false>'.  qdq_nvfp4 is the runtime's
te_rt_quantize_nvfp4 (lib/Runtime/cpu), bit for bit:

    copy                          rowwise: t [M, K], 1x16 blocks along rows; columnwise:
                                  t^T [K, M] (blocks run down t's columns), after rht_rows
                                  (each 16-chunk c -> c . M, M = H16 . diag(s) / 4,
                                  summed in fp32 in index order) when the copy is
                                  transformed; returned transposed back (in the transformed
                                  basis along M, which cancels in the wgrad GEMM)
    global                        A = max|copy|, S_enc = fp32(2688 / A) (1 for A = 0 or inf)
    block scale                   S_dec = e4m3((block amax * S_enc) / 6), per 1x16 block or
                                  16x16 tile
    element                       e2m1(v * (S_enc / S_dec)) (0 where S_dec is 0), nearest
                                  even (ties to the even code) or stochastic: up iff
                                  u < (|v| - lo) / (hi - lo), u = (r >> 8) * 2^-24, r =
                                  te_rt_nvfp4_random_bits(0, seed, copy, index): seeds in
                                  te-decompose's order (dy 0, LayerNormMLP's dfc1 1)
    dequantized                   e2m1 * S_dec * fp32(1 / S_enc) (the runtime's GEMM
                                  multiplies the fp32 sum of e2m1 * S_dec products by
                                  (1 / S_enc_a) * (1 / S_enc_b); the two differ by fp32
                                  rounding only)
    forward / backward            as mxfp8's with qdq_nvfp4 (weights: W.col = W.row)
config.json of an nvfp4 case also has "block_len" (16), "weight_block_2d", "rht",
"stochastic_rounding", "stochastic_rounding_seeds" and "context_seed" (0).  Tolerances:
TE's quantization_tols for NVFP4 = dtype_tols(e2m1) (atol 0.125, rtol 0.25).
Delayed-scaling state slots (TE section 0.2): forward LayerNormMLP
[fc1 input z, fc1 weight, fc1 output, fc2 input a, fc2 weight, fc2 output], LayerNormLinear
[input z, weight, output]; backward LayerNormMLP [fc1 grad output dfc1, fc1 grad input,
fc2 grad output dy, fc2 grad input], LayerNormLinear [grad output dy, grad input].  The
step's amax of a slot is max|t| of its tensor (unused slots 0); the new history is zero
except its last row = the amaxes (TE rolls row 0 to the end); the new scale is
fp8_max / amax (448 forward, 57344 backward) where amax is finite and > 0, else the old 1.
Tolerances: fwd/bwd atol = max(module dtype's, 0.0675), rtol = max(module dtype's, 0.125)
(TE's quantization_tols for FP8, section 7.2).  Self-checks guard the emulation (a
failure fails the run):
  - fp8_cast agrees with ml_dtypes' float8_e4m3fn / float8_e5m2 (after the same clamp) on
    edge values, exact ties and seeded random values (check_fp8_cast);
  - (fp8-block) qdq_block agrees bit for bit with a direct per-block loop (numpy,
    ml_dtypes, the power-of-2 scale from math.frexp) in all three block layouts, on values
    with partial blocks, zero blocks, magnitudes 1e-30..1e30 and an amax whose 448 / amax
    overflows (check_qdq_block);
  - (mxfp8) qdq_mx and its E8M0 exponents agree bit for bit with a direct per-block loop
    (numpy, ml_dtypes, the exponent from math.frexp), rowwise and columnwise, on blocks
    that are zero, hold signed zeros, have amax / 448 subnormal or at / next to 2^-127,
    2^-126 and other powers of two, hold exact E4M3 ties, FLT_MAX, inf or a NaN, and spread
    over 2^-24..1 of their amax so that E4M3 subnormals occur (check_qdq_mx; it also
    matches the runtime's C++ functions, checked when it was written);
  - (nvfp4) e2m1_nearest agrees with ml_dtypes' float4_e2m1fn; the Hadamard matrix is
    orthogonal; stochastic rounding keeps grid values, moves only to a neighbour and
    rounds p = 0.25 up 25% +- 1% of the time; qdq_nvfp4 agrees bit for bit with a direct
    per-block loop, 1-D, 2-D and stochastic (check_nvfp4);
  - with quantization switched off, the emulation reproduces the base case's autograd
    goldens within the module dtype's tolerances (its GEMM layouts, activation and norm
    backward, bias gradients);
  - its FP8 forward output is close to the unquantized PyTorch forward: normwise,
    ||y_fp8 - y||_2 <= 0.125 ||y||_2 (the FP8 rtol).  The max |y_fp8 - y| and the number
    of elements outside the elementwise FP8 tolerances are printed but not checked: E4M3's
    3-bit mantissa puts ~4% relative noise on every GEMM product, so y's error is ~4% of
    the norm of its products (~0.04 rms here, 0.09-0.14 at worst), and a few elements
    with small |y| fall outside 0.0675 + 0.125 |y| (TE applies quantization_tols between
    two FP8 computations, never FP8 against high precision).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

EPS = 1e-5  # TransformerEngine's default eps for both norms
TORCH_DTYPE = {"f32": torch.float32, "bf16": torch.bfloat16}
CHECK_SEED = 1234  # the self-checks' data (TE's test_numerics seed)

# The activations te-import-torch raises, as PyTorch computes them (TE's names).
ACTIVATIONS: dict[str, Callable] = {
    "gelu": lambda t: F.gelu(t, approximate="tanh"),  # TE's "gelu" is the tanh form
    "gelu_erf": lambda t: F.gelu(t, approximate="none"),  # torch's default GELU
    "relu": F.relu,
    "silu": F.silu,
    "qgelu": lambda t: t * torch.sigmoid(1.702 * t),  # TE's quick GELU
    "srelu": lambda t: torch.relu(t) ** 2,  # TE's squared ReLU
}
# gated: fc1 has 2F outputs split [gate | up] -> act(gate) * up
GATED = {"swiglu": F.silu, "geglu": lambda t: F.gelu(t, approximate="tanh"),
         "glu": torch.sigmoid, "reglu": F.relu, "sreglu": lambda t: torch.relu(t) ** 2,
         "qgeglu": lambda t: t * torch.sigmoid(1.702 * t),
         "geglu_erf": lambda t: F.gelu(t, approximate="none")}  # not in TE (its GeGLU is tanh)

NVFP4_F32 = "#te.nvfp4<rht = false>"  # te-compile --recipe takes the attribute spelling
# (rht, stochastic rounding, 2-D weights) of the NVFP4 recipes
NVFP4_RECIPES = {"nvfp4": (True, True, True), NVFP4_F32: (False, True, True)}


# --------------------------------------------------------------------------------------
# FP8 emulation (per-tensor recipes, HYBRID format, Float8BlockScaling and
# MXFP8BlockScaling; see the module docstring)
# --------------------------------------------------------------------------------------

E4M3, E5M2 = "E4M3", "E5M2"
FP8_DTYPE = {E4M3: torch.float8_e4m3fn, E5M2: torch.float8_e5m2}
FP8_MAX = {E4M3: 448.0, E5M2: 57344.0}
FLT_MAX = float(torch.finfo(torch.float32).max)
AMAX_HISTORY_LEN = 1024   # DelayedScaling defaults: amax_history_len 1024, "max", margin 0
BLOCK_LEN = 128           # Float8BlockScaling: 1x128 (1-D) and 128x128 (2-D) blocks
MX_BLOCK_LEN = 32         # MXFP8BlockScaling: 1x32 (rowwise) and 32x1 (columnwise) blocks
# TE's quantization_tols for every FP8 scheme = dtype_tols(e4m3) (section 7.2)
FP8_ATOL, FP8_RTOL = 0.0675, 0.125
F32 = torch.float32


def f32(v: float) -> torch.Tensor:
    return torch.tensor(v, dtype=F32)


def fp8_cast(v: torch.Tensor, fmt: str) -> torch.Tensor:
    """fp32 -> float8 with saturation: clamp to [-max, max] (NaN stays NaN), then torch's
    round-to-nearest-even cast (which alone does not saturate E5M2: overflow gives inf)."""
    mx = FP8_MAX[fmt]
    return torch.where(torch.isnan(v), v, v.clamp(-mx, mx)).to(FP8_DTYPE[fmt])


def current_scale(amax: torch.Tensor, fmt: str) -> torch.Tensor:
    """Float8CurrentScaling's compute_scale_from_amax (eps 0, no power-of-2 rounding)."""
    a = float(amax)
    if a == 0.0 or not math.isfinite(a):
        return f32(1.0)
    s = f32(FP8_MAX[fmt]) / amax          # fp32 division, round to nearest
    return f32(FLT_MAX) if torch.isinf(s) else s


def qdq(t: torch.Tensor, fmt: str, scale: torch.Tensor) -> torch.Tensor:
    """Quantize-dequantize: fp8(t * scale) * fp32(1 / scale), products in fp32."""
    q = fp8_cast(t.float() * scale, fmt)
    return q.float() * (f32(1.0) / scale)


def pow2_floor(s: torch.Tensor) -> torch.Tensor:
    """2**floor(log2(s)) of positive normal fp32 values, exactly: TE's power-of-2 scale
    (compute_scale_from_amax masks the mantissa bits, scale_bits &= 0xFF800000)."""
    return (s.to(F32).view(torch.int32) & 0x7F800000).view(F32)


def block_scale(amax: torch.Tensor) -> torch.Tensor:
    """Float8BlockScaling's per-block scale (compute_scale_from_amax, E4M3, eps 0,
    power-of-2): 448 / amax in fp32, 1 where amax is 0 or not finite, FLT_MAX where the
    quotient is inf, then rounded down to a power of 2."""
    ok = torch.isfinite(amax) & (amax > 0)
    s = f32(FP8_MAX[E4M3]) / torch.where(ok, amax, f32(1.0))
    s = torch.where(torch.isinf(s), f32(FLT_MAX), s)
    return pow2_floor(torch.where(ok, s, f32(1.0)))


def qdq_block(t: torch.Tensor, block2d: bool, columnwise: bool) -> torch.Tensor:
    """Float8BlockScaling quantize-dequantize (E4M3) of the 2-D view [M, K] of t (leading
    dims flattened), result shaped like t, fp32.  1-D rowwise: one scale per row and
    128-column block (the last block may be partial); 1-D columnwise: one per column and
    128-row block (the 1x128 blocks of t^T, an independent quantization of the same
    values); 2-D: one per 128x128 block (rowwise = columnwise).  Each element:
    fp8(t * s).float() * fp32(1 / s), s = block_scale(max|t| over its block)."""
    v = t.float().reshape(-1, t.shape[-1])
    if columnwise and not block2d:
        v = v.T
    m, k = v.shape
    kb = -(-k // BLOCK_LEN)
    mb = -(-m // BLOCK_LEN) if block2d else m
    mp = mb * BLOCK_LEN if block2d else m
    pad = torch.zeros(mp, kb * BLOCK_LEN, dtype=F32)  # zeros do not change a block's amax
    pad[:m, :k] = v
    if block2d:
        blocks = pad.reshape(mb, BLOCK_LEN, kb, BLOCK_LEN)
        amax = blocks.abs().amax(dim=(1, 3), keepdim=True)
    else:
        blocks = pad.reshape(m, kb, BLOCK_LEN)
        amax = blocks.abs().amax(dim=2, keepdim=True)
    s = block_scale(amax)
    out = (fp8_cast(blocks * s, E4M3).float() * (f32(1.0) / s)).reshape(mp, -1)[:m, :k]
    if columnwise and not block2d:
        out = out.T
    return out.reshape(t.shape)


I32 = torch.int32


def e8m0_round_up(q: torch.Tensor) -> torch.Tensor:
    """fp32 -> E8M0 biased exponent (int32 tensor), rounding toward +inf and saturating,
    bit for bit floatToE8M0RoundUp (runtime-kernels/include/te_kernels/formats.h; the
    hardware's cvt.rp.satfinite.ue8m0): of |q|'s bits, a normal value gives its exponent
    field, plus 1 when its mantissa is not zero, at most 254 (inf included: 2^127); zero
    and fp32 subnormals give 1 above 2^-127 (bits 0x00400000) and 0 up to it (e = 0 is
    2^-127); NaN gives 255.  So for finite q: clamp(ceil(log2 q) + 127, 0, 254)."""
    a = q.to(F32).view(I32) & 0x7FFFFFFF
    biased = a >> 23
    e = torch.where(biased == 0, (a > 0x00400000).to(I32),
                    biased + ((a & 0x7FFFFF) != 0).to(I32)).clamp(max=254)
    return torch.where(a > 0x7F800000, torch.full_like(e, 255), e)


def pow2_f32(n: torch.Tensor) -> torch.Tensor:
    """2^n as fp32, exactly (from the bits), for int32 n in [-149, 127]: normal for n >= -126,
    else the subnormal 2^(n + 149) * 2^-149."""
    normal = (n.clamp(-126, 127) + 127) << 23
    sub = torch.ones_like(n) << (n.clamp(-149, -127) + 149)
    return torch.where(n >= -126, normal, sub).view(F32)


def qdq_mx(t: torch.Tensor, columnwise: bool) -> torch.Tensor:
    """MXFP8BlockScaling quantize-dequantize (E4M3) of the 2-D view [M, K] of t (leading
    dims flattened; M and K multiples of 32), result shaped like t, fp32; bit for bit the
    runtime's quantizeMXFP8Rowwise / quantizeMXFP8Columnwise + dequantize
    (lib/Runtime/cpu/Quantize.cpp).  Rowwise: one scale per row and 32-column block (1x32);
    columnwise: one per column and 32-row block (32x1), an independent quantization of the
    same values.  Per block: amax = max|t| (fp32; NaN elements ignored, as the runtime's
    std::max loop does), e = e8m0_round_up(fp32(amax / 448)) (the smallest power of two
    >= amax / 448); each element fp8_e4m3(t * 2^(127 - e)).float() * 2^(e - 127) (both
    factors exact powers of two, 2^(e - 127) NaN for e = 255; fp32 products)."""
    v = t.float().reshape(-1, t.shape[-1])
    if columnwise:
        v = v.T
    m, k = v.shape
    assert m % MX_BLOCK_LEN == 0 and k % MX_BLOCK_LEN == 0, ("MXFP8 needs dims % 32", t.shape)
    blocks = v.reshape(m, k // MX_BLOCK_LEN, MX_BLOCK_LEN)
    mag = blocks.abs()
    amax = torch.where(torch.isnan(mag), f32(0.0), mag).amax(dim=2, keepdim=True)
    e = e8m0_round_up(amax / f32(FP8_MAX[E4M3]))
    to_fp8 = pow2_f32(127 - e)
    scale_inv = torch.where(e == 255, f32(float("nan")), pow2_f32(e - 127))
    out = (fp8_cast(blocks * to_fp8, E4M3).float() * scale_inv).reshape(m, k)
    if columnwise:
        out = out.T
    return out.reshape(t.shape)


NV_BLOCK_LEN = 16            # NVFP4: 1x16 blocks (16x16 tiles for 2-D weights)
NV_S_ENC_NUM = 2688.0        # 6 * 448: E2M1 max times E4M3 max
# TE's quantization_tols for NVFP4 = dtype_tols(e2m1) (section 7.2)
FP4_ATOL, FP4_RTOL = 0.125, 0.25
E2M1_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
RHT_SIGNS = (1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1)


def rht_matrix() -> torch.Tensor:
    """NVFP4's 16x16 random Hadamard transform M = H16 . diag(s) / 4 (section 4.5; the
    runtime's te_rt_quantize_nvfp4): H[i][j] = (-1)^popcount(i & j), s = RHT_SIGNS.
    Orthogonal, entries +-1/4 (exact in fp32)."""
    m = [[(-1.0 if bin(i & j).count("1") % 2 else 1.0) * RHT_SIGNS[j] / 4 for j in range(16)]
         for i in range(16)]
    return torch.tensor(m, dtype=F32)


def rht_rows(v: torch.Tensor) -> torch.Tensor:
    """Every 16-element chunk c of v's rows (fp32 [R, C], C % 16 == 0) replaced by c . M,
    summed in fp32 in index order from 0 (the runtime's loop, bit for bit: each product
    c[i] * M[i][j] is exact)."""
    r, c = v.shape
    chunks = v.reshape(r, c // 16, 16)
    m = rht_matrix()
    acc = torch.zeros_like(chunks)
    for i in range(16):
        acc = acc + chunks[..., i:i + 1] * m[i]
    return acc.reshape(r, c)


def e2m1_nearest(a: torch.Tensor) -> torch.Tensor:
    """fp32 magnitudes a >= 0 -> the E2M1 magnitude, round to nearest even, saturating at
    6 (floatToE2M1): ties 0.25, 1.25, 2.5, 5 go down to the even code, 0.75, 1.75, 3.5 up."""
    idx = ((a > 0.25).int() + (a >= 0.75).int() + (a > 1.25).int() + (a >= 1.75).int()
           + (a > 2.5).int() + (a >= 3.5).int() + (a > 5.0).int())
    return torch.tensor(E2M1_GRID, dtype=F32)[idx]


def nvfp4_random_bits(context_seed: int, seed: int, copy: int, index: np.ndarray) -> np.ndarray:
    """te_rt_nvfp4_random_bits: a splitmix64 finalizer over (context_seed ^ seed *
    0xD1B54A32D192ED03) + (2 * index + copy + 1) * 0x9E3779B97F4A7C15 (mod 2^64), the high
    32 bits; index an int64 array."""
    mask = (1 << 64) - 1
    key = np.uint64((context_seed ^ (seed * 0xD1B54A32D192ED03)) & mask)
    with np.errstate(over="ignore"):
        z = key + (2 * index.astype(np.uint64) + np.uint64(copy + 1)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(32)).astype(np.uint32)


def e2m1_stochastic(a: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """fp32 magnitudes a >= 0 -> E2M1 magnitude with stochastic rounding: a clamped to 6,
    lo / hi the grid neighbours (lo <= a < hi), up iff u < (a - lo) / (hi - lo) (exact in
    fp32: the gaps are powers of two)."""
    grid = torch.tensor(E2M1_GRID + (6.0,), dtype=F32)
    a = a.clamp(max=6.0)
    lo_i = sum((a >= g).int() for g in E2M1_GRID[1:])
    lo, hi = grid[lo_i], grid[lo_i + 1]
    p = torch.where(hi > lo, (a - lo) / torch.where(hi > lo, hi - lo, f32(1.0)), f32(0.0))
    return torch.where(u < p, hi, lo)


def qdq_nvfp4(t: torch.Tensor, columnwise: bool, block2d: bool = False, rht: bool = False,
              sr_seed: int | None = None, context_seed: int = 0) -> torch.Tensor:
    """NVFP4 quantize-dequantize of the 2-D view [M, K] of t (M, K multiples of 16), fp32,
    result shaped like t; te_rt_quantize_nvfp4 on the cpu backend (section 4.5).  The
    columnwise copy quantizes t^T [K, M] (after rht_rows when `rht`: the result is then in
    the transformed basis along M, which cancels in the wgrad GEMM) and is returned
    transposed back.  Global amax A = max|v| of the copy (NaNs ignored), S_enc = 2688 / A
    (1 for A = 0 or inf, FLT_MAX when the quotient is inf); per 1x16 block (16x16 tile with block2d) S_dec = e4m3((amax * S_enc)
    / 6); element e2m1(v * (S_enc / S_dec)) (0 where S_dec is 0), nearest even or, with
    sr_seed, stochastic from nvfp4_random_bits(context_seed, sr_seed, copy, row-major index
    in the copy); dequantized as e2m1 * S_dec * fp32(1 / S_enc) (the GEMM applies
    (1 / S_enc_a) * (1 / S_enc_b) to the fp32 sum of the e2m1 * S_dec products; the two
    differ by fp32 rounding only).  NaN elements give +6, as the runtime's E2M1 cast."""
    v = t.float().reshape(-1, t.shape[-1])
    if columnwise:
        v = v.T.contiguous()
    if rht:
        v = rht_rows(v)
    r, c = v.shape
    assert r % NV_BLOCK_LEN == 0 and c % NV_BLOCK_LEN == 0, ("NVFP4 needs dims % 16", t.shape)
    mag_all = v.abs()
    gamax = torch.where(torch.isnan(mag_all), f32(0.0), mag_all).max()  # NaNs ignored
    ok = float(gamax) != 0.0 and math.isfinite(float(gamax))
    s_enc = f32(NV_S_ENC_NUM) / gamax if ok else f32(1.0)  # 1 for a zero or inf amax
    if torch.isinf(s_enc):
        s_enc = f32(FLT_MAX)
    finite_mag = torch.where(torch.isnan(mag_all), f32(0.0), mag_all)  # NaNs ignored
    if block2d:
        tiles = finite_mag.reshape(r // 16, 16, c // 16, 16)
        amax = tiles.amax(dim=(1, 3), keepdim=True).expand_as(tiles).reshape(r, c // 16, 16)
    else:
        amax = finite_mag.reshape(r, c // 16, 16).amax(dim=2, keepdim=True)
    blocks = v.reshape(r, c // 16, 16)
    s_dec = fp8_cast((amax * s_enc) / f32(6.0), E4M3).float()
    to_fp4 = torch.where(s_dec == 0, f32(0.0), s_enc / torch.where(s_dec == 0, f32(1.0), s_dec))
    scaled = blocks * to_fp4
    mag = scaled.abs()
    if sr_seed is None:
        q = e2m1_nearest(mag)
    else:
        bits = nvfp4_random_bits(context_seed, sr_seed, int(columnwise),
                                 np.arange(r * c, dtype=np.int64))
        u = torch.from_numpy((bits >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24))
        q = e2m1_stochastic(mag, u.reshape(r, c // 16, 16))
    q = torch.where(torch.isnan(scaled), f32(6.0), q)  # E2M1 has no NaN: +6
    val = torch.where(scaled < 0, -q, q) * s_dec
    out = (val * (f32(1.0) / s_enc)).reshape(r, c)
    if columnwise:
        out = out.T
    return out.reshape(t.shape)


def delayed_update(amax: torch.Tensor, fmt: str) -> tuple[torch.Tensor, torch.Tensor]:
    """DelayedScaling's update after the first step from TE's initial state (history 0,
    scales 1): the step's amaxes are written to history row 0, which the roll moves to
    the last row (row 0 is then zeroed); scale = fp8_max / max over the history where
    that is finite and > 0, else the old scale 1 (an infinite quotient -> FLT_MAX)."""
    history = torch.zeros(AMAX_HISTORY_LEN, amax.numel(), dtype=F32)
    history[-1] = amax
    scale = torch.ones(amax.numel(), dtype=F32)
    ok = torch.isfinite(amax) & (amax > 0)
    quot = f32(FP8_MAX[fmt]) / torch.where(ok, amax, f32(1.0))
    quot = torch.where(torch.isinf(quot), f32(FLT_MAX), quot)
    scale = torch.where(ok, quot, scale)
    return history, scale


def fp8_step(cfg, names: list, args: list, grads_in: list, quantize: bool = True):
    """te-mlir's forward + backward of cfg (a make_goldens.Config: module, dtype, recipe,
    normalization, activation, zero_centered_gamma) under cfg.recipe (module docstring),
    for the arguments `names` / `args` and the output gradients grads_in.  Returns
    (outputs, gradients in argument order, {state name: tensor}); the state is only
    produced for fp8-delayed.  quantize=False replaces every qdq by the identity (the same
    dataflow without quantization; used to check the emulation against autograd)."""
    T = TORCH_DTYPE[cfg.dtype]
    P = dict(zip(names, args))
    amax = {}  # role -> max|t| (fp32) of the tensor each quantizer saw
    block = cfg.recipe == "fp8-block"
    mx = cfg.recipe == "mxfp8"
    nv = NVFP4_RECIPES.get(cfg.recipe)  # (rht, stochastic rounding, 2-D weights)
    # gradient format: HYBRID's E5M2; Float8Block's and MXFP8's E4M3 (NVFP4: E2M1)
    GRAD = E4M3 if block or mx or nv else E5M2
    # NVFP4's stochastically rounded quantizations in te-decompose's order (the seed
    # attribute of te.quantize): the backward's dy, then LayerNormMLP's dfc1
    SR_SEEDS = {"dy": 0, "dfc1": 1}

    def rnd(t):  # round_T, once, from fp32
        return t.to(T)

    def q(role, t, fmt, weight=False):
        """(rowwise, columnwise) dequantized copies of t: the operand a GEMM reads as its
        row- or columnwise usage.  Per-tensor recipes: one quantization for both (the
        columnwise data is the byte transpose); fp8-block: 2-D blocks for a weight (the
        same values both ways), else two independent 1-D quantizations; mxfp8: two
        independent quantizations (1x32 and 32x1 blocks) of every tensor, weights
        included."""
        a = t.float().abs().max()
        amax[role] = a
        if not quantize:
            return t.float(), t.float()
        if nv:
            rht, sr, w2d = nv
            if weight:  # 16x16 tiles (or 1x16), no transform, nearest
                wq = qdq_nvfp4(t, columnwise=False, block2d=w2d)
                return wq, (wq if w2d else qdq_nvfp4(t, columnwise=True))
            seed = SR_SEEDS[role] if sr and role in SR_SEEDS else None
            return (qdq_nvfp4(t, columnwise=False, sr_seed=seed),
                    qdq_nvfp4(t, columnwise=True, rht=rht, sr_seed=seed))
        if mx:
            return qdq_mx(t, columnwise=False), qdq_mx(t, columnwise=True)
        if block:
            if weight:
                wq = qdq_block(t, block2d=True, columnwise=False)
                return wq, wq
            return (qdq_block(t, block2d=False, columnwise=False),
                    qdq_block(t, block2d=False, columnwise=True))
        scale = current_scale(a, fmt) if cfg.recipe == "fp8-current" else f32(1.0)
        tq = qdq(t, fmt, scale)
        return tq, tq

    def bias(name):
        return P[name].float() if name in P else None

    def plus(t, b):
        return t if b is None else t + b

    # ---- norm forward (fp32) ----
    x = P["x"]
    hidden = x.shape[-1]
    x2 = x.reshape(-1, hidden).float()
    gamma = P["norm.weight"].float()
    if cfg.zero_centered_gamma:
        gamma = gamma + 1
    if cfg.normalization == "LayerNorm":
        mu = x2.mean(-1, keepdim=True)
        xc = x2 - mu
        rsigma = torch.rsqrt((xc * xc).mean(-1, keepdim=True) + EPS)
        xhat = xc * rsigma
        z32 = gamma * xhat + P["norm.bias"].float()
    else:
        rsigma = torch.rsqrt((x2 * x2).mean(-1, keepdim=True) + EPS)
        xhat = x2 * rsigma
        z32 = gamma * xhat
    z = rnd(z32)
    zq, zq_col = q("z", z, E4M3)
    G = {}

    # GEMM operands (reference section 0.1): fprop x.row x W.row, dgrad dy.row x W.col,
    # wgrad x.col x dy.col (W.col is W.row's values except under mxfp8)
    if cfg.module == "layernorm_mlp":
        w1q, w1q_col = q("w1", P["fc1.weight"], E4M3, weight=True)
        fc1 = rnd(plus(zq @ w1q.T, bias("fc1.bias")))
        fc1f = fc1.float().requires_grad_(True)
        with torch.enable_grad():
            if cfg.activation in GATED:
                gate, up = fc1f.chunk(2, dim=-1)
                a32 = GATED[cfg.activation](gate) * up
            else:
                a32 = ACTIVATIONS[cfg.activation](fc1f)
        a = rnd(a32.detach())
        aq, aq_col = q("a", a, E4M3)
        w2q, w2q_col = q("w2", P["fc2.weight"], E4M3, weight=True)
        y = rnd(plus(aq @ w2q.T, bias("fc2.bias")))
        dy = grads_in[0].reshape(y.shape)
        dyq, dyq_col = q("dy", dy, GRAD)
        dact = rnd(dyq @ w2q_col)
        G["fc2.weight"] = rnd(dyq_col.T @ aq_col)
        if "fc2.bias" in P:
            G["fc2.bias"] = rnd(dy.float().sum(0))
        (d32,) = torch.autograd.grad(a32, fc1f, dact.float())
        dfc1 = rnd(d32)
        if "fc1.bias" in P:
            G["fc1.bias"] = rnd(dfc1.float().sum(0))
        dfc1q, dfc1q_col = q("dfc1", dfc1, GRAD)
        dz = rnd(dfc1q @ w1q_col)
        G["fc1.weight"] = rnd(dfc1q_col.T @ zq_col)
        fwd_slots, bwd_slots = ["z", "w1", None, "a", "w2", None], ["dfc1", None, "dy", None]
    else:
        wq, wq_col = q("w", P["fc.weight"], E4M3, weight=True)
        y = rnd(plus(zq @ wq.T, bias("fc.bias")))
        dy = grads_in[0].reshape(y.shape)
        dyq, dyq_col = q("dy", dy, GRAD)
        dz = rnd(dyq @ wq_col)
        G["fc.weight"] = rnd(dyq_col.T @ zq_col)
        if "fc.bias" in P:
            G["fc.bias"] = rnd(dy.float().sum(0))
        fwd_slots, bwd_slots = ["z", "w", None], ["dy", None]

    # ---- norm backward (fp32, section 8.1 / 8.2) ----
    dz32 = dz.float()
    g = gamma * dz32
    m2 = (g * xhat).mean(-1, keepdim=True)
    if cfg.normalization == "LayerNorm":
        dx = rsigma * (g - (m2 * xhat + g.mean(-1, keepdim=True)))
        G["norm.bias"] = rnd(dz32.sum(0))
    else:
        dx = rsigma * (g - m2 * xhat)
    G["norm.weight"] = rnd((dz32 * xhat).sum(0))
    G["x"] = rnd(dx).reshape(x.shape)

    out = y.reshape(tuple(x.shape[:-1]) + (y.shape[-1],))
    state = {}
    if cfg.recipe == "fp8-delayed":
        prefix = f"state.{cfg.module}_0"
        for d, slots, fmt in (("fwd", fwd_slots, E4M3), ("bwd", bwd_slots, E5M2)):
            vec = torch.stack([amax[r] if r else f32(0.0) for r in slots]).to(F32)
            history, scale = delayed_update(vec, fmt)
            state[f"{d}/{prefix}.amax_history_{d}"] = history
            state[f"{d}/{prefix}.scales_{d}"] = scale
    return [out], [G[n] for n in names], state


def max_err(actual: list, expected: list, atol: float, rtol: float) -> tuple[float, int, float]:
    """Over the lists: (max |actual - expected|, number of elements outside
    atol + rtol*|expected|, normwise relative error ||actual - expected|| / ||expected||)."""
    worst, bad, d2, e2 = 0.0, 0, 0.0, 0.0
    for a, e in zip(actual, expected):
        a, e = a.double(), e.double()
        d = (a - e).abs()
        worst = max(worst, float(d.max()))
        bad += int((d > atol + rtol * e.abs()).sum())
        d2 += float((d * d).sum())
        e2 += float((e * e).sum())
    return worst, bad, math.sqrt(d2 / e2) if e2 > 0 else math.sqrt(d2)


def check_fp8_cast() -> str | None:
    """None if fp8_cast agrees bit for bit with ml_dtypes' float8 types (an independent
    implementation; the same clamp applied first) on edge values, exact ties between
    neighbouring FP8 values, and seeded random values; else a message."""
    import ml_dtypes

    gen = torch.Generator().manual_seed(CHECK_SEED)
    edges = [0.0, -0.0, 1.0, 448.0, 449.0, 464.0, 465.0, 480.0, 57344.0, 61439.0, 61440.0,
             1e30, float("inf"), float("-inf"), float("nan"), 2.0 ** -6, 2.0 ** -9, 2.0 ** -10,
             2.0 ** -14, 2.0 ** -16, 2.0 ** -17, 1.5 * 2.0 ** -17, 1e-30]
    for fmt, md in ((E4M3, ml_dtypes.float8_e4m3fn), (E5M2, ml_dtypes.float8_e5m2)):
        grid = torch.arange(256, dtype=torch.uint8).view(FP8_DTYPE[fmt]).float()
        grid = grid[torch.isfinite(grid)].unique()
        ties = (grid[1:] + grid[:-1]) / 2          # exact midpoints: round to even
        v = torch.cat([torch.tensor(edges), grid, ties,
                       torch.randn(20000, generator=gen) * 30,
                       torch.randn(20000, generator=gen) * 1e-3])
        v = torch.cat([v, -v])
        ours = fp8_cast(v, fmt).float().numpy()
        vn = v.numpy()
        mx = np.float32(FP8_MAX[fmt])
        ref = np.where(np.isnan(vn), vn, np.clip(vn, -mx, mx)).astype(md).astype(np.float32)
        same = (ours.view(np.uint32) == ref.view(np.uint32)) | (np.isnan(ours) & np.isnan(ref))
        if not same.all():
            i = int(np.argmin(same))
            return (f"fp8_cast({float(vn[i])!r}, {fmt}) = {float(ours[i])!r}, ml_dtypes gives "
                    f"{float(ref[i])!r}")
    return None


def check_qdq_block() -> str | None:
    """None if qdq_block agrees bit for bit with a direct per-block loop (numpy, ml_dtypes'
    float8_e4m3fn, the power-of-2 scale from math.frexp) for 1-D rowwise, 1-D columnwise
    and 2-D blocks of seeded values with partial blocks, an all-zero block, per-row
    magnitudes from 1e-30 to 1e30 and amaxes whose 448 / amax overflows fp32; else a
    message."""
    import ml_dtypes

    def ref(a: np.ndarray, block2d: bool, columnwise: bool) -> np.ndarray:
        if columnwise and not block2d:
            return ref(a.T.copy(), False, False).T
        out = np.empty_like(a)
        bm = BLOCK_LEN if block2d else 1
        for i in range(0, a.shape[0], bm):
            for j in range(0, a.shape[1], BLOCK_LEN):
                blk = a[i:i + bm, j:j + BLOCK_LEN]
                am = float(np.abs(blk).max())
                if am == 0.0 or not math.isfinite(am):
                    s = 1.0
                else:
                    quot = float(np.float32(FP8_MAX[E4M3]) / np.float32(am))
                    s = FLT_MAX if math.isinf(quot) else quot
                    s = 2.0 ** (math.frexp(s)[1] - 1)   # s = m * 2**e, 0.5 <= m < 1
                s32 = np.float32(s)
                c = np.clip(blk * s32, -FP8_MAX[E4M3], FP8_MAX[E4M3]).astype(np.float32)
                out[i:i + bm, j:j + BLOCK_LEN] = (c.astype(ml_dtypes.float8_e4m3fn)
                                                  .astype(np.float32) * (np.float32(1) / s32))
        return out

    gen = torch.Generator().manual_seed(CHECK_SEED)
    m, k = 2 * BLOCK_LEN + 7, BLOCK_LEN + 57
    mag = torch.pow(10.0, torch.linspace(-30, 30, m)).reshape(m, 1)
    t = (torch.randn(m, k, generator=gen) * mag[torch.randperm(m, generator=gen)]).float()
    t[5] = 0.0                                     # zero 1-D rowwise blocks
    t[:BLOCK_LEN, BLOCK_LEN:] = 0.0                # a zero 2-D block
    t[7, :3] = torch.tensor([1e-38, -2e-39, 3e-40])  # tiny amax: 448 / amax = inf
    t[7, 3:] = 0.0
    for block2d, col in ((False, False), (False, True), (True, False)):
        ours = qdq_block(t, block2d, col).numpy()
        with np.errstate(over="ignore"):
            theirs = ref(t.numpy(), block2d, col)
        same = ours.view(np.uint32) == theirs.view(np.uint32)
        if not same.all():
            i = np.unravel_index(int(np.argmin(same)), same.shape)
            return (f"qdq_block(block2d={block2d}, columnwise={col})[{i}] of "
                    f"{float(t[i])!r} = {float(ours[i])!r}, the loop gives {float(theirs[i])!r}")
    return None


def mx_check_tensor() -> torch.Tensor:
    """check_qdq_mx's input, [96, 192] fp32: seeded values with per-row magnitudes from
    1e-44 to 1e38 (so columnwise blocks mix magnitudes), and rows of special 1x32 blocks:
    all zero, signed zeros, fp32-subnormal values (amax / 448 subnormal), amax / 448 at and
    next to 2^-127 and 2^-126, amax = 448 * 2^k exactly and one ulp either side, exact ties
    of the E4M3 grid at e = 127 (factor 1), FLT_MAX, inf, and a NaN element.  Within a
    block the magnitudes spread over 2^-24 .. 1 times the amax (log-uniform), so that some
    elements land in E4M3's subnormal range, the only place where an exponent one too
    large changes a value (an exponent one too small saturates the amax element)."""
    gen = torch.Generator().manual_seed(CHECK_SEED)
    m, k = 3 * MX_BLOCK_LEN, 6 * MX_BLOCK_LEN

    def spread(*shape):  # signed, log-uniform magnitudes in (2^-24, 1]
        u = torch.rand(*shape, generator=gen, dtype=torch.float64)
        sign = torch.where(torch.rand(*shape, generator=gen) < 0.5, -1.0, 1.0).double()
        return sign * torch.pow(2.0, -24 * u)

    mag = torch.pow(10.0, torch.linspace(-44, 38, m, dtype=torch.float64)).reshape(m, 1)
    t = (spread(m, k) * mag[torch.randperm(m, generator=gen)]).float()

    def up(v):
        return float(np.nextafter(np.float32(v), np.float32(np.inf)))

    def down(v):
        return float(np.nextafter(np.float32(v), np.float32(0)))

    def block(row, b, amax, rest_scale=0.37):
        """Block b of row: values |v| <= rest_scale * amax, one element = +-amax."""
        r = spread(MX_BLOCK_LEN)
        v = (r * rest_scale * amax).float() if math.isfinite(amax) else r.float() * 1e30
        v[int(torch.randint(MX_BLOCK_LEN, (1,), generator=gen))] = amax * (1 if r[0] > 0 else -1)
        t[row, b * MX_BLOCK_LEN:(b + 1) * MX_BLOCK_LEN] = v

    p126, p127 = 2.0 ** -126, 2.0 ** -127
    specials = [
        0.0, 1e-41, 448 * p127, up(448 * p127), down(448 * p127), 448 * p126,
        up(448 * p126), down(448 * p126), 448.0, up(448.0), down(448.0), 1.0,
        448 * 2.0 ** -20, up(448 * 2.0 ** -20), down(448 * 2.0 ** -20), 448 * 2.0 ** 100,
        up(448 * 2.0 ** 100), 1e38, FLT_MAX, float("inf"), 2.0 ** -149, 3e-38, 1.5, 7e-3,
    ]
    for i, amax in enumerate(specials):
        block(i // 6, i % 6, amax)
    t[0, MX_BLOCK_LEN:MX_BLOCK_LEN + 16] = -0.0      # block 1 of row 0: signed zeros
    t[0, MX_BLOCK_LEN + 16:2 * MX_BLOCK_LEN] = 0.0
    # exact ties between neighbouring E4M3 values, at e = 127 (amax 448: factor 1)
    grid = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
    grid = grid[torch.isfinite(grid) & (grid >= 0)].unique()
    ties = (grid[1:] + grid[:-1]) / 2
    pick = ties[torch.randperm(len(ties), generator=gen)[:MX_BLOCK_LEN - 1]]
    t[4, :MX_BLOCK_LEN] = torch.cat([torch.tensor([448.0]), pick * torch.where(
        torch.rand(MX_BLOCK_LEN - 1, generator=gen) < 0.5, -1.0, 1.0)])
    t[4, MX_BLOCK_LEN + 5] = float("nan")            # a NaN element (ignored by the amax)
    return t


def check_qdq_mx(t: torch.Tensor | None = None) -> str | None:
    """None if qdq_mx agrees bit for bit with a direct per-block loop (numpy, ml_dtypes'
    float8_e4m3fn, the E8M0 exponent from math.frexp) rowwise and columnwise on
    mx_check_tensor(), and so does its E8M0 exponent (e8m0_round_up) per block; the rowwise
    blocks must cover e = 0, 1, 254 and the exact powers of two; else a message."""
    import ml_dtypes

    def e8m0(am: float) -> int:
        q = float(np.float32(am) / np.float32(FP8_MAX[E4M3]))   # fp32 division
        if q == 0.0:
            return 0
        if math.isinf(q):
            return 254
        mant, ex = math.frexp(q)              # q = mant * 2**ex, 0.5 <= mant < 1
        ceil_log2 = ex - 1 if mant == 0.5 else ex
        return min(max(ceil_log2 + 127, 0), 254)

    def ref(a: np.ndarray, columnwise: bool) -> tuple[np.ndarray, list]:
        if columnwise:
            out, es = ref(a.T.copy(), False)
            return out.T, es
        out, es = np.empty_like(a), []
        for i in range(a.shape[0]):
            for j in range(0, a.shape[1], MX_BLOCK_LEN):
                blk = a[i, j:j + MX_BLOCK_LEN]
                am = float(np.fmax.reduce(np.abs(blk)))           # NaN ignored
                e = e8m0(0.0 if math.isnan(am) else am)
                es.append(e)
                c = np.clip(blk * np.float32(2.0 ** (127 - e)), -FP8_MAX[E4M3],
                            FP8_MAX[E4M3]).astype(np.float32)
                out[i, j:j + MX_BLOCK_LEN] = (c.astype(ml_dtypes.float8_e4m3fn)
                                              .astype(np.float32) * np.float32(2.0 ** (e - 127)))
        return out, es

    if t is None:
        t = mx_check_tensor()
    for col in (False, True):
        ours = qdq_mx(t, col).numpy()
        with np.errstate(over="ignore", invalid="ignore"):
            theirs, es = ref(t.numpy(), col)
        same = (ours.view(np.uint32) == theirs.view(np.uint32)) | (np.isnan(ours)
                                                                   & np.isnan(theirs))
        if not same.all():
            i = np.unravel_index(int(np.argmin(same)), same.shape)
            return (f"qdq_mx(columnwise={col})[{i}] of {float(t[i])!r} = {float(ours[i])!r}, "
                    f"the loop gives {float(theirs[i])!r} ({int((~same).sum())} differ)")
        v = t.T if col else t
        mag = v.reshape(-1, MX_BLOCK_LEN).abs()
        amax = torch.where(torch.isnan(mag), f32(0.0), mag).amax(dim=1)
        ours_e = e8m0_round_up(amax / f32(FP8_MAX[E4M3])).tolist()
        if ours_e != es:
            i = next(i for i, (a, b) in enumerate(zip(ours_e, es)) if a != b)
            return (f"e8m0_round_up(columnwise={col}) of block {i} "
                    f"(amax {float(amax[i])!r}) = {ours_e[i]}, the loop gives {es[i]}")
        if not col and not {0, 1, 254, 127, 128, 127 - 20, 127 + 100} <= set(es):
            return f"mx_check_tensor does not cover the E8M0 edge cases: {sorted(set(es))}"
    return None


def check_nvfp4() -> str | None:
    """None if NVFP4's pieces hold up against independent computations; else a message:
    e2m1_nearest agrees with ml_dtypes' float4_e2m1fn (after the clamp to 6) on the grid,
    every exact tie and seeded random values; the RHT matrix is orthogonal (M M^T = I
    exactly) and rht_rows matches a float64 matrix product to fp32 rounding; stochastic
    rounding keeps grid values, only moves to the two neighbours, and rounds up a value
    with p = 0.25 in 25% +- 1% of 2^16 draws; qdq_nvfp4 agrees bit for bit with a direct
    per-block loop (numpy, ml_dtypes) in 1-D and 2-D, nearest and stochastic."""
    import ml_dtypes

    gen = torch.Generator().manual_seed(CHECK_SEED)
    grid = torch.tensor(E2M1_GRID, dtype=F32)
    ties = (grid[1:] + grid[:-1]) / 2
    v = torch.cat([grid, ties, torch.tensor([6.5, 1e30, 1e-30, 0.1]),
                   torch.rand(20000, generator=gen) * 7]).abs()
    ref = np.clip(v.numpy(), 0, 6).astype(ml_dtypes.float4_e2m1fn).astype(np.float32)
    ours = e2m1_nearest(v).numpy()
    if not (ours == ref).all():
        i = int(np.argmin(ours == ref))
        return f"e2m1_nearest({float(v[i])!r}) = {ours[i]!r}, ml_dtypes gives {ref[i]!r}"
    m = rht_matrix()
    if not torch.equal(m @ m.T, torch.eye(16)):
        return "the RHT matrix is not orthogonal"
    x = torch.randn(32, 64, generator=gen)
    exact = (x.double().reshape(32, 4, 16) @ m.double()).reshape(32, 64)
    if not torch.allclose(rht_rows(x).double(), exact, rtol=1e-6, atol=1e-6):
        return "rht_rows differs from the matrix product"
    u = torch.rand(1 << 16, generator=gen)
    a = torch.full((1 << 16,), 1.125)  # between 1 and 1.5: p = 0.25
    up = float((e2m1_stochastic(a, u) == 1.5).float().mean())
    if abs(up - 0.25) > 0.01 or not torch.equal(e2m1_stochastic(grid, u[:8]), grid):
        return f"stochastic rounding rounds p=0.25 up {up:.4f} of the time or moves grid values"
    r = e2m1_stochastic(v.clamp(max=6), torch.rand(v.numel(), generator=gen))
    lo = torch.tensor([max(g for g in E2M1_GRID if g <= float(t)) for t in v.clamp(max=6)])
    hi = torch.tensor([min([g for g in E2M1_GRID if g >= float(t)]) for t in v.clamp(max=6)])
    if not ((r == lo) | (r == hi)).all():
        return "stochastic rounding leaves the neighbouring grid values"

    def loop(t, block2d, sr_seed):  # direct per-block quantization, numpy + ml_dtypes
        vv = t.numpy().astype(np.float32)
        rr, cc = vv.shape
        gam = np.float32(np.abs(vv).max())
        s_enc = np.float32(1.0) if gam == 0 else np.float32(NV_S_ENC_NUM) / gam
        out = np.zeros_like(vv)
        bits = nvfp4_random_bits(0, sr_seed or 0, 0, np.arange(rr * cc, dtype=np.int64))
        for i in range(rr):
            for b in range(cc // 16):
                if block2d:
                    am = np.float32(np.abs(vv[i // 16 * 16:i // 16 * 16 + 16, b * 16:b * 16 + 16]).max())
                else:
                    am = np.float32(np.abs(vv[i, b * 16:b * 16 + 16]).max())
                sd = np.float32(np.clip(np.float32(am * s_enc) / np.float32(6), -448, 448)
                                .astype(ml_dtypes.float8_e4m3fn).astype(np.float32))
                f = np.float32(0) if sd == 0 else np.float32(s_enc / sd)
                for j in range(b * 16, b * 16 + 16):
                    sc = np.float32(vv[i, j] * f)
                    mg = min(abs(sc), np.float32(6))
                    if sr_seed is None:
                        q = float(np.float32(mg).astype(ml_dtypes.float4_e2m1fn).astype(np.float32))
                    else:
                        lo_ = max(g for g in E2M1_GRID if g <= mg)
                        hi_ = min([g for g in E2M1_GRID if g >= mg] + [6.0])
                        uu = np.float32(int(bits[i * cc + j]) >> 8) * np.float32(2.0 ** -24)
                        p = np.float32(0) if hi_ == lo_ else np.float32((mg - np.float32(lo_)) / np.float32(hi_ - lo_))
                        q = hi_ if uu < p else lo_
                    out[i, j] = np.float32(np.float32(np.sign(sc) * q) * sd) * np.float32(np.float32(1.0) / s_enc)
        return out

    t = torch.randn(32, 48, generator=gen) * torch.logspace(-3, 2, 48)
    t[3, :16] = 0.0
    for block2d, seed in ((False, None), (True, None), (False, 3)):
        ours = qdq_nvfp4(t, columnwise=False, block2d=block2d, sr_seed=seed).numpy()
        ref = loop(t, block2d, seed)
        if not (ours.view(np.uint32) == ref.view(np.uint32)).all():
            i = int(np.argmax(ours.view(np.uint32) != ref.view(np.uint32)))
            return (f"qdq_nvfp4(block2d={block2d}, sr_seed={seed}) element {i}: "
                    f"{ours.flat[i]!r}, the loop gives {ref.flat[i]!r}")
    return None


def quant_tols(cfg) -> tuple:
    """TE's quantization_tols of cfg's recipe: e2m1's for NVFP4, e4m3's for FP8."""
    return (FP4_ATOL, FP4_RTOL) if cfg.recipe in NVFP4_RECIPES else (FP8_ATOL, FP8_RTOL)
