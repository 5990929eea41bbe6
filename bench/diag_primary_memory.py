"""Where the GPU memory of an LN-MLP built inside quantized_model_init lives (a one-off
diagnostic of bench/weights_memory.py's fp8_params row)."""
import gc
import torch
import te_mlir.torch as tem

MiB = 2 ** -20
torch.cuda.memory._record_memory_history(max_entries=200000)
base = torch.cuda.memory_allocated()
with tem.quantized_model_init(enabled=True, recipe="fp8-current"):
    m = tem.LayerNormMLP(4096, 16384, bias=True, activation="gelu", params_dtype=torch.bfloat16,
                         device="cuda")
torch.cuda.synchronize()
gc.collect()
print("after construction MiB", (torch.cuda.memory_allocated() - base) * MiB)
snap = torch.cuda.memory._snapshot()
blocks = []
for seg in snap["segments"]:
    for b in seg["blocks"]:
        if b["state"] == "active_allocated":
            frames = b.get("frames") or []
            where = " <- ".join(f"{f['filename'].split('/')[-1]}:{f['line']}:{f['name']}"
                                for f in frames if f["filename"].endswith(".py"))[:600]
            blocks.append((b["size"], where))
blocks.sort(key=lambda t: -t[0])
for size, where in blocks[:12]:
    print(f"{size * MiB:9.1f} MiB  {where}")
