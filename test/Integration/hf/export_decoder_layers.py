#!/usr/bin/env python3
"""Export whole decoder layers (attention + norms + MLP) of Hugging Face models to
torch-mlir IR, for the partial-raising tests (docs/partition.md).

    /work/venv-gold/bin/python test/Integration/hf/export_decoder_layers.py --out test/Conversion/TorchToTE/Inputs/layers

Requirements: torch==2.14.1 torch-mlir==20261001 transformers==5.24.0 numpy ml_dtypes.

Each layer is built with a fixed seed and a tiny config (hidden 32, 2 heads, 4 tokens),
eager attention, no mask, no cache. Like test/Integration/golden/make_goldens.py's ArgsWrapper, the export
takes x (and, for LLaMA and Qwen3, the rotary cos/sin) and then EVERY parameter as function
arguments, in `named_parameters()` order: nothing is frozen, so each file stays small.

Files written, per layer NAME in {gpt2_block, llama_layer, qwen3_layer} (--layers picks
some) and DTYPE in {f32, bf16}:
    NAME.DTYPE.mlir        fx.export_and_import(wrapper, *args, output_type="raw",
                           func_name="main"), with a `//` header naming the call
    NAME.DTYPE.mlp/        the MLP sub-block of the layer, as PyTorch runs it inside the
                           layer (captured with forward hooks): the post-attention norm
                           + MLP, which te-import-torch raises to te.layernorm_mlp:
        arg<i>.npy         the inputs in the order of the te.layernorm_mlp entry:
                           x (the norm's input), gamma, [beta], FC1 weight(s) and
                           bias(es), FC2 weight and bias, as the layer's parameters are
                           passed to the export (see `mlp_args` below)
        result0.npy        the MLP's output
    llama_layer.DTYPE.down_proj/   LLaMA's down_proj alone (te.linear): arg0 its input,
                           arg1 its weight, result0 its output
    (bf16 tensors as uint16 bits, `.bf16.npy`: test/Integration/Inputs/README.md.)
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "Conversion", "TorchToTE"))
from export_torch import versions  # noqa: E402  (the header's tool versions)


class LayerWrapper(nn.Module):
    """forward(*inputs, *params) == layer(*inputs) with the given parameter values."""

    def __init__(self, layer: nn.Module, call):
        super().__init__()
        object.__setattr__(self, "_layer", layer)
        object.__setattr__(self, "_call", call)
        self._names = [n for n, _ in layer.named_parameters()]

    def forward(self, *args):
        n = len(args) - len(self._names)
        params = dict(zip(self._names, args[n:]))
        return torch.func.functional_call(
            self._layer, params, args=(), kwargs=self._call(*args[:n]))


def gpt2(dtype):
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    cfg = GPT2Config(n_embd=32, n_head=2, n_positions=16, n_layer=1,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    cfg._attn_implementation = "eager"
    layer = GPT2Block(cfg, layer_idx=0)
    x = torch.randn(1, 4, 32)
    # GPT2Block returns a tuple in older releases, the hidden states in newer ones.
    call = lambda x: {"hidden_states": x}
    wrap = LayerWrapper(layer, call)

    def out_of(o):
        return o[0] if isinstance(o, tuple) else o

    # ln_2 + mlp: LayerNormMLP(x, ln_2.weight, ln_2.bias, c_fc.weight, c_fc.bias,
    # c_proj.weight, c_proj.bias); GPT-2's Conv1D weights are [in, out], passed as is
    # (the raised region transposes them).
    mlp_params = ["ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                  "mlp.c_proj.weight", "mlp.c_proj.bias"]
    return layer, wrap, [x], out_of, layer.ln_2, layer.mlp, mlp_params


def llama(dtype):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import (LlamaDecoderLayer,
                                                          LlamaRotaryEmbedding)

    cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_attention_heads=2,
                      num_key_value_heads=1, head_dim=16, max_position_embeddings=16,
                      num_hidden_layers=1, rms_norm_eps=1e-6)
    cfg._attn_implementation = "eager"
    layer = LlamaDecoderLayer(cfg, layer_idx=0)
    # RMSNorm weights start at one: perturb them so that gamma matters.
    with torch.no_grad():
        for norm in (layer.input_layernorm, layer.post_attention_layernorm):
            norm.weight.add_(0.1 * torch.randn_like(norm.weight))
    x = torch.randn(1, 4, 32)
    pos = torch.arange(4).unsqueeze(0)
    cos, sin = LlamaRotaryEmbedding(cfg)(x, pos)
    call = lambda x, cos, sin: {"hidden_states": x, "position_embeddings": (cos, sin)}
    wrap = LayerWrapper(layer, call)

    def out_of(o):
        return o[0] if isinstance(o, tuple) else o

    # post_attention_layernorm + mlp: LayerNormMLP(x, gamma, fc1 = [gate; up], fc2).
    mlp_params = ["post_attention_layernorm.weight", "mlp.gate_proj.weight",
                  "mlp.up_proj.weight", "mlp.down_proj.weight"]
    return layer, wrap, [x, cos, sin], out_of, layer.post_attention_layernorm, layer.mlp, \
        mlp_params


def qwen3(dtype):
    from transformers import Qwen3Config
    from transformers.models.qwen3.modeling_qwen3 import (Qwen3DecoderLayer,
                                                          Qwen3RotaryEmbedding)

    cfg = Qwen3Config(hidden_size=32, intermediate_size=64, num_attention_heads=2,
                      num_key_value_heads=1, head_dim=16, max_position_embeddings=16,
                      num_hidden_layers=1, rms_norm_eps=1e-6)
    cfg._attn_implementation = "eager"
    layer = Qwen3DecoderLayer(cfg, layer_idx=0)
    # RMSNorm weights (the layer's and the attention's q_norm / k_norm, per head) start
    # at one: perturb them so that gamma matters.
    with torch.no_grad():
        for norm in (layer.input_layernorm, layer.post_attention_layernorm,
                     layer.self_attn.q_norm, layer.self_attn.k_norm):
            norm.weight.add_(0.1 * torch.randn_like(norm.weight))
    x = torch.randn(1, 4, 32)
    pos = torch.arange(4).unsqueeze(0)
    cos, sin = Qwen3RotaryEmbedding(cfg)(x, pos)
    call = lambda x, cos, sin: {"hidden_states": x, "position_embeddings": (cos, sin),
                                "attention_mask": None}
    wrap = LayerWrapper(layer, call)

    def out_of(o):
        return o[0] if isinstance(o, tuple) else o

    # post_attention_layernorm + mlp: LayerNormMLP(x, gamma, fc1 = [gate; up], fc2).
    mlp_params = ["post_attention_layernorm.weight", "mlp.gate_proj.weight",
                  "mlp.up_proj.weight", "mlp.down_proj.weight"]
    return layer, wrap, [x, cos, sin], out_of, layer.post_attention_layernorm, layer.mlp, \
        mlp_params


LAYERS = {"gpt2_block": gpt2, "llama_layer": llama, "qwen3_layer": qwen3}


def save(path: str, t: torch.Tensor):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        np.save(path + ".bf16.npy", t.view(torch.int16).numpy().view(np.uint16))
    else:
        np.save(path + ".npy", t.float().numpy())


def export(name, build, dtype_name, out_dir):
    from torch_mlir import fx

    torch.manual_seed(0)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    layer, wrap, inputs, out_of, norm, mlp, mlp_params = build(dtype)
    layer = layer.to(dtype).eval()
    inputs = [i.to(dtype) for i in inputs]
    params = [p.detach() for _, p in layer.named_parameters()]
    names = [n for n, _ in layer.named_parameters()]
    args = inputs + params

    # The MLP sub-block's inputs and output inside the layer.
    xs, ys = [], []
    h1 = norm.register_forward_hook(lambda m, i, o: xs.append(i[0].detach().clone()))
    h2 = mlp.register_forward_hook(lambda m, i, o: ys.append(o.detach().clone()))
    with torch.no_grad():
        out_of(wrap(*args))
    h1.remove()
    h2.remove()
    assert len(xs) == 1 and len(ys) == 1, (len(xs), len(ys))
    seen = {"x": xs[0], "y": ys[0]}
    with torch.no_grad():  # the sub-block alone on the captured input: the same
        again = mlp(norm(seen["x"]))
    assert torch.equal(again, seen["y"]), (again - seen["y"]).abs().max()

    with torch.no_grad():
        module = fx.export_and_import(wrap, *args, output_type="raw", func_name="main")
    sig = ", ".join(f"{n}{list(a.shape)}" for n, a in
                    zip(["x", "cos", "sin"][:len(inputs)] + names, args))
    text = str(module)
    head = (f"// Generated by test/Integration/hf/export_decoder_layers.py -- do not edit; regenerate.\n"
            f"// {name} {dtype_name}: @main({sig})\n"
            f"// fx.export_and_import(LayerWrapper(layer), *inputs, *params, "
            f'output_type="raw", func_name="main")\n'
            f"// {versions()}\n")
    path = os.path.join(out_dir, f"{name}.{dtype_name}.mlir")
    with open(path, "w") as f:
        f.write(head + text + ("" if text.endswith("\n") else "\n"))
    size = os.path.getsize(path)
    assert size < 100_000, f"{path}: {size} bytes"

    mdir = os.path.join(out_dir, f"{name}.{dtype_name}.mlp")
    os.makedirs(mdir, exist_ok=True)
    by_name = dict(layer.named_parameters())
    mlp_in = [seen["x"]] + [by_name[n] for n in mlp_params]
    for i, t in enumerate(mlp_in):
        save(os.path.join(mdir, f"arg{i}"), t)
    save(os.path.join(mdir, "result0"), seen["y"])
    print(f"{path}: {size} bytes; {mdir}: {len(mlp_in)} args")

    # LLaMA's down_proj alone (a te.linear in every dtype: bf16 too, where the
    # cast-wrapped RMSNorm and SiLU are not raised yet).
    if name == "llama_layer":
        lin = layer.mlp.down_proj
        xs, ys = [], []
        def hook(m, i, o):  # returns None: the output stays
            xs.append(i[0].detach().clone())
            ys.append(o.detach().clone())

        h = lin.register_forward_hook(hook)
        with torch.no_grad():
            wrap(*args)
        h.remove()
        ddir = os.path.join(out_dir, f"{name}.{dtype_name}.down_proj")
        os.makedirs(ddir, exist_ok=True)
        save(os.path.join(ddir, "arg0"), xs[0])
        save(os.path.join(ddir, "arg1"), lin.weight)
        save(os.path.join(ddir, "result0"), ys[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", default=",".join(LAYERS),
                    help="comma-separated subset of " + ", ".join(LAYERS))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    for name in a.layers.split(","):
        for dtype in ("f32", "bf16"):
            export(name, LAYERS[name], dtype, a.out)


if __name__ == "__main__":
    main()
