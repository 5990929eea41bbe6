//===- LowerToRuntime.cpp - te-lower-to-runtime -----------------*- C++ -*-===//
//
// Lowers functions of L2 primitives on tensors to LLVM-dialect entry points
// that call the te_rt_* runtime ABI (include/te/Runtime/TERuntime.def):
//
//   int32_t NAME(te_rt_context *ctx, void *const *args, void *const *results,
//                const int64_t *dims);
//
// `args`/`results` hold one buffer per function argument/result (on the
// context's backend), `dims` the values of the dynamic dims, one per class
// of dims the program requires to be equal (in order of first appearance in
// the arguments). The call returns 0, or the status of the first failing
// runtime call (te_rt_last_error says why).
//
// Memory is planned here: every intermediate lives in one arena allocated
// per call; buffers whose lifetimes do not overlap share a slot (slots are
// sized by their largest member at run time, so the plan holds for every
// value of the dynamic dims). Values returned by the function are computed
// in place in the caller's result buffers. A static dim-0 tensor.concat is
// built by destination passing: each part an op produces for it alone is
// written by that op straight into the concat's buffer (a view at the
// part's byte offset), the concat copies only the other parts and memsets
// each run of zero-constant parts in place. A JSON description of the
// entries (signatures, dims, planned arena bytes) is returned by the
// generated `te_module_info()`.
//
// The recipes' alignment on dynamic dims (te-describe's `runtime_checks`,
// e.g. fp8-block's `d0 % 128 == 0`) is checked on entry, once per distinct
// condition, by te_rt_check_multiple: a call with other values fails with
// "<entry>: recipe <r> needs <condition>, got <value>" before any work, as a
// static shape that violates it would have fallen back to bf16 at compile
// time instead.
//
// A quantized value (`!te.qtensor`: per-tensor FP8 or Float8 block scaling
// on Hopper, MXFP8 and NVFP4 on Blackwell) is one buffer holding its inner
// tensors (TE's, as the type describes them), each at a 256-byte aligned
// offset: first what both usages share, then the columnwise copy, then the
// rowwise one. Per-tensor FP8: `scale_inv` [1] fp32, `transpose` [K, M], `data`
// [M, K]; fp8-block: `columnwise_data` [K, M], `columnwise_scale_inv`,
// `rowwise_data` [M, K], `rowwise_scale_inv`; MXFP8 the same names with the
// columnwise data not transposed; NVFP4 like fp8-block with packed data and
// each copy's `amax_*` last in its group. The columnwise-only tensor a backward
// keeps is thus a prefix of the `both` one (te.drop_usage is a view).
// te_module_info() lists the inner tensors in buffer order, so callers size and
// read such buffers without knowing the recipe. With dynamic dims their sizes
// are computed at run time (TE's layout rules on i64 values, RtDim) and their
// shapes listed as expressions of the dim symbols (`ceildiv(d0, 128)`).
//
// The pass: declares the runtime functions, lowers each function
// (FunctionLowering.cpp, one file per family of primitives), erases the
// originals and adds te_module_info() (ModuleInfo.cpp).
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"
#include "te/Conversion/Passes.h"

namespace mlir::te {
#define GEN_PASS_DEF_TELOWERTORUNTIMEPASS
#include "te/Conversion/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::runtime_lowering;

namespace {

struct TELowerToRuntimePass
    : public te::impl::TELowerToRuntimePassBase<TELowerToRuntimePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    PatternRewriter b(ctx);
    b.setInsertionPointToStart(module.getBody());
    llvm::StringMap<LLVM::LLVMFuncOp> runtime =
        declareRuntimeFunctions(module, b);

    if (!dedupLayers.isValid()) {
      module.emitError() << "te-lower-to-runtime: dedup-layers must be off, "
                            "auto or on, got '"
                         << dedupLayers.spelling() << "'";
      return signalPassFailure();
    }
    SegmentFunctions segments;
    segments.mode = *dedupLayers;
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    llvm::json::Array entries;
    for (func::FuncOp func : funcs) {
      if (func.isExternal())
        continue;
      FunctionLowering lowering(func, module, b, runtime, segments);
      if (failed(lowering.run()))
        return signalPassFailure();
      entries.push_back(std::move(lowering.info));
    }
    for (func::FuncOp func : funcs)
      func.erase();

    emitModuleInfo(module, b, std::move(entries));
  }
};

} // namespace
