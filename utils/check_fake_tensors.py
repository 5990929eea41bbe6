#!/usr/bin/env python3
"""Independent cross-check of te-describe's inner tensors against
TransformerEngine's allocation rules.

TransformerEngine's own Python helpers (pip transformer-engine-torch) need a
CUDA build and do not install on a machine without a GPU toolchain for it,
so the rules here are re-derived from the formulas of
shared/reference/transformer-engine.md §4 and TE's C++ allocator
(transformer_engine/pytorch/csrc/quantizer.cpp, create_tensor and
get_scale_shape), written from scratch in Python: no code is shared with
the C++ implementation under test.

For a grid of recipes x shapes (aligned 2-D, unaligned, 3-D, dynamic batch)
x architectures x modes x ops (layernorm_linear with and without the
returned norm output, layernorm_mlp plain and gated, linear) it writes an
MLIR file, runs `te-opt --te-describe`, and checks for every op:
  - whether it falls back to bf16 (alignment),
  - the quantized GEMM operands (names, roles, formats, usages) and the exact
    inner tensors (names, order, shapes, dtypes) of each,
  - the quantized saved tensors (columnwise copies) and their inner tensors.
Symbolic sizes of dynamic dims are evaluated at several values of d0.

Usage: check_fake_tensors.py --te-opt PATH [--workdir DIR] [-v]
Exit status 0 when everything matches.
"""
import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile

# ---------------------------------------------------------------------------
# TransformerEngine allocation rules (reference §4, quantizer.cpp)
# ---------------------------------------------------------------------------

def roundup(x, m):
    return (x + m - 1) // m * m


def ceildiv(x, m):
    return (x + m - 1) // m


def flat(shape):
    return math.prod(shape[:-1]), shape[-1]


def transpose_shape(shape):
    # make_transpose_shape: last dim first, then the others in order.
    return [shape[-1]] + list(shape[:-1])


def inner_tensors(recipe, shape, usage, arch, block_2d=False, row_scaled=False):
    """[(name, shape, dtype)] that TE allocates for a quantized tensor."""
    m, k = flat(shape)
    row = usage in ("rowwise", "both")
    col = usage in ("columnwise", "both")
    out = []
    if recipe in ("fp8-delayed", "fp8-current"):
        non_tn = arch == "blackwell"  # nvte_is_non_tn_fp8_gemm_supported
        if row or non_tn:
            out.append(("data", list(shape), "uint8"))
        if col and not non_tn:
            out.append(("transpose", transpose_shape(shape), "uint8"))
        out.append(("scale_inv", [1], "float32"))
    elif recipe == "mxfp8":
        if row:
            out.append(("rowwise_data", list(shape), "uint8"))
            out.append(("rowwise_scale_inv", [roundup(m, 128), roundup(k // 32, 4)], "uint8"))
        if col:
            out.append(("columnwise_data", list(shape), "uint8"))
            out.append(("columnwise_scale_inv", [roundup(m // 32, 4), roundup(k, 128)], "uint8"))
    elif recipe == "fp8-block":
        if row:
            out.append(("rowwise_data", list(shape), "uint8"))
            if block_2d:
                s = [ceildiv(m, 128), roundup(ceildiv(k, 128), 4)]
            else:
                s = [ceildiv(k, 128), roundup(m, 4)]
            out.append(("rowwise_scale_inv", s, "float32"))
        if col:
            out.append(("columnwise_data", transpose_shape(shape), "uint8"))
            if block_2d:
                s = [ceildiv(k, 128), roundup(ceildiv(m, 128), 4)]
            else:
                s = [ceildiv(m, 128), roundup(k, 4)]
            out.append(("columnwise_scale_inv", s, "float32"))
    elif recipe == "nvfp4":
        if row:
            out.append(("rowwise_data", list(shape[:-1]) + [k // 2], "uint8"))
            out.append(("rowwise_scale_inv", [roundup(m, 128), roundup(k // 16, 4)], "uint8"))
        if col:
            out.append(("columnwise_data", [k, m // 2], "uint8"))  # C++ forces 2-D
            out.append(("columnwise_scale_inv", [roundup(k, 128), roundup(m // 16, 4)], "uint8"))
        if row:
            out.append(("amax_rowwise", [m if row_scaled else 1], "float32"))
        if col:
            out.append(("amax_columnwise", [k if row_scaled else 1], "float32"))
    else:
        raise ValueError(recipe)
    return out


ALIGN = {"fp8-delayed": (8, 16), "fp8-current": (8, 16), "mxfp8": (32, 32),
         "nvfp4": (16, 16), "fp8-block": (128, 128)}

RECIPE_ATTR = {"fp8-delayed": "#te.fp8_delayed<>", "fp8-current": "#te.fp8_current<>",
               "mxfp8": "#te.mxfp8", "fp8-block": "#te.fp8_block<>",
               "nvfp4": "#te.nvfp4<>", "nvfp4-rs": "#te.nvfp4<row_scaled = true>"}


def formats(recipe):
    """(forward, backward) element formats; HYBRID is E4M3 fwd / E5M2 bwd."""
    if recipe in ("fp8-delayed", "fp8-current"):
        return "e4m3", "e5m2"
    if recipe.startswith("nvfp4"):
        return "e2m1", "e2m1"
    return "e4m3", "e4m3"


# ---------------------------------------------------------------------------
# What each op quantizes (TE modules, reference §1.3-1.5, §2.3-2.5)
# ---------------------------------------------------------------------------

def gemm_operands(op, lead, k, n, f1, f, training):
    """[(name, role, shape)] of quantized GEMM operands, forward then backward."""
    if op == "linear":
        ops = [("input", "activation", lead + [k]), ("weight", "weight", [n, k])]
        bwd = [("grad_output", "grad", lead + [n])]
    elif op == "layernorm_linear":
        ops = [("ln_out", "activation", lead + [k]), ("weight", "weight", [n, k])]
        bwd = [("grad_output", "grad", lead + [n])]
    else:
        ops = [("ln_out", "activation", lead + [k]), ("fc1_weight", "weight", [f1, k]),
               ("act_out", "activation", lead + [f]), ("fc2_weight", "weight", [k, f])]
        bwd = [("fc2_grad_output", "grad", lead + [k]), ("fc1_grad_output", "grad", lead + [f1])]
    return ops, (bwd if training else [])


def saved_quantized(op, recipe, arch):
    """Operands saved for backward and the usage kept (reference §1.4, §1.7,
    §2.4): the norm output of LayerNormLinear and the input of Linear keep
    their columnwise copy only; weights (update_usage adds columnwise, keeps
    rowwise) and what LayerNormMLP saves keep both, except act_out under
    per-tensor FP8 on Hopper (see act_out_rowwise) and, te-mlir's choice
    (TE's LayerNormMLP keeps both), the norm output: columnwise only, as
    LayerNormLinear's (FC1's wgrad reads nothing else)."""
    return {"linear": {"input": "columnwise", "weight": "both"},
            "layernorm_linear": {"weight": "both", "ln_out": "columnwise"},
            "layernorm_mlp": {"ln_out": "columnwise", "fc1_weight": "both",
                              "act_out": "rowwise" if act_out_rowwise(recipe, arch) else "both",
                              "fc2_weight": "both"}}[op]


def act_out_rowwise(recipe, arch):
    """§0.2, §2.5: TE sets LayerNormMLP's FC2 input quantizer columnwise only
    for MXFP8 / block / NVFP4; per-tensor FP8 (Float8Quantizer,
    Float8CurrentScalingQuantizer) quantizes act_out rowwise, saves it so,
    and the backward's update_usage(columnwise_usage=True) transposes the
    bytes. On Blackwell the one data buffer serves both usages anyway."""
    return recipe in ("fp8-delayed", "fp8-current") and arch == "hopper"


# ---------------------------------------------------------------------------
# Grid, IR generation and comparison
# ---------------------------------------------------------------------------

SHAPES = {  # name: (leading dims with None for dynamic, K)
    "aligned_2d": ([256], 128),
    "unaligned_rows": ([24], 128),
    "unaligned_cols": ([256], 48),
    "3d": ([2, 128], 128),
    "dynamic_batch": ([None], 128),
    "dynamic_batch_3d": ([None, 64], 128),
}
N_OUT, FFN = 256, 256
DYN_VALUES = [1, 2, 4, 6]


def mlir_dims(dims):
    return "x".join("?" if d is None else str(d) for d in dims)


def make_ops(recipe_attr):
    """Yields (label, op kind, returns_norm, gated, mlir text, lead, K)."""
    for (shape_name, (lead, k)), (op, ret, act) in itertools.product(
            SHAPES.items(),
            [("layernorm_linear", False, None), ("layernorm_linear", True, None),
             ("layernorm_mlp", False, "gelu"), ("layernorm_mlp", True, "swiglu"),
             ("linear", False, None)]):
        x = f"tensor<{mlir_dims(lead + [k])}xbf16>"
        gated = act == "swiglu"
        f1 = 2 * FFN if gated else FFN
        label = f"{shape_name}/{op}{'/retnorm' if ret else ''}{'/' + act if act else ''}"
        if op == "linear":
            w = f"tensor<{N_OUT}x{k}xbf16>"
            y = f"tensor<{mlir_dims(lead + [N_OUT])}xbf16>"
            text = (f"%r = te.linear %x weight(%w) recipe({recipe_attr}) : ({x}, {w}) -> {y}")
            args = f"%x: {x}, %w: {w}"
        elif op == "layernorm_linear":
            w = f"tensor<{N_OUT}x{k}xbf16>"
            y = f"tensor<{mlir_dims(lead + [N_OUT])}xbf16>"
            res = f"({y}, {x})" if ret else y
            names = "%r, %ln" if ret else "%r"
            attr = " {return_layernorm_output}" if ret else ""
            text = (f"{names} = te.layernorm_linear %x norm layer_norm(%g) weight(%w) "
                    f"recipe({recipe_attr}){attr} : ({x}, tensor<{k}xbf16>, {w}) -> {res}")
            args = f"%x: {x}, %g: tensor<{k}xbf16>, %w: {w}"
        else:
            w1 = f"tensor<{f1}x{k}xbf16>"
            w2 = f"tensor<{k}x{FFN}xbf16>"
            res = f"({x}, {x})" if ret else x
            names = "%r, %ln" if ret else "%r"
            attr = " {return_layernorm_output}" if ret else ""
            text = (f"{names} = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act {act} fc2(%w2) "
                    f"recipe({recipe_attr}){attr} : ({x}, tensor<{k}xbf16>, {w1}, {w2}) -> {res}")
            args = f"%x: {x}, %g: tensor<{k}xbf16>, %w1: {w1}, %w2: {w2}"
        yield label, op, gated, f"func.func @f{{i}}({args}) {{\n  {text}\n  return\n}}\n", lead, k


def evaluate(dim, d):
    """A te-describe size: an int, or an expression over d<i>."""
    if isinstance(dim, int):
        return dim
    env = {"roundup": roundup, "ceildiv": ceildiv, "__builtins__": {}}
    env.update({f"d{i}": v for i, v in d.items()})
    # Exact divisions are integral by construction; evaluate with //.
    return eval(dim.replace("/", "//"), env)


def concrete(lead, value):
    return [value if x is None else x for x in lead]


def check(te_opt, workdir, verbose):
    cells = mismatches = 0
    for recipe_key, recipe_attr in RECIPE_ATTR.items():
        recipe = "nvfp4" if recipe_key.startswith("nvfp4") else recipe_key
        row_scaled = recipe_key == "nvfp4-rs"
        cases = list(make_ops(recipe_attr))
        text = "".join(c[3].replace("{i}", str(i)) for i, c in enumerate(cases))
        path = os.path.join(workdir, f"grid_{recipe_key}.mlir")
        with open(path, "w") as fh:
            fh.write(text)
        for arch, mode in itertools.product(["hopper", "blackwell"], ["training", "inference"]):
            proc = subprocess.run(
                [te_opt, path, f"--te-describe=arch={arch} mode={mode}", "-o", os.devnull],
                capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"te-opt failed on {path} ({arch}, {mode}):\n{proc.stderr}")
                return 1, 1
            records = json.loads(proc.stdout)
            assert len(records) == len(cases), (len(records), len(cases))
            training = mode == "training"
            fwd_fmt, bwd_fmt = formats(recipe_key)
            for (label, op, gated, _, lead, k), rec in zip(cases, records):
                f1 = 2 * FFN if gated else FFN
                n = N_OUT if op != "layernorm_mlp" else k
                errors = []
                for value in DYN_VALUES if None in lead else [None]:
                    cells += 1
                    cl = concrete(lead, value)
                    d = {i: value for i, x in enumerate(lead) if x is None}
                    fwd, bwd = gemm_operands(op, cl, k, n, f1, FFN, training)
                    sym_fwd, sym_bwd = gemm_operands(op, list(lead), k, n, f1, FFN, training)
                    rows, cols = ALIGN[recipe]
                    # Only static dims can force a fallback; a dynamic token
                    # count is checked at run time.
                    fallback = False
                    for _, _, shape in sym_fwd + sym_bwd:
                        lead_dims, last = shape[:-1], shape[-1]
                        if None not in lead_dims and math.prod(lead_dims) % rows:
                            fallback = True
                        if last % cols:
                            fallback = True
                    want_recipe = "bf16" if fallback else recipe
                    if rec["effective_recipe"] != want_recipe:
                        errors.append(f"effective_recipe {rec['effective_recipe']} != {want_recipe}")
                        continue
                    hp_bwd = row_scaled
                    want_q = []
                    if not fallback:
                        usage = "both" if training and not hp_bwd else "rowwise"
                        for name, role, shape in fwd:
                            u = usage
                            if (name == "act_out" and training and
                                    act_out_rowwise(recipe, arch)):
                                u = "rowwise"
                            want_q.append((name, role, shape, u))
                        if not hp_bwd:
                            for name, role, shape in bwd:
                                want_q.append((name, role, shape, "both"))
                    got_q = rec["quantized"]
                    if [q["name"] for q in got_q] != [w[0] for w in want_q]:
                        errors.append(f"quantized {[q['name'] for q in got_q]} != {[w[0] for w in want_q]}")
                        continue

                    def expect_inner(role, shape, usage):
                        b2d = recipe == "fp8-block" and role == "weight"  # w_block_dim = 2
                        rs = row_scaled and role == "activation" and usage != "columnwise"
                        return inner_tensors(recipe, shape, usage, arch, b2d, rs)

                    def got_inner(entry):
                        return [(t["name"], [evaluate(x, d) for x in t["shape"]], t["dtype"])
                                for t in entry["inner"]]

                    for q, (name, role, shape, usage) in zip(got_q, want_q):
                        fmt = bwd_fmt if role == "grad" else fwd_fmt
                        if (q["role"], q["usage"], q["dtype"]) != (role, usage, fmt):
                            errors.append(f"{name}: role/usage/format {(q['role'], q['usage'], q['dtype'])} != {(role, usage, fmt)}")
                        exp, got = expect_inner(role, shape, usage), got_inner(q)
                        if exp != got:
                            errors.append(f"{name}: inner {got} != {exp}")
                    # Saved quantized tensors: columnwise copies (training, not
                    # checkpointed, quantized backward).
                    got_saved = {s["name"]: s for s in rec["saved"] if "inner" in s}
                    want_saved = {}
                    if training and not fallback and not hp_bwd:
                        for name, role, shape in fwd:
                            kept = saved_quantized(op, recipe, arch)
                            if name in kept:
                                want_saved[name] = (role, shape, kept[name])
                    if sorted(got_saved) != sorted(want_saved):
                        errors.append(f"saved quantized {sorted(got_saved)} != {sorted(want_saved)}")
                    # The backward's transient: act_out's transpose.
                    want_bwd_ws = 0
                    if want_saved.get("act_out", (0, 0, ""))[2] == "rowwise":
                        want_bwd_ws = math.prod(want_saved["act_out"][1])
                    got_bwd_ws = evaluate(rec.get("backward_workspace_bytes", 0), d)
                    if got_bwd_ws != want_bwd_ws:
                        errors.append(f"backward_workspace_bytes {got_bwd_ws} != {want_bwd_ws}")
                    for name, (role, shape, usage) in want_saved.items():
                        if name in got_saved:
                            exp = expect_inner(role, shape, usage)
                            got = got_inner(got_saved[name])
                            if exp != got:
                                errors.append(f"saved {name}: inner {got} != {exp}")
                if errors:
                    mismatches += 1
                    print(f"MISMATCH {recipe_key} {arch} {mode} {label}:")
                    for e in errors[:6]:
                        print("   ", e)
                elif verbose:
                    print(f"ok {recipe_key} {arch} {mode} {label}")
    return cells, mismatches


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--te-opt", required=True)
    ap.add_argument("--workdir")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="te-fake-")
    os.makedirs(workdir, exist_ok=True)
    cells, mismatches = check(args.te_opt, workdir, args.verbose)
    print(f"check_fake_tensors: {cells} cells checked, {mismatches} op records mismatched")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
