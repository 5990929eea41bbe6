//===- Collective.cpp - Lowering of the tensor-parallel collectives -*- C++ -*-===//
//
// te.all_gather, te.reduce_scatter and te.all_reduce become te_rt_* calls on
// the context's communicator of group tp, each with the group size the op
// was compiled for (the runtime refuses another communicator size);
// te.bias_add (the bias of a row-parallel GEMM, after its reduction)
// becomes te_rt_bias_add.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"
#include "te/Runtime/TERuntime.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

namespace {

struct AllGatherLowering : public RuntimeCallPattern<AllGatherOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(AllGatherOp op, FunctionLowering &l) const override {
    // Bytes: the rank's whole input lands at rank * bytes in the result.
    l.call("te_rt_all_gather",
           {l.ctxArg, l.c32(TE_RT_GROUP_TP), l.c32(op.getGroupSize()),
            l.ptr(op.getInput()), l.ptr(op.getResult()),
            l.bytes(op.getInput())});
    return success();
  }
};

struct ReduceScatterLowering : public RuntimeCallPattern<ReduceScatterOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(ReduceScatterOp op, FunctionLowering &l) const override {
    l.call("te_rt_reduce_scatter",
           {l.ctxArg, l.c32(TE_RT_GROUP_TP), l.c32(op.getGroupSize()),
            l.dtype(op.getInput()), l.ptr(op.getInput()),
            l.ptr(op.getResult()), l.numElements(op.getResult())});
    return success();
  }
};

struct AllReduceLowering : public RuntimeCallPattern<AllReduceOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(AllReduceOp op, FunctionLowering &l) const override {
    l.call("te_rt_all_reduce",
           {l.ctxArg, l.c32(TE_RT_GROUP_TP), l.c32(op.getGroupSize()),
            l.dtype(op.getInput()),
            l.c32(op.getMax() ? TE_RT_REDUCE_MAX : TE_RT_REDUCE_SUM),
            l.ptr(op.getInput()), l.ptr(op.getResult()),
            l.numElements(op.getResult())});
    return success();
  }
};

struct BiasAddLowering : public RuntimeCallPattern<BiasAddOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(BiasAddOp op, FunctionLowering &l) const override {
    l.call("te_rt_bias_add",
           {l.ctxArg, l.dtype(op.getInput()), l.ptr(op.getInput()),
            l.ptr(op.getBias()), l.ptr(op.getResult()), l.rows(op.getInput()),
            l.c64(l.lastDim(op.getInput()))});
    return success();
  }
};

} // namespace

void populateCollectiveToRuntimePatterns(FunctionLowering &lowering,
                                         RewritePatternSet &patterns) {
  patterns.add<AllGatherLowering, ReduceScatterLowering, AllReduceLowering,
               BiasAddLowering>(lowering);
}

} // namespace mlir::te::runtime_lowering
