#!/usr/bin/env python3
"""Check that a residual module written by `te-compile --partition` is valid torch-mlir.

    check_residual.py RESIDUAL.mlir [--stage raw|backend] [--print]

Loads the module with the torch-mlir wheel (torch_mlir.ir, the torch dialect registered as
torch_mlir.fx does) and runs torch-mlir's own pipelines on it, the way
torch_mlir.fx.export_and_import lowers an import to linalg-on-tensors:

    raw (the default; te-compile's inputs are `output_type="raw"` exports):
        builtin.module(torchdynamo-export-to-torch-backend-pipeline)
        then builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)
    backend (the module is already in torch's backend contract, e.g. an
             `output_type="torch"` export):
        builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)

Each pipeline runs through torch_mlir.compiler_utils.run_pipeline_with_repro_report, so a
rejection prints torch-mlir's own diagnostics.

The calls to the library. The last pass of torch-backend-to-linalg-on-tensors-backend-
pipeline, torch-verify-linalg-on-tensors-backend-contract, accepts func.func and
func.return as its only structural ops: the contract is one closed program, and a
func.call (to anything) is illegal in it, whatever its types (torch-mlir's
lib/Dialect/TorchConversion/Transforms/VerifyLinalgOnTensorsBackendContract.cpp: the func
dialect is legal only for ops with the Elementwise trait). A residual module calls the
library by definition, so when the pipeline fails there and the module calls its private
declarations, the check runs the same pipeline's passes minus that verifier
(LINALG_PASSES below, in torch-mlir's order) and then verifies the contract itself with
the one exception: a func.call to a private declaration, on builtin tensors. Every other
op must be of the contract's dialects and no torch type may be left. The output says
which path was taken. It also checks that every private
declaration (a library entry) is still called with !torch.vtensor values before lowering,
and prints one summary line. Exit status 0 when the module loads and lowers, 1 otherwise.

Requirements: torch-mlir (the wheel te-mlir's exports are made with, 20261001).
"""

from __future__ import annotations

import argparse
import sys


# createTorchBackendToLinalgOnTensorsBackendPipeline (torch-mlir, TorchConversion/
# Transforms/Passes.cpp) without its final torch-verify-linalg-on-tensors-backend-contract.
LINALG_PASSES = (
    "builtin.module(func.func(torch-restructure-non-constant-axes, torch-fuse-quantized-ops,"
    " convert-torch-to-tmtensor, canonicalize, convert-torch-to-linalg, canonicalize,"
    " convert-torch-to-scf, convert-torch-to-arith, convert-torch-to-tensor),"
    " convert-torch-conversion-to-mlprogram,"
    " func.func(memref-expand, canonicalize, resolve-shaped-type-result-dims, cse),"
    " torch-func-backend-type-conversion,"
    " func.func(canonicalize, torch-finalizing-backend-type-conversion))")

# The dialects torch-verify-linalg-on-tensors-backend-contract accepts.
CONTRACT_DIALECTS = {"builtin", "arith", "math", "complex", "linalg", "sparse_tensor",
                     "tensor", "affine", "cf", "tm_tensor", "scf", "ml_program"}


def check_contract(module, decls) -> list[str]:
    """The contract, except func.call to a private declaration on builtin tensors."""
    from torch_mlir import ir

    errors = []

    def walk(op):
        name = op.name
        dialect = name.split(".")[0]
        if name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if callee not in decls:
                errors.append(f"call to @{callee}, which is not a library declaration")
        elif name not in ("func.func", "func.return") and dialect not in CONTRACT_DIALECTS:
            errors.append(f"'{name}' is not in the linalg-on-tensors contract")
        for t in list(op.operands) + list(op.results):
            if "!torch" in str(t.type):
                errors.append(f"'{name}' has a torch type {t.type}")
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner.operation)

    for op in module.body.operations:
        walk(op.operation)
    return errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("residual")
    ap.add_argument("--stage", choices=["raw", "backend"], default="raw")
    ap.add_argument("--print", action="store_true", help="print the lowered module")
    a = ap.parse_args()

    from torch_mlir import ir
    from torch_mlir.compiler_utils import run_pipeline_with_repro_report
    from torch_mlir.dialects import torch as torch_d

    with open(a.residual) as f:
        text = f.read()
    context = ir.Context()
    torch_d.register_dialect(context)
    with context:
        try:
            module = ir.Module.parse(text)
        except Exception as e:  # torch-mlir's parser error, with locations
            print(f"check_residual: {a.residual}: torch-mlir cannot parse it:\n{e}",
                  file=sys.stderr)
            return 1
        decls = []
        calls = 0
        for op in module.body.operations:
            if op.operation.name != "func.func":
                continue
            if len(op.regions[0].blocks) == 0:
                decls.append(ir.StringAttr(op.attributes["sym_name"]).value)
                ftype = ir.TypeAttr(op.attributes["function_type"]).value
                if "!torch.vtensor" not in str(ftype):
                    print(f"check_residual: @{decls[-1]}: not a !torch.vtensor signature: "
                          f"{ftype}", file=sys.stderr)
                    return 1
        calls = text.count("call @")
        pipelines = []
        if a.stage == "raw":
            pipelines.append(("builtin.module(torchdynamo-export-to-torch-backend-pipeline)",
                              "Lowering TorchFX IR -> Torch Backend IR"))
        pipelines.append(("builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)",
                          "Lowering Torch Backend IR -> Linalg-on-Tensors Backend IR"))
        for pipeline, description in pipelines[:-1]:
            try:
                run_pipeline_with_repro_report(module, pipeline, description)
            except Exception as e:
                print(f"check_residual: {a.residual}: {e}", file=sys.stderr)
                return 1
        backend = str(module)  # torch's backend contract, before linalg
        how = "torch-backend-to-linalg-on-tensors-backend-pipeline"
        try:
            run_pipeline_with_repro_report(module, *pipelines[-1])
        except Exception as e:
            if not decls or calls == 0:
                print(f"check_residual: {a.residual}: {e}", file=sys.stderr)
                return 1
            print(f"check_residual: note: torch-verify-linalg-on-tensors-backend-contract "
                  f"rejects the {calls} calls to the library (any func.call is outside that "
                  f"contract); checking the lowering without it", file=sys.stderr)
            # The verifier rejects the calls to the library (see above): the same
            # lowering without it, then the contract but for those calls.
            module = ir.Module.parse(backend)
            try:
                run_pipeline_with_repro_report(
                    module, LINALG_PASSES,
                    "Lowering Torch Backend IR -> Linalg-on-Tensors (no contract verifier)")
            except Exception as e2:
                print(f"check_residual: {a.residual}: {e2}", file=sys.stderr)
                return 1
            errors = check_contract(module, set(decls))
            if errors:
                for err in errors:
                    print(f"check_residual: {a.residual}: {err}", file=sys.stderr)
                return 1
            how = ("its passes without torch-verify-linalg-on-tensors-backend-contract, "
                   "which rejects any func.call; the contract checked here but for the "
                   "calls to the library")
        lowered = str(module)
        if "torch." in lowered.replace("torch_c.", "") or "!torch" in lowered:
            print(f"check_residual: {a.residual}: torch ops or types remain after lowering",
                  file=sys.stderr)
            return 1
        if a.print:
            print(lowered)
    print(f"check_residual: {a.residual}: OK: torch-mlir lowers it to linalg-on-tensors "
          f"({how}); {len(decls)} library declarations: {', '.join(decls)}; {calls} calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
