#!/usr/bin/env python3
"""Export the spellings of norms and activations that Hugging Face models really
produce, one small norm + MLP block each, for test/Conversion/TorchToTE/te-import-torch-hf-forms.mlir.

Each block is the model's own modules (transformers 5.24, random init, hidden 16,
FFN 32) or, for the activation spellings, a LayerNorm + MLP with the activation
written out as in transformers' activations.py / BLOOM's modeling code; the last
two are near misses that must NOT raise (a tanh GELU with 0.0447, x*sigmoid(2x)).
Parameters are function arguments.

Usage: /path/to/python test/Integration/hf/export_hf_forms.py --out test/Conversion/TorchToTE/Inputs/hf_forms
Requirements: torch==2.14.1 torch-mlir==20261001 transformers==5.24.0 ml_dtypes
"""
import argparse
import math
import os
import sys

import torch
import transformers as T
from torch_mlir import fx

torch.manual_seed(0)
H, F = 16, 32
class Wrap(torch.nn.Module):
    def __init__(s, m): super().__init__(); s.m = m; s.names = [n for n, _ in m.named_parameters()]
    def forward(s, x, *ps): return torch.func.functional_call(s.m, dict(zip(s.names, ps)), (x,))
def gelu_bloom(x): return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))
def gelu_fast(x): return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))
def gelu_python(x): return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
def gelu_bad(x): return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.0447 * torch.pow(x, 3.0))))
def silu_bad(x): return x * torch.sigmoid(2 * x)
class LnMlp(torch.nn.Module):
    def __init__(s, act): super().__init__(); s.ln = torch.nn.LayerNorm(H); s.fc1 = torch.nn.Linear(H, F); s.fc2 = torch.nn.Linear(F, H); s.act = act
    def forward(s, x): return s.fc2(s.act(s.fc1(s.ln(x))))
def mk(name):
    m = T.models
    if name == "llama": c=T.LlamaConfig(hidden_size=H,intermediate_size=F,num_attention_heads=2,num_key_value_heads=1,num_hidden_layers=1); L=m.llama.modeling_llama.LlamaDecoderLayer(c,0); return torch.nn.Sequential(L.post_attention_layernorm, L.mlp)
    if name == "gemma": c=T.GemmaConfig(hidden_size=H,intermediate_size=F,num_attention_heads=2,num_key_value_heads=1,head_dim=8,num_hidden_layers=1); L=m.gemma.modeling_gemma.GemmaDecoderLayer(c,0); return torch.nn.Sequential(L.post_attention_layernorm, L.mlp)
    if name == "t5g": c=T.T5Config(d_model=H,d_ff=F,num_heads=2,d_kv=8,num_layers=1,feed_forward_proj="gated-gelu"); L=m.t5.modeling_t5.T5LayerFF(c); return torch.nn.Sequential(L.layer_norm, L.DenseReluDense)
    if name == "cohere": c=T.CohereConfig(hidden_size=H,intermediate_size=F,num_attention_heads=2,num_key_value_heads=1,num_hidden_layers=1); L=m.cohere.modeling_cohere.CohereDecoderLayer(c,0); return torch.nn.Sequential(L.input_layernorm, L.mlp)
    if name == "gpt2": c=T.GPT2Config(n_embd=H,n_inner=F,n_head=2,n_layer=1); L=m.gpt2.modeling_gpt2.GPT2Block(c,0); return torch.nn.Sequential(L.ln_2, L.mlp)
    return LnMlp({"bloom": gelu_bloom, "fast": gelu_fast, "python": gelu_python, "badgelu": gelu_bad, "badsilu": silu_bad}[name])
CASES = [
    ("llama", "bfloat16", "raw"), ("llama", "bfloat16", "torch"), ("gemma", "bfloat16", "raw"),
    ("t5g", "bfloat16", "raw"), ("cohere", "float32", "torch"), ("cohere", "bfloat16", "raw"),
    ("gpt2", "bfloat16", "raw"), ("bloom", "float32", "raw"), ("fast", "bfloat16", "raw"),
    ("python", "float32", "raw"), ("badgelu", "float32", "raw"), ("badsilu", "float32", "raw"),
]


def export(name, dtype, form):
    torch.manual_seed(0)
    dt = getattr(torch, dtype)
    m = mk(name).to(dt).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn(p.shape, dtype=p.dtype) * 0.1)
    x = torch.randn(4, H, dtype=dt)
    kw = {} if form == "raw" else {"output_type": form}
    return str(fx.export_and_import(Wrap(m), x, *[p.detach() for p in m.parameters()],
                                    func_name=name, **kw))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="test/Conversion/TorchToTE/Inputs/hf_forms")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, dtype, form in CASES:
        stem = f"{name}.{dtype}.{form}"
        with open(os.path.join(args.out, stem + ".mlir"), "w") as f:
            f.write(f"// {stem}: test/Integration/hf/export_hf_forms.py (transformers {T.__version__}, "
                    f"torch {torch.__version__})\n")
            f.write(export(name, dtype, form))
            f.write("\n")
        print("wrote", stem)


if __name__ == "__main__":
    main()
