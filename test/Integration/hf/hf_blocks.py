#!/usr/bin/env python3
"""Norm + MLP and norm + linear sub-blocks of Hugging Face `transformers` layers, for
real-export tests of te-import-torch (issue #19).

Every block is built from the architecture's own config and layer classes with random
init (tiny: hidden 32, intermediate 64, 4 heads, one layer), then every parameter that
its class initialises to a constant (norm weights 1 or 0, biases 0) is perturbed like
test/Conversion/TorchToTE/export_torch.py's _perturb_constant_params, so a test can tell weight from bias.
The sub-block calls the layer's own modules in the order the layer's forward calls them
(the code that runs is transformers' code); what it includes around the MLP (a post-MLP
norm, a scalar multiplier, a residual add) is said per architecture below.

Two blocks per architecture:
  mlp     the norm that precedes the MLP in the layer, then the MLP (as the layer runs it)
  linear  the attention input norm, then the first projection (q_proj, or the fused QKV
          projection where the model has one)

The parameters are function ARGUMENTS of the export (make_goldens.ArgsWrapper), in the
sub-block's named_parameters() order, so a test can check the gradient of every one.

Sizes: x [2, 4, 32] (batch, seq, hidden); hidden 32, intermediate 64 (BLOOM's MLP is
fixed at 4*hidden = 128), heads 4 (head_dim 8), kv heads 2 where the architecture has
GQA.  These are "tiny" on purpose: a checked-in golden case (model.mlir + args + goldens)
stays well under 150 KB.

Negative blocks (NEGATIVES) are near misses that must NOT raise: a tanh GELU with a wrong
constant, an RMSNorm over the wrong dimension, a SiLU written as x * sigmoid(2x), ...

Used by test/Integration/hf/hf_models.py (the harness) and test/Conversion/TorchToTE/export_torch.py --hf (exports only).
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# export_torch (the importer tests' exporter) and make_goldens (the golden cases' layout)
# live beside the tests that use their outputs.
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
for _d in ("test/Conversion/TorchToTE", "test/Integration/golden"):
    if os.path.join(REPO, _d) not in sys.path:
        sys.path.insert(0, os.path.join(REPO, _d))

from export_torch import _perturb_constant_params, hl_decomposition_table, versions  # noqa: E402
from make_goldens import ArgsWrapper  # noqa: E402

HIDDEN = 32
INTER = 64
HEADS = 4
KV_HEADS = 2
HEAD_DIM = HIDDEN // HEADS
VOCAB = 64
BATCH, SEQ = 2, 4
X_SHAPE = (BATCH, SEQ, HIDDEN)
SEED = 19  # issue #19


class SubBlock(nn.Module):
    """Holds the layer's own modules (registered under their attribute names, so that
    named_parameters() reads like the model's: `post_attention_layernorm.weight`,
    `mlp.gate_proj.weight`) and a forward function over them."""

    def __init__(self, fn: Callable, **modules: nn.Module):
        super().__init__()
        for k, m in modules.items():
            setattr(self, k, m)
        self._fn = fn

    def forward(self, x):
        return self._fn(self, x)


def _common(**kw):
    """Config kwargs shared by the decoder-only configs."""
    d = dict(hidden_size=HIDDEN, intermediate_size=INTER, num_attention_heads=HEADS,
             num_hidden_layers=1, vocab_size=VOCAB, max_position_embeddings=16)
    d.update(kw)
    return d


def _eager(cfg):
    try:
        cfg._attn_implementation = "eager"
    except Exception:
        pass
    return cfg


# --------------------------------------------------------------------------------------
# Architectures.  Each builder returns {"mlp": SubBlock, "linear": SubBlock}.
# --------------------------------------------------------------------------------------


def _llama_like(cfg_cls, layer_cls, **kw):
    """LLaMA-style pre-norm decoder layer: input_layernorm -> self_attn.q_proj;
    post_attention_layernorm -> mlp.  Residual adds are in the layer's forward, outside
    the sub-block (excluded)."""
    cfg = _eager(cfg_cls(**_common(**kw)))
    layer = layer_cls(cfg, layer_idx=0)
    mlp = SubBlock(lambda s, x: s.mlp(s.post_attention_layernorm(x)),
                   post_attention_layernorm=layer.post_attention_layernorm, mlp=layer.mlp)
    lin = SubBlock(lambda s, x: s.q_proj(s.input_layernorm(x)),
                   input_layernorm=layer.input_layernorm, q_proj=layer.self_attn.q_proj)
    return {"mlp": mlp, "linear": lin}


def build_gpt2():
    # GPT2Block: ln_1 -> attn.c_attn (Conv1D, fused QKV); ln_2 -> mlp (Conv1D c_fc,
    # gelu_new, Conv1D c_proj, dropout).  Residual adds in GPT2Block.forward: excluded.
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    cfg = _eager(GPT2Config(n_embd=HIDDEN, n_layer=1, n_head=HEADS, n_inner=INTER,
                            vocab_size=VOCAB, n_positions=16, resid_pdrop=0.0,
                            embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                            eos_token_id=1))
    layer = GPT2Block(cfg, layer_idx=0)
    return {"mlp": SubBlock(lambda s, x: s.mlp(s.ln_2(x)), ln_2=layer.ln_2, mlp=layer.mlp),
            "linear": SubBlock(lambda s, x: s.c_attn(s.ln_1(x)), ln_1=layer.ln_1,
                               c_attn=layer.attn.c_attn)}


def build_gpt_neox():
    # GPTNeoXLayer (use_parallel_residual=True, the default): input_layernorm ->
    # attention.query_key_value (fused QKV); the MLP reads post_attention_layernorm(x) of
    # the layer INPUT x (parallel residual): post_attention_layernorm -> mlp.  The
    # x + attn + mlp sum is in the layer: excluded.
    from transformers import GPTNeoXConfig
    from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXLayer

    cfg = _eager(GPTNeoXConfig(**_common(hidden_act="gelu", rotary_pct=0.25,
                                         hidden_dropout=0.0, attention_dropout=0.0)))
    layer = GPTNeoXLayer(cfg, layer_idx=0)
    return {"mlp": SubBlock(lambda s, x: s.mlp(s.post_attention_layernorm(x)),
                            post_attention_layernorm=layer.post_attention_layernorm,
                            mlp=layer.mlp),
            "linear": SubBlock(lambda s, x: s.query_key_value(s.input_layernorm(x)),
                               input_layernorm=layer.input_layernorm,
                               query_key_value=layer.attention.query_key_value)}


def build_opt():
    # OPTDecoderLayer (do_layer_norm_before=True): self_attn_layer_norm -> self_attn.q_proj;
    # the MLP is inlined in the layer's forward: final_layer_norm -> fc1 -> activation_fn
    # (relu) -> fc2 -> dropout.  Residual add: excluded.
    from transformers import OPTConfig
    from transformers.models.opt.modeling_opt import OPTDecoderLayer

    cfg = _eager(OPTConfig(hidden_size=HIDDEN, ffn_dim=INTER, num_attention_heads=HEADS,
                           num_hidden_layers=1, vocab_size=VOCAB, word_embed_proj_dim=HIDDEN,
                           max_position_embeddings=16, activation_function="relu",
                           dropout=0.0, attention_dropout=0.0, do_layer_norm_before=True))
    layer = OPTDecoderLayer(cfg, layer_idx=0)

    def mlp(s, x):
        h = s.final_layer_norm(x)
        h = s.fc1(h)
        h = s.activation_fn(h)
        h = s.fc2(h)
        return F.dropout(h, p=0.0, training=False)

    return {"mlp": SubBlock(mlp, final_layer_norm=layer.final_layer_norm, fc1=layer.fc1,
                            activation_fn=layer.activation_fn, fc2=layer.fc2),
            "linear": SubBlock(lambda s, x: s.q_proj(s.self_attn_layer_norm(x)),
                               self_attn_layer_norm=layer.self_attn_layer_norm,
                               q_proj=layer.self_attn.q_proj)}


def build_bloom():
    # BloomBlock: input_layernorm -> self_attention.query_key_value (fused QKV);
    # post_attention_layernorm -> mlp(ln_out, residual).  BloomMLP.forward adds the
    # residual itself (dropout_add), so the residual add is INCLUDED: with
    # apply_residual_connection_post_layernorm=False (default) residual = the MLP
    # block's input x.  MLP: dense_h_to_4h (4*hidden) -> BloomGelu (tanh form written
    # as x*0.5*(1+tanh(0.79788456*x*(1+0.044715*x*x)))) -> dense_4h_to_h.
    from transformers import BloomConfig
    from transformers.models.bloom.modeling_bloom import BloomBlock

    cfg = _eager(BloomConfig(hidden_size=HIDDEN, n_head=HEADS, n_layer=1, vocab_size=VOCAB,
                             hidden_dropout=0.0, attention_dropout=0.0))
    layer = BloomBlock(cfg, layer_idx=0)
    return {"mlp": SubBlock(lambda s, x: s.mlp(s.post_attention_layernorm(x), x),
                            post_attention_layernorm=layer.post_attention_layernorm,
                            mlp=layer.mlp),
            "linear": SubBlock(lambda s, x: s.query_key_value(s.input_layernorm(x)),
                               input_layernorm=layer.input_layernorm,
                               query_key_value=layer.self_attention.query_key_value)}


def build_llama():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    return _llama_like(LlamaConfig, LlamaDecoderLayer, num_key_value_heads=KV_HEADS,
                       hidden_act="silu", rms_norm_eps=1e-6)


def build_mistral():
    from transformers import MistralConfig
    from transformers.models.mistral.modeling_mistral import MistralDecoderLayer

    return _llama_like(MistralConfig, MistralDecoderLayer, num_key_value_heads=KV_HEADS,
                       head_dim=HEAD_DIM, hidden_act="silu", rms_norm_eps=1e-5)


def build_qwen2():
    # Qwen2: q_proj has a bias.
    from transformers import Qwen2Config
    from transformers.models.qwen2.modeling_qwen2 import Qwen2DecoderLayer

    return _llama_like(Qwen2Config, Qwen2DecoderLayer, num_key_value_heads=KV_HEADS,
                       hidden_act="silu", rms_norm_eps=1e-6)


def build_qwen3():
    # Qwen3: q_proj is followed by q_norm (per head) in the attention; the sub-block stops
    # at q_proj (the first projection).
    from transformers import Qwen3Config
    from transformers.models.qwen3.modeling_qwen3 import Qwen3DecoderLayer

    return _llama_like(Qwen3Config, Qwen3DecoderLayer, num_key_value_heads=KV_HEADS,
                       head_dim=HEAD_DIM, hidden_act="silu", rms_norm_eps=1e-6)


def build_gemma():
    # GemmaRMSNorm: fp32 math, output * (1 + weight) (zero-centered gamma); GemmaMLP:
    # gelu_pytorch_tanh(gate) * up -> down (GeGLU).
    from transformers import GemmaConfig
    from transformers.models.gemma.modeling_gemma import GemmaDecoderLayer

    return _llama_like(GemmaConfig, GemmaDecoderLayer, num_key_value_heads=KV_HEADS,
                       head_dim=HEAD_DIM, hidden_act="gelu_pytorch_tanh",
                       hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6)


def build_gemma2():
    # Gemma2DecoderLayer: pre_feedforward_layernorm -> mlp -> post_feedforward_layernorm,
    # then the residual add (in the layer: excluded).  The post-MLP norm is INCLUDED, as
    # the layer computes it.  Attention input: input_layernorm -> q_proj.
    from transformers import Gemma2Config
    from transformers.models.gemma2.modeling_gemma2 import Gemma2DecoderLayer

    cfg = _eager(Gemma2Config(**_common(num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM,
                                        hidden_activation="gelu_pytorch_tanh",
                                        rms_norm_eps=1e-6, sliding_window=16)))
    layer = Gemma2DecoderLayer(cfg, layer_idx=0)
    mlp = SubBlock(lambda s, x: s.post_feedforward_layernorm(s.mlp(s.pre_feedforward_layernorm(x))),
                   pre_feedforward_layernorm=layer.pre_feedforward_layernorm, mlp=layer.mlp,
                   post_feedforward_layernorm=layer.post_feedforward_layernorm)
    lin = SubBlock(lambda s, x: s.q_proj(s.input_layernorm(x)),
                   input_layernorm=layer.input_layernorm, q_proj=layer.self_attn.q_proj)
    return {"mlp": mlp, "linear": lin}


def build_gemma3():
    # Gemma3DecoderLayer (text): as Gemma 2, pre_feedforward_layernorm -> mlp ->
    # post_feedforward_layernorm INCLUDED, residual add excluded; input_layernorm -> q_proj
    # (q_norm follows q_proj in the attention; the sub-block stops at q_proj).
    from transformers import Gemma3TextConfig
    from transformers.models.gemma3.modeling_gemma3 import Gemma3DecoderLayer

    cfg = _eager(Gemma3TextConfig(**_common(num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM,
                                            hidden_activation="gelu_pytorch_tanh",
                                            rms_norm_eps=1e-6, sliding_window=16)))
    layer = Gemma3DecoderLayer(cfg, layer_idx=0)
    mlp = SubBlock(lambda s, x: s.post_feedforward_layernorm(s.mlp(s.pre_feedforward_layernorm(x))),
                   pre_feedforward_layernorm=layer.pre_feedforward_layernorm, mlp=layer.mlp,
                   post_feedforward_layernorm=layer.post_feedforward_layernorm)
    lin = SubBlock(lambda s, x: s.q_proj(s.input_layernorm(x)),
                   input_layernorm=layer.input_layernorm, q_proj=layer.self_attn.q_proj)
    return {"mlp": mlp, "linear": lin}


def build_phi3():
    # Phi3DecoderLayer: input_layernorm -> self_attn.qkv_proj (fused QKV);
    # post_attention_layernorm -> mlp (fused gate_up_proj, chunk(2), up * silu(gate),
    # down_proj); resid dropouts are identities in eval.  Residual add: excluded.
    from transformers import Phi3Config
    from transformers.models.phi3.modeling_phi3 import Phi3DecoderLayer

    cfg = _eager(Phi3Config(**_common(num_key_value_heads=KV_HEADS, hidden_act="silu",
                                      rms_norm_eps=1e-5, resid_pdrop=0.0, embd_pdrop=0.0,
                                      attention_dropout=0.0, pad_token_id=0,
                                      bos_token_id=1, eos_token_id=2)))
    layer = Phi3DecoderLayer(cfg, layer_idx=0)
    return {"mlp": SubBlock(lambda s, x: s.mlp(s.post_attention_layernorm(x)),
                            post_attention_layernorm=layer.post_attention_layernorm,
                            mlp=layer.mlp),
            "linear": SubBlock(lambda s, x: s.qkv_proj(s.input_layernorm(x)),
                               input_layernorm=layer.input_layernorm,
                               qkv_proj=layer.self_attn.qkv_proj)}


def _t5(ff_proj: str):
    # T5LayerFF (the model's own module): x + dropout(DenseReluDense(layer_norm(x))) --
    # the residual add is INCLUDED (T5LayerFF.forward does it).  T5LayerNorm: RMSNorm
    # without mean subtraction, variance in fp32, weight multiplied after casting back.
    # relu FF: wi -> relu -> wo; gated-gelu FF: gelu_new(wi_0) * wi_1 -> wo.
    # Linear block: T5LayerSelfAttention's layer_norm -> SelfAttention.q (no bias).
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5LayerFF, T5LayerSelfAttention

    cfg = T5Config(d_model=HIDDEN, d_ff=INTER, d_kv=HEAD_DIM, num_heads=HEADS, num_layers=1,
                   vocab_size=VOCAB, feed_forward_proj=ff_proj, dropout_rate=0.0,
                   layer_norm_epsilon=1e-6)
    _eager(cfg)
    ff = T5LayerFF(cfg)
    sa = T5LayerSelfAttention(cfg, has_relative_attention_bias=False, layer_idx=0)
    return {"mlp": SubBlock(lambda s, x: s.layer_ff(x), layer_ff=ff),
            "linear": SubBlock(lambda s, x: s.q(s.layer_norm(x)), layer_norm=sa.layer_norm,
                               q=sa.SelfAttention.q)}


def build_t5_relu():
    return _t5("relu")


def build_t5_gated_gelu():
    return _t5("gated-gelu")


def build_falcon():
    # FalconDecoderLayer, Falcon-7B style (new_decoder_architecture=False,
    # parallel_attn=True, bias=False): input_layernorm -> self_attention.query_key_value
    # (fused QKV, multi-query); the MLP reads the same input_layernorm output (parallel
    # attention): input_layernorm -> mlp (dense_h_to_4h, gelu, dense_4h_to_h).  The
    # x + attn + mlp sum is in the layer: excluded.
    from transformers import FalconConfig
    from transformers.models.falcon.modeling_falcon import FalconDecoderLayer

    cfg = _eager(FalconConfig(hidden_size=HIDDEN, num_attention_heads=HEADS,
                              num_hidden_layers=1, vocab_size=VOCAB, ffn_hidden_size=INTER,
                              new_decoder_architecture=False, parallel_attn=True, bias=False,
                              multi_query=True, hidden_dropout=0.0, attention_dropout=0.0))
    layer = FalconDecoderLayer(cfg, layer_idx=0)
    return {"mlp": SubBlock(lambda s, x: s.mlp(s.input_layernorm(x)),
                            input_layernorm=layer.input_layernorm, mlp=layer.mlp),
            "linear": SubBlock(lambda s, x: s.query_key_value(s.input_layernorm(x)),
                               input_layernorm=layer.input_layernorm,
                               query_key_value=layer.self_attention.query_key_value)}


def build_starcoder2():
    # Starcoder2: nn.LayerNorm with bias; MLP c_fc -> gelu_pytorch_tanh -> c_proj ->
    # dropout (biases: use_bias=True).  Residual add: excluded.
    from transformers import Starcoder2Config
    from transformers.models.starcoder2.modeling_starcoder2 import Starcoder2DecoderLayer

    return _llama_like(Starcoder2Config, Starcoder2DecoderLayer, num_key_value_heads=KV_HEADS,
                       hidden_act="gelu_pytorch_tanh", use_bias=True, norm_epsilon=1e-5,
                       residual_dropout=0.0, embedding_dropout=0.0, attention_dropout=0.0)


def build_cohere():
    # CohereDecoderLayer: parallel: input_layernorm (CohereLayerNorm: hand-written
    # LayerNorm in fp32, weight, NO bias) feeds both the attention (q_proj) and the MLP
    # (gate/up/down, silu).  x + attn + mlp in the layer: excluded.
    from transformers import CohereConfig
    from transformers.models.cohere.modeling_cohere import CohereDecoderLayer

    cfg = _eager(CohereConfig(**_common(num_key_value_heads=KV_HEADS, hidden_act="silu",
                                        layer_norm_eps=1e-5, use_qk_norm=False,
                                        pad_token_id=0, bos_token_id=1, eos_token_id=2)))
    layer = CohereDecoderLayer(cfg, layer_idx=0)
    return {"mlp": SubBlock(lambda s, x: s.mlp(s.input_layernorm(x)),
                            input_layernorm=layer.input_layernorm, mlp=layer.mlp),
            "linear": SubBlock(lambda s, x: s.q_proj(s.input_layernorm(x)),
                               input_layernorm=layer.input_layernorm,
                               q_proj=layer.self_attn.q_proj)}


def build_olmo():
    # OlmoLayerNorm: F.layer_norm in fp32 with NO weight and NO bias (non-parametric),
    # cast back.  LLaMA-style layer otherwise.
    from transformers import OlmoConfig
    from transformers.models.olmo.modeling_olmo import OlmoDecoderLayer

    return _llama_like(OlmoConfig, OlmoDecoderLayer, num_key_value_heads=KV_HEADS,
                       hidden_act="silu", pad_token_id=1, bos_token_id=None, eos_token_id=2)


def build_olmo2():
    # Olmo2DecoderLayer is post-norm: h = x + post_attention_layernorm(attn(x));
    # out = h + post_feedforward_layernorm(mlp(h)).  No norm precedes the MLP, so the
    # MLP block is mlp -> post_feedforward_layernorm (residual excluded).  No norm
    # precedes q_proj either; the attention's first projection is q_norm(q_proj(x))
    # (an RMSNorm over all heads AFTER the projection), built as the attention does.
    # Neither is a TE "norm then GEMM" block: the harness records what the importer does.
    from transformers import Olmo2Config
    from transformers.models.olmo2.modeling_olmo2 import Olmo2DecoderLayer

    cfg = _eager(Olmo2Config(**_common(num_key_value_heads=KV_HEADS, hidden_act="silu",
                                       rms_norm_eps=1e-6, pad_token_id=1, bos_token_id=None,
                                       eos_token_id=2)))
    layer = Olmo2DecoderLayer(cfg, layer_idx=0)
    return {"mlp": SubBlock(lambda s, x: s.post_feedforward_layernorm(s.mlp(x)), mlp=layer.mlp,
                            post_feedforward_layernorm=layer.post_feedforward_layernorm),
            "linear": SubBlock(lambda s, x: s.q_norm(s.q_proj(x)), q_proj=layer.self_attn.q_proj,
                               q_norm=layer.self_attn.q_norm)}


def build_granite():
    # GraniteDecoderLayer: out = residual + mlp(post_attention_layernorm(x)) *
    # residual_multiplier.  The scalar multiplier is INCLUDED, the residual add excluded.
    from transformers import GraniteConfig
    from transformers.models.granite.modeling_granite import GraniteDecoderLayer

    cfg = _eager(GraniteConfig(**_common(num_key_value_heads=KV_HEADS, hidden_act="silu",
                                         rms_norm_eps=1e-6, residual_multiplier=0.22,
                                         embedding_multiplier=12.0, attention_multiplier=0.0078125)))
    layer = GraniteDecoderLayer(cfg, layer_idx=0)
    m = layer.residual_multiplier
    return {"mlp": SubBlock(lambda s, x: s.mlp(s.post_attention_layernorm(x)) * m,
                            post_attention_layernorm=layer.post_attention_layernorm,
                            mlp=layer.mlp),
            "linear": SubBlock(lambda s, x: s.q_proj(s.input_layernorm(x)),
                               input_layernorm=layer.input_layernorm,
                               q_proj=layer.self_attn.q_proj)}


def build_clip():
    # CLIPEncoderLayer (text encoder): layer_norm1 -> self_attn.q_proj (bias);
    # layer_norm2 -> mlp (fc1, quick_gelu, fc2).  Residual adds: excluded.
    from transformers import CLIPTextConfig
    from transformers.models.clip.modeling_clip import CLIPEncoderLayer

    cfg = _eager(CLIPTextConfig(hidden_size=HIDDEN, intermediate_size=INTER,
                                num_attention_heads=HEADS, num_hidden_layers=1,
                                vocab_size=VOCAB, max_position_embeddings=16,
                                hidden_act="quick_gelu", attention_dropout=0.0,
                                pad_token_id=0, bos_token_id=1, eos_token_id=2))
    layer = CLIPEncoderLayer(cfg)
    return {"mlp": SubBlock(lambda s, x: s.mlp(s.layer_norm2(x)), layer_norm2=layer.layer_norm2,
                            mlp=layer.mlp),
            "linear": SubBlock(lambda s, x: s.q_proj(s.layer_norm1(x)),
                               layer_norm1=layer.layer_norm1, q_proj=layer.self_attn.q_proj)}


def build_nemotron():
    # NemotronLayerNorm1P: LayerNorm with (1 + weight) and bias (zero-centered gamma),
    # computed under autocast-off in the input dtype; MLP up_proj -> relu2 (squared ReLU)
    # -> down_proj (not gated).  Residual add: excluded.
    from transformers import NemotronConfig
    from transformers.models.nemotron.modeling_nemotron import NemotronDecoderLayer

    return _llama_like(NemotronConfig, NemotronDecoderLayer, num_key_value_heads=KV_HEADS,
                       hidden_act="relu2", norm_eps=1e-5, pad_token_id=0, bos_token_id=1,
                       eos_token_id=2)


ARCHS: dict[str, Callable[[], dict]] = {
    "gpt2": build_gpt2,
    "gpt_neox": build_gpt_neox,
    "opt": build_opt,
    "bloom": build_bloom,
    "llama": build_llama,
    "mistral": build_mistral,
    "qwen2": build_qwen2,
    "qwen3": build_qwen3,
    "gemma": build_gemma,
    "gemma2": build_gemma2,
    "gemma3": build_gemma3,
    "phi3": build_phi3,
    "t5_relu": build_t5_relu,
    "t5_gated": build_t5_gated_gelu,
    "falcon": build_falcon,
    "starcoder2": build_starcoder2,
    "cohere": build_cohere,
    "olmo": build_olmo,
    "olmo2": build_olmo2,
    "granite": build_granite,
    "clip": build_clip,
    "nemotron": build_nemotron,
}

# Which te op a block should raise to (the "expected" column of docs/models.md).
EXPECTED_OP = {"mlp": "layernorm_mlp", "linear": "layernorm_linear"}


# --------------------------------------------------------------------------------------
# Negative blocks: near misses that must NOT be raised to a te module op.
# --------------------------------------------------------------------------------------


class _NegGeluConst(nn.Module):
    """LayerNorm -> fc1 -> tanh GELU with 0.0447 instead of 0.044715 -> fc2."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN)
        self.fc1 = nn.Linear(HIDDEN, INTER)
        self.fc2 = nn.Linear(INTER, HIDDEN)

    def forward(self, x):
        h = self.fc1(self.norm(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.0447 * torch.pow(h, 3.0))))
        return self.fc2(h)


class _WrongDimRMSNorm(nn.Module):
    """LLaMA's RMSNorm written with the mean over dim 1 (seq) instead of -1."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(HIDDEN))

    def forward(self, x):
        dt = x.dtype
        h = x.to(torch.float32)
        var = h.pow(2).mean(1, keepdim=True)
        h = h * torch.rsqrt(var + 1e-6)
        return self.weight * h.to(dt)


class _NegRmsDim(nn.Module):
    """RMSNorm over the wrong dim -> q_proj."""

    def __init__(self):
        super().__init__()
        self.norm = _WrongDimRMSNorm()
        self.q_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)

    def forward(self, x):
        return self.q_proj(self.norm(x))


class _NegSilu2x(nn.Module):
    """LLaMA-style RMSNorm -> gated MLP with SiLU written as g * sigmoid(2 g)."""

    def __init__(self):
        super().__init__()
        from transformers.models.llama.modeling_llama import LlamaRMSNorm

        self.norm = LlamaRMSNorm(HIDDEN, eps=1e-6)
        self.gate_proj = nn.Linear(HIDDEN, INTER, bias=False)
        self.up_proj = nn.Linear(HIDDEN, INTER, bias=False)
        self.down_proj = nn.Linear(INTER, HIDDEN, bias=False)

    def forward(self, x):
        h = self.norm(x)
        g = self.gate_proj(h)
        return self.down_proj(g * torch.sigmoid(2.0 * g) * self.up_proj(h))


class _NegRmsNoRsqrt(nn.Module):
    """RMSNorm without the square root: x / (mean(x^2) + eps) -> Linear."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(HIDDEN))
        self.fc = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x):
        h = x * torch.reciprocal(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.fc(self.weight * h)


class _NegQuickGeluConst(nn.Module):
    """LayerNorm -> fc1 -> x * sigmoid(1.7 x) (quick GELU is 1.702) -> fc2."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN)
        self.fc1 = nn.Linear(HIDDEN, INTER)
        self.fc2 = nn.Linear(INTER, HIDDEN)

    def forward(self, x):
        h = self.fc1(self.norm(x))
        return self.fc2(h * torch.sigmoid(1.7 * h))


NEGATIVES: dict[str, tuple[Callable[[], nn.Module], str]] = {
    "gelu_tanh_0447": (_NegGeluConst, "tanh GELU with 0.0447 instead of 0.044715"),
    "rmsnorm_wrong_dim": (_NegRmsDim, "RMSNorm with the mean over dim 1 (seq), not -1"),
    "silu_sigmoid_2x": (_NegSilu2x, "SwiGLU with SiLU written as g * sigmoid(2 g)"),
    "rmsnorm_no_rsqrt": (_NegRmsNoRsqrt, "RMSNorm dividing by mean(x^2)+eps (no sqrt)"),
    "quick_gelu_1p7": (_NegQuickGeluConst, "quick GELU x*sigmoid(1.7x) (TE's is 1.702)"),
}


# --------------------------------------------------------------------------------------
# Building and exporting
# --------------------------------------------------------------------------------------

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}

# (form, output_type, use the HL decomposition table)
FORMS = {
    "raw": ("raw", False),
    "torch": ("torch", False),
    "raw_hl": ("raw", True),
}


@dataclass
class Case:
    arch: str
    block: str          # "mlp" | "linear" | "neg"
    dtype: str          # "f32" | "bf16"
    dynamic: bool = False  # Dim('batch') on x dim 0

    @property
    def name(self) -> str:
        return f"{self.arch}_{self.block}{'_dyn' if self.dynamic else ''}_{self.dtype}"


def build_block(arch: str, block: str, dtype: str, seed: int = SEED) -> nn.Module:
    """The sub-block with seeded init and perturbed constants, in dtype, eval mode."""
    torch.manual_seed(seed)
    if block == "neg":
        m = NEGATIVES[arch][0]()
    else:
        m = ARCHS[arch]()[block]
    _perturb_constant_params(m, torch.Generator().manual_seed(seed + 1))
    return m.to(DTYPES[dtype]).eval()


def make_inputs(model: nn.Module, dtype: str, x_shape=X_SHAPE, seed: int = SEED):
    """(names, args): x then the parameters in named_parameters() order."""
    gen = torch.Generator().manual_seed(seed + 2)
    x = torch.randn(x_shape, generator=gen, dtype=torch.float32).to(DTYPES[dtype])
    names = ["x"] + [n for n, _ in model.named_parameters()]
    params = [p.detach().clone() for p in model.parameters()]
    return names, [x] + params


def export_block(model: nn.Module, args: list, form: str, dynamic: bool = False,
                 func_name: str = "main") -> tuple[str, str]:
    """(mlir text, one-line description of the call).  x and every parameter are
    function arguments (ArgsWrapper)."""
    from torch_mlir import fx

    output_type, hl = FORMS[form]
    wrapper = ArgsWrapper(model).eval()
    kwargs = dict(output_type=output_type, func_name=func_name)
    call = [f'output_type="{output_type}"', f'func_name="{func_name}"']
    if hl:
        kwargs["decomposition_table"] = hl_decomposition_table()
        call.append("decomposition_table=HL_DECOMPOSITIONS")
    if dynamic:
        from torch.export import Dim

        kwargs["dynamic_shapes"] = ({0: Dim("batch", min=1, max=1024)}, (None,) * (len(args) - 1))
        kwargs["import_symbolic_shape_expressions"] = True
        call.append(f"dynamic_shapes=({{0: Dim('batch', min=1, max=1024)}}, (None,)*{len(args) - 1})")
        call.append("import_symbolic_shape_expressions=True")
    with torch.no_grad():
        module = fx.export_and_import(wrapper, *args, **kwargs)
    text = str(module)
    return (text if text.endswith("\n") else text + "\n"), \
        "fx.export_and_import(ArgsWrapper(block), x, *params, " + ", ".join(call) + ")"


def header(case_name: str, doc: str, names, args, call: str) -> str:
    sig = ", ".join(f"{n}{list(a.shape)}" for n, a in zip(names, args))
    return ("// Generated by test/Integration/hf/hf_blocks.py (test/Integration/hf/hf_models.py) -- do not edit; regenerate.\n"
            f"// {case_name}: {doc}\n"
            f"// @main({sig})\n"
            f"// {call}\n"
            f"// {versions()}\n")
