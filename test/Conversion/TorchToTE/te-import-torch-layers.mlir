// Partial raising of whole decoder layers: real torch-mlir exports of a
// GPT2Block and a LlamaDecoderLayer (attention + norms + MLP; f32 and bf16;
// parameters as arguments; Inputs/layers, test/Integration/hf/export_decoder_layers.py).
//
// GPT-2 f32: ln_1 + c_attn is a LayerNormLinear, the attention's c_proj a
// Linear, ln_2 + MLP (gelu tanh) a LayerNormMLP; the Conv1D [in, out]
// weights are transposed inside the raised modules; attention is left.
// RUN: te-opt %S/Inputs/layers/gpt2_block.f32.mlir --te-import-torch 2>%t.gpt2.err | FileCheck %s --check-prefix=GPT2
// RUN: FileCheck %s --check-prefix=GPT2-REMARKS < %t.gpt2.err
// GPT2-LABEL: func.func @main(
// GPT2-SAME:    %[[X:.+]]: !torch.vtensor<[1,4,32],f32>, %[[G1:.+]]: !torch.vtensor<[32],f32>, %[[B1:.+]]: !torch.vtensor<[32],f32>, %[[WQKV:.+]]: !torch.vtensor<[32,96],f32>
// GPT2-SAME:    -> !torch.vtensor<[1,4,32],f32>
// GPT2:         %[[XB:.+]] = torch_c.to_builtin_tensor %[[X]] : !torch.vtensor<[1,4,32],f32> -> tensor<1x4x32xf32>
// GPT2:         %[[WT:.+]] = linalg.transpose ins(%{{.+}} : tensor<32x96xf32>)
// GPT2:         %[[QKV:.+]] = te.layernorm_linear %[[XB]] norm layer_norm({{.+}}) weight(%[[WT]], {{.+}}) : {{.+}} -> tensor<1x4x96xf32>
// GPT2:         torch_c.from_builtin_tensor %[[QKV]] : tensor<1x4x96xf32> -> !torch.vtensor<[1,4,96],f32>
// GPT2:         torch.aten._softmax
// GPT2:         te.linear {{.+}} -> tensor<1x4x32xf32>
// GPT2:         torch.aten.add.Tensor
// GPT2:         te.layernorm_mlp {{.+}} act gelu fc2({{.+}}) : (tensor<1x4x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<128x32xf32>, tensor<128xf32>, tensor<32x128xf32>, tensor<32xf32>) -> tensor<1x4x32xf32>
// GPT2:         %[[OUT:.+]] = torch.aten.add.Tensor
// GPT2:         return %[[OUT]] : !torch.vtensor<[1,4,32],f32>
// GPT2-REMARKS-DAG: remark: te-import-torch: left 'torch.aten.split_with_sizes' as is: splitting a projection's output (e.g. attention's fused QKV) is not part of a TransformerEngine module; the linear before it is raised on its own
// GPT2-REMARKS-DAG: remark: te-import-torch: left 'torch.aten._softmax' as is: attention (softmax, batched matmuls, masks) is not part of a TransformerEngine LayerNorm module
// GPT2-REMARKS-DAG: remark: te-import-torch: left 'torch.aten.bmm' as is: attention (softmax, batched matmuls, masks)
// GPT2-REMARKS-DAG: remark: te-import-torch: left 'torch.aten.add.Tensor' as is: not part of a recognized module
// GPT2-REMARKS-NOT: remark: te-import-torch: left 'torch.constant
// GPT2-REMARKS-NOT: remark: te-import-torch: left 'torch.prim.ListConstruct'
// GPT2-REMARKS-NOT: remark: te-import-torch: left 'torch.aten.layer_norm'
// GPT2-REMARKS-NOT: error
//
// LLaMA f32: input_layernorm + q_proj a LayerNormLinear returning the norm
// output, which k_proj and v_proj read (te.linear); o_proj a Linear;
// post_attention_layernorm + gated SiLU MLP a LayerNormMLP (swiglu, the
// gate and up weights concatenated); rotary embeddings and attention left.
// RUN: te-opt %S/Inputs/layers/llama_layer.f32.mlir --te-import-torch 2>%t.llama.err | FileCheck %s --check-prefix=LLAMA
// RUN: FileCheck %s --check-prefix=LLAMA-REMARKS < %t.llama.err
// LLAMA-LABEL: func.func @main(
// LLAMA:         %[[Q:.+]], %[[N:.+]] = te.layernorm_linear %{{.+}} norm rms_norm(%{{.+}}) weight(%{{.+}}) {eps = 9.9999999999999995E-7 : f64, return_layernorm_output}
// LLAMA:         te.linear %[[N]] weight(%{{.+}}) : (tensor<1x4x32xf32>, tensor<16x32xf32>) -> tensor<1x4x16xf32>
// LLAMA:         te.linear %[[N]] weight(%{{.+}}) : (tensor<1x4x32xf32>, tensor<16x32xf32>) -> tensor<1x4x16xf32>
// LLAMA:         torch.aten._softmax
// LLAMA:         te.linear {{.+}} : (tensor<1x4x32xf32>, tensor<32x32xf32>) -> tensor<1x4x32xf32>
// LLAMA:         %[[FC1:.+]] = tensor.concat dim(0) {{.+}} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<128x32xf32>
// LLAMA:         te.layernorm_mlp %{{.+}} norm rms_norm(%{{.+}}) fc1(%[[FC1]]) act swiglu fc2(%{{.+}})
// LLAMA-REMARKS-DAG: remark: te-import-torch: left 'torch.aten._softmax' as is: attention (softmax, batched matmuls, masks)
// LLAMA-REMARKS-DAG: remark: te-import-torch: left 'torch.aten.neg' as is: not part of a recognized module
// LLAMA-REMARKS-DAG: remark: te-import-torch: left 'torch.aten.cat' as is: not part of a recognized module
// LLAMA-REMARKS-NOT: remark: te-import-torch: left 'torch.aten.rms_norm'
// LLAMA-REMARKS-NOT: remark: te-import-torch: left 'torch.aten.linear'
// LLAMA-REMARKS-NOT: error
//
// bf16: the same modules. PyTorch's bf16 norms run in f32 between casts
// (LayerNorm: upcast, var_mean, downcast; LLaMA's RMSNorm: upcast, pow/mean/
// rsqrt, downcast, then the bf16 weight), the SiLU too: all raised in bf16.
// RUN: te-opt %S/Inputs/layers/gpt2_block.bf16.mlir --te-import-torch 2>%t.gpt2bf16.err | FileCheck %s --check-prefix=GPT2-BF16
// RUN: FileCheck %s --check-prefix=GPT2-BF16-REMARKS < %t.gpt2bf16.err
// GPT2-BF16: te.layernorm_linear {{.+}} -> tensor<1x4x96xbf16>
// GPT2-BF16: te.linear {{.+}} -> tensor<1x4x32xbf16>
// GPT2-BF16: te.layernorm_mlp {{.+}} act gelu
// GPT2-BF16-REMARKS-NOT: left 'torch.aten.layer_norm'
// GPT2-BF16-REMARKS-NOT: left 'torch.aten.gelu'
// RUN: te-opt %S/Inputs/layers/llama_layer.bf16.mlir --te-import-torch 2>%t.llamabf16.err | FileCheck %s --check-prefix=LLAMA-BF16
// RUN: FileCheck %s --check-prefix=LLAMA-BF16-REMARKS < %t.llamabf16.err
// LLAMA-BF16: %[[Q:.+]], %[[N:.+]] = te.layernorm_linear %{{.+}} norm rms_norm(%{{.+}}) weight(%{{.+}}) {eps = 9.9999999999999995E-7 : f64, return_layernorm_output} : {{.+}}xbf16>
// LLAMA-BF16-COUNT-2: te.linear %[[N]]
// LLAMA-BF16: te.linear
// LLAMA-BF16: te.layernorm_mlp %{{.+}} norm rms_norm(%{{.+}}) fc1(%{{.+}}) act swiglu
// LLAMA-BF16-REMARKS-NOT: left 'torch.aten.rms_norm'
// LLAMA-BF16-REMARKS-NOT: left 'torch.aten.silu'
// LLAMA-BF16-REMARKS-NOT: left 'torch.aten.sigmoid'
//
// strict=true: all or nothing, an error at the first op that is not raised.
// RUN: not te-opt %S/Inputs/layers/gpt2_block.f32.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT-GPT2
// STRICT-GPT2: gpt2_block.f32.mlir:43:11: error: te-import-torch: cannot import 'torch.aten.split_with_sizes': splitting a projection's output (e.g. attention's fused QKV) is not part of a TransformerEngine module
// RUN: not te-opt %S/Inputs/layers/llama_layer.f32.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT-LLAMA
// STRICT-LLAMA: error: te-import-torch: cannot import 'torch.aten.permute': not part of a recognized module; supported:
//
// te-outline-raised: each raised op in a function of its own, called in its
// place; builtin ops feeding only it (the Conv1D transposes, the gated FC1
// concat) move with it, the arguments are the module's in TE's order.
// RUN: te-opt %S/Inputs/layers/gpt2_block.f32.mlir --te-import-torch --te-outline-raised 2>/dev/null | FileCheck %s --check-prefix=OUTLINE-GPT2
// OUTLINE-GPT2-LABEL: func.func @main(
// OUTLINE-GPT2-NOT:     te.
// OUTLINE-GPT2-NOT:     linalg.transpose
// OUTLINE-GPT2:         call @main_layernorm_linear_0(%{{.+}}) : (tensor<1x4x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<1x4x96xf32>
// OUTLINE-GPT2:         call @main_linear_0(
// OUTLINE-GPT2:         call @main_layernorm_mlp_0(
// OUTLINE-GPT2-LABEL: func.func @main_layernorm_linear_0(
// OUTLINE-GPT2-SAME:    %[[X:.+]]: tensor<1x4x32xf32>, %[[G:.+]]: tensor<32xf32>, %[[B:.+]]: tensor<32xf32>, %[[W:.+]]: tensor<32x96xf32>, %[[BW:.+]]: tensor<96xf32>) -> tensor<1x4x96xf32>
// OUTLINE-GPT2:         %[[WT:.+]] = linalg.transpose ins(%[[W]] : tensor<32x96xf32>)
// OUTLINE-GPT2:         %[[Y:.+]] = te.layernorm_linear %[[X]] norm layer_norm(%[[G]], %[[B]]) weight(%[[WT]], %[[BW]])
// OUTLINE-GPT2:         return %[[Y]]
// OUTLINE-GPT2-LABEL: func.func @main_linear_0(
// OUTLINE-GPT2-LABEL: func.func @main_layernorm_mlp_0(
// OUTLINE-GPT2-SAME:    -> tensor<1x4x32xf32>
// OUTLINE-GPT2-COUNT-2: linalg.transpose
// OUTLINE-GPT2:         te.layernorm_mlp
// RUN: te-opt %S/Inputs/layers/llama_layer.f32.mlir --te-import-torch --te-outline-raised 2>/dev/null | FileCheck %s --check-prefix=OUTLINE-LLAMA
// OUTLINE-LLAMA-LABEL: func.func @main(
// OUTLINE-LLAMA:         %[[LN:.+]]:2 = call @main_layernorm_linear_0(
// OUTLINE-LLAMA:         call @main_linear_0(%[[LN]]#1, %{{.+}})
// OUTLINE-LLAMA:         call @main_linear_1(%[[LN]]#1, %{{.+}})
// OUTLINE-LLAMA:         call @main_linear_2(
// OUTLINE-LLAMA:         call @main_layernorm_mlp_0(%{{.+}}) : (tensor<1x4x32xf32>, tensor<32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<1x4x32xf32>
// OUTLINE-LLAMA-LABEL: func.func @main_layernorm_linear_0(
// OUTLINE-LLAMA-SAME:    -> (tensor<1x4x32xf32>, tensor<1x4x32xf32>)
// OUTLINE-LLAMA-LABEL: func.func @main_layernorm_mlp_0(
// OUTLINE-LLAMA-SAME:    %[[X:.+]]: tensor<1x4x32xf32>, %[[G:.+]]: tensor<32xf32>, %[[GATE:.+]]: tensor<64x32xf32>, %[[UP:.+]]: tensor<64x32xf32>, %[[DOWN:.+]]: tensor<32x64xf32>)
// OUTLINE-LLAMA:         %[[FC1:.+]] = tensor.concat dim(0) %[[GATE]], %[[UP]]
// OUTLINE-LLAMA:         te.layernorm_mlp %[[X]] norm rms_norm(%[[G]]) fc1(%[[FC1]]) act swiglu fc2(%[[DOWN]])
//
// Qwen3 (Qwen3DecoderLayer, f32 and bf16): as LLaMA, input_layernorm + q_proj
// a LayerNormLinear returning the norm output, k_proj / v_proj te.linear on
// it, o_proj a Linear, post_attention_layernorm + SwiGLU MLP a LayerNormMLP.
// The attention's q_norm / k_norm (RMSNorms over each head of q_proj's and
// k_proj's outputs, before the rotary embedding) are norms of a linear's
// output with no linear after them: left, as attention is.
// RUN: te-opt %S/Inputs/layers/qwen3_layer.f32.mlir --te-import-torch 2>%t.qwen3.err | FileCheck %s --check-prefix=QWEN3
// RUN: FileCheck %s --check-prefix=QWEN3-REMARKS < %t.qwen3.err
// RUN: FileCheck %s --check-prefix=QWEN3-NORMS < %t.qwen3.err
// QWEN3-LABEL: func.func @main(
// QWEN3-SAME:    %[[X:.+]]: !torch.vtensor<[1,4,32],f32>, %{{.+}}: !torch.vtensor<[1,4,16],f32>, %{{.+}}: !torch.vtensor<[1,4,16],f32>, %[[WQ:.+]]: !torch.vtensor<[32,32],f32>, %[[WK:.+]]: !torch.vtensor<[16,32],f32>, %[[WV:.+]]: !torch.vtensor<[16,32],f32>, %[[WO:.+]]: !torch.vtensor<[32,32],f32>, %[[QN:.+]]: !torch.vtensor<[16],f32>, %[[KN:.+]]: !torch.vtensor<[16],f32>
// QWEN3:         %[[Q:.+]], %[[N:.+]] = te.layernorm_linear %{{.+}} norm rms_norm(%{{.+}}) weight(%{{.+}}) {eps = 9.9999999999999995E-7 : f64, return_layernorm_output} : (tensor<1x4x32xf32>, tensor<32xf32>, tensor<32x32xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x32xf32>)
// QWEN3:         torch.aten.rms_norm %{{.+}}, %{{.+}}, %[[QN]], %{{.+}} : !torch.vtensor<[1,4,2,16],f32>
// QWEN3:         te.linear %[[N]] weight(%{{.+}}) : (tensor<1x4x32xf32>, tensor<16x32xf32>) -> tensor<1x4x16xf32>
// QWEN3:         torch.aten.rms_norm %{{.+}}, %{{.+}}, %[[KN]], %{{.+}} : !torch.vtensor<[1,4,1,16],f32>
// QWEN3:         te.linear %[[N]] weight(%{{.+}}) : (tensor<1x4x32xf32>, tensor<16x32xf32>) -> tensor<1x4x16xf32>
// QWEN3:         torch.aten._softmax
// QWEN3:         te.linear {{.+}} : (tensor<1x4x32xf32>, tensor<32x32xf32>) -> tensor<1x4x32xf32>
// QWEN3:         %[[FC1:.+]] = tensor.concat dim(0) {{.+}} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<128x32xf32>
// QWEN3:         te.layernorm_mlp %{{.+}} norm rms_norm(%{{.+}}) fc1(%[[FC1]]) act swiglu fc2(%{{.+}})
// QWEN3-NORMS-COUNT-2: remark: te-import-torch: left 'torch.aten.rms_norm' as is: a norm of a linear's output with no linear after it (a post-feedforward norm, as in Gemma 2/3 and OLMo 2): TransformerEngine's norms come before their linear; the module before it is raised, this norm is left
// QWEN3-REMARKS-DAG: remark: te-import-torch: left 'torch.aten._softmax' as is: attention (softmax, batched matmuls, masks) is not part of a TransformerEngine LayerNorm module
// QWEN3-REMARKS-DAG: remark: te-import-torch: left 'torch.aten.bmm' as is: attention (softmax, batched matmuls, masks)
// QWEN3-REMARKS-DAG: remark: te-import-torch: left 'torch.aten.neg' as is: not part of a recognized module
// QWEN3-REMARKS-NOT: remark: te-import-torch: left 'torch.aten.linear'
// QWEN3-REMARKS-NOT: remark: te-import-torch: left 'torch.aten.silu'
// QWEN3-REMARKS-NOT: error
// QWEN3-NORMS-NOT: left 'torch.aten.rms_norm'
// RUN: te-opt %S/Inputs/layers/qwen3_layer.bf16.mlir --te-import-torch 2>%t.qwen3bf16.err | FileCheck %s --check-prefix=QWEN3-BF16
// RUN: FileCheck %s --check-prefix=QWEN3-BF16-REMARKS < %t.qwen3bf16.err
// RUN: FileCheck %s --check-prefix=QWEN3-BF16-NORMS < %t.qwen3bf16.err
// QWEN3-BF16: %[[Q:.+]], %[[N:.+]] = te.layernorm_linear %{{.+}} norm rms_norm(%{{.+}}) weight(%{{.+}}) {eps = 9.9999999999999995E-7 : f64, return_layernorm_output} : {{.+}}xbf16>
// QWEN3-BF16-COUNT-2: te.linear %[[N]]
// QWEN3-BF16: te.linear
// QWEN3-BF16: te.layernorm_mlp %{{.+}} norm rms_norm(%{{.+}}) fc1(%{{.+}}) act swiglu
// QWEN3-BF16-NORMS-COUNT-2: remark: te-import-torch: left 'torch.aten.rms_norm' as is: a norm of a linear's output with no linear after it
// QWEN3-BF16-NORMS-NOT: left 'torch.aten.rms_norm'
// QWEN3-BF16-REMARKS-NOT: left 'torch.aten.silu'
// QWEN3-BF16-REMARKS-NOT: left 'torch.aten.linear'
// RUN: not te-opt %S/Inputs/layers/qwen3_layer.f32.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=STRICT-QWEN3
// STRICT-QWEN3: qwen3_layer.f32.mlir:76:11: error: te-import-torch: cannot import 'torch.aten.rms_norm': a norm of a linear's output with no linear after it
// RUN: te-opt %S/Inputs/layers/qwen3_layer.f32.mlir --te-import-torch --te-outline-raised 2>/dev/null | FileCheck %s --check-prefix=OUTLINE-QWEN3
// OUTLINE-QWEN3-LABEL: func.func @main(
// OUTLINE-QWEN3:         %[[LN:.+]]:2 = call @main_layernorm_linear_0(
// OUTLINE-QWEN3:         torch.aten.rms_norm
// OUTLINE-QWEN3:         call @main_linear_0(%[[LN]]#1, %{{.+}})
// OUTLINE-QWEN3:         torch.aten.rms_norm
// OUTLINE-QWEN3:         call @main_linear_1(%[[LN]]#1, %{{.+}})
// OUTLINE-QWEN3:         call @main_linear_2(
// OUTLINE-QWEN3:         call @main_layernorm_mlp_0(%{{.+}}) : (tensor<1x4x32xf32>, tensor<32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<1x4x32xf32>
