//===- TEQuantLayout.h - Inner-tensor layouts of qtensors -------*- C++ -*-===//
//
// TransformerEngine's inner tensors of a quantized tensor, per recipe, over
// any "dim algebra": SymDim for the fake tensors and descriptions, and the
// lowering's run-time sizes (i64 values) for buffers with dynamic dims.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEQUANTLAYOUT_H
#define TE_DIALECT_TE_IR_TEQUANTLAYOUT_H

#include "te/Dialect/TE/IR/TETypes.h"

#include "llvm/ADT/STLExtras.h"

namespace mlir::te {

/// One inner tensor of a quantized tensor, with dims of type `D`.
template <typename D> struct InnerTensorOf {
  std::string name; ///< TE's name without underscore
  llvm::SmallVector<D> shape;
  std::string dtype; ///< `uint8` or `float32`
  unsigned elementBytes = 1;
};

/// The inner tensors of `type` (TE's create_tensor / get_scale_shape rules,
/// in TE's order) when its logical dims are `dims`. `D` is a dim algebra:
/// constructible from an int64_t constant, with `D * D` and, by a positive
/// constant, `exactDiv` (the caller knows it divides), `ceilDiv` and
/// `roundUp` (to a multiple). 2-D layouts flatten the leading dims into the
/// rows (their product).
template <typename D>
llvm::SmallVector<InnerTensorOf<D>> getInnerTensorsOf(QuantizedTensorType type,
                                                      llvm::ArrayRef<D> dims) {
  assert(!dims.empty() && dims.size() == type.getShape().size() &&
         "one dim per logical dim");
  D k = dims.back();
  D m(1);
  for (const D &d : dims.drop_back())
    m = m * d;
  // [K, d0, ..., d_{n-2}]: TE's make_transpose_shape.
  llvm::SmallVector<D> transposed{k};
  transposed.append(dims.begin(), dims.end() - 1);
  llvm::SmallVector<D> logical(dims.begin(), dims.end());

  using Inner = InnerTensorOf<D>;
  auto u8 = [](llvm::StringRef name, llvm::SmallVector<D> s) {
    return Inner{name.str(), std::move(s), "uint8", 1};
  };
  auto f32 = [](llvm::StringRef name, llvm::SmallVector<D> s) {
    return Inner{name.str(), std::move(s), "float32", 4};
  };
  bool rowwise = type.hasRowwise(), columnwise = type.hasColumnwise();
  llvm::SmallVector<Inner> inner;

  RecipeAttrInterface recipe = type.getRecipe();
  if (isa<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(recipe)) {
    // Float8Quantizer / Float8CurrentScalingQuantizer::create_tensor.
    bool nonTN = type.getArch() == TargetArch::Blackwell;
    if (rowwise || nonTN)
      inner.push_back(u8("data", logical));
    if (columnwise && !nonTN)
      inner.push_back(u8("transpose", transposed));
    inner.push_back(f32("scale_inv", {D(1)}));
  } else if (isa<MXFP8RecipeAttr>(recipe)) {
    // MXFP8Quantizer::create_tensor / get_scale_shape: data keeps the
    // logical shape in both usages (columnwise is not transposed).
    if (rowwise) {
      inner.push_back(u8("rowwise_data", logical));
      inner.push_back(
          u8("rowwise_scale_inv", {m.roundUp(128), k.exactDiv(32).roundUp(4)}));
    }
    if (columnwise) {
      inner.push_back(u8("columnwise_data", logical));
      inner.push_back(u8("columnwise_scale_inv",
                         {m.exactDiv(32).roundUp(4), k.roundUp(128)}));
    }
  } else if (isa<FP8BlockRecipeAttr>(recipe)) {
    // Float8BlockQuantizer::create_tensor / get_scale_shape (compact scales).
    bool twoD = type.getBlock_2d();
    if (rowwise) {
      inner.push_back(u8("rowwise_data", logical));
      if (twoD)
        inner.push_back(f32("rowwise_scale_inv",
                            {m.ceilDiv(128), k.ceilDiv(128).roundUp(4)}));
      else
        inner.push_back(
            f32("rowwise_scale_inv", {k.ceilDiv(128), m.roundUp(4)}));
    }
    if (columnwise) {
      inner.push_back(u8("columnwise_data", transposed));
      if (twoD)
        inner.push_back(f32("columnwise_scale_inv",
                            {k.ceilDiv(128), m.ceilDiv(128).roundUp(4)}));
      else
        inner.push_back(
            f32("columnwise_scale_inv", {m.ceilDiv(128), k.roundUp(4)}));
    }
  } else if (isa<NVFP4RecipeAttr>(recipe)) {
    // NVFP4Quantizer::create_tensor / get_scale_shape. Rowwise data keeps the
    // logical shape with packed last dim; columnwise data is forced 2-D
    // [K, M/2] (TE's Python spec keeps N-D here; we follow the C++).
    bool rowScaled = type.getRowScaled();
    if (rowwise) {
      llvm::SmallVector<D> packed(logical);
      packed.back() = k.exactDiv(2);
      inner.push_back(u8("rowwise_data", packed));
      inner.push_back(
          u8("rowwise_scale_inv", {m.roundUp(128), k.exactDiv(16).roundUp(4)}));
    }
    if (columnwise) {
      inner.push_back(u8("columnwise_data", {k, m.exactDiv(2)}));
      inner.push_back(u8("columnwise_scale_inv",
                         {k.roundUp(128), m.exactDiv(16).roundUp(4)}));
    }
    if (rowwise)
      inner.push_back(f32("amax_rowwise", {rowScaled ? m : D(1)}));
    if (columnwise)
      inner.push_back(f32("amax_columnwise", {rowScaled ? k : D(1)}));
  }
  return inner;
}

} // namespace mlir::te

#endif // TE_DIALECT_TE_IR_TEQUANTLAYOUT_H
