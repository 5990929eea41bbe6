//===- TEDialectTest.cpp - C++ API of the te dialect ------------*- C++ -*-===//
//
// What the importer and later passes rely on: result-type inference from the
// ODS builders, reified shapes, recipes by name and the activation table.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Dialect/TE/IR/TEQuantLayout.h"
#include "te/InitAll.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::te;

namespace {

class TEDialectTest : public ::testing::Test {
protected:
  TEDialectTest() {
    DialectRegistry registry;
    registerAllTEDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    loc = UnknownLoc::get(&context);
    module = ModuleOp::create(loc);
    builder.setInsertionPointToEnd(module->getBody());
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type elt = {}) {
    return RankedTensorType::get(shape, elt ? elt : builder.getBF16Type());
  }

  /// A function whose arguments have the given types; returns its arguments.
  ValueRange makeFunc(ArrayRef<Type> argTypes) {
    auto func = func::FuncOp::create(builder, loc, "f",
                                     builder.getFunctionType(argTypes, {}));
    Block *body = func.addEntryBlock();
    builder.setInsertionPointToStart(body);
    return body->getArguments();
  }

  void finishFunc() { func::ReturnOp::create(builder, loc); }

  MLIRContext context;
  OpBuilder builder{&context};
  Location loc = UnknownLoc::get(&context);
  OwningOpRef<ModuleOp> module;
};

TEST_F(TEDialectTest, BuildersInferDynamicResultTypes) {
  ValueRange args =
      makeFunc({tensor({ShapedType::kDynamic, ShapedType::kDynamic, 64}),
                tensor({64}), tensor({512, 64}), tensor({64, 256}),
                tensor({ShapedType::kDynamic, 64}), tensor({128, 64}),
                tensor({8, 64})});
  auto mlp = LayerNormMLPOp::create(
      builder, loc, args[0], args[1], /*ln_bias=*/Value(), args[2],
      /*fc1_bias=*/Value(), args[3], /*fc2_bias=*/Value(), /*scales=*/Value(),
      NormalizationKind::RMSNorm,
      ActivationAttr::get(&context, ActivationKind::SwiGLU), APFloat(1e-6),
      /*zero_centered_gamma=*/false, /*return_layernorm_output=*/false,
      /*checkpoint=*/true, getDefaultRecipe(&context, "mxfp8"),
      /*tp=*/TensorParallelAttr());
  EXPECT_EQ(mlp.getOutput().getType(),
            tensor({ShapedType::kDynamic, ShapedType::kDynamic, 64}));
  EXPECT_FALSE(mlp.getLnOutput());
  EXPECT_TRUE(mlp.isGated());
  EXPECT_EQ(mlp.getFfnSize(), 256);

  auto ln = LayerNormLinearOp::create(
      builder, loc, args[4], args[1], Value(), args[5], Value(),
      /*scales=*/Value(), NormalizationKind::LayerNorm, APFloat(1e-5), false,
      /*return_layernorm_output=*/true, RecipeAttrInterface(),
      /*tp=*/TensorParallelAttr());
  ASSERT_EQ(ln->getNumResults(), 2u);
  // Sequence parallel: the rank's 8 rows in, the group's 16 out (the norm
  // output is gathered before the column-parallel GEMM).
  auto sp = LayerNormLinearOp::create(
      builder, loc, args[6], args[1], Value(), args[5], Value(),
      /*scales=*/Value(), NormalizationKind::RMSNorm, APFloat(1e-5), false,
      /*return_layernorm_output=*/false, RecipeAttrInterface(),
      TensorParallelAttr::get(&context, 2, /*sequence_parallel=*/true,
                              /*reduce_param_grads=*/false));
  EXPECT_EQ(sp.getOutput().getType(), tensor({16, 128}));
  EXPECT_TRUE(succeeded(verify(sp)));
  EXPECT_EQ(ln.getOutput().getType(), tensor({ShapedType::kDynamic, 128}));
  EXPECT_EQ(ln.getLnOutput().getType(), tensor({ShapedType::kDynamic, 64}));
  EXPECT_EQ(ln.getRecipeOrDefault().getRecipeName(), "bf16");
  // What passes ask every module op through ModuleOpInterface.
  auto lnIface = cast<ModuleOpInterface>(ln.getOperation());
  auto mlpIface = cast<ModuleOpInterface>(mlp.getOperation());
  EXPECT_EQ(lnIface.getNumForwardSlots(), 3);
  EXPECT_EQ(lnIface.getNumBackwardSlots(), 2);
  EXPECT_EQ(mlpIface.getNumForwardSlots(), 6);
  EXPECT_EQ(mlpIface.getNumBackwardSlots(), 4);
  EXPECT_FALSE(lnIface.getModuleRecipe());
  EXPECT_FALSE(lnIface.getScalesOperand());
  lnIface.setModuleRecipe(getDefaultRecipe(&context, "fp8-current"));
  EXPECT_EQ(ln.getRecipeOrDefault().getRecipeName(), "fp8-current");
  lnIface.setModuleRecipe(RecipeAttrInterface());
  EXPECT_EQ(ln.getRecipeOrDefault().getRecipeName(), "bf16");
  EXPECT_EQ(mlpIface.getModuleRecipe().getRecipeName(), "mxfp8");
  finishFunc();
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(TEDialectTest, InferenceFailsWithADiagnosticOnBadWeights) {
  ValueRange args = makeFunc({tensor({4, 64}), tensor({64})});
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  SmallVector<Type> inferred;
  LinearOp::Properties props;
  props.operandSegmentSizes = {1, 1, 0, 0}; // input, weight; no bias, scales
  EXPECT_TRUE(failed(LinearOp::inferReturnTypes(
      &context, loc, ValueRange{args[0], args[1]}, DictionaryAttr(),
      OpaqueProperties(&props), RegionRange(), inferred)));
  EXPECT_EQ(message, "'te.linear' op cannot infer result types: the output "
                     "weight must be a 2-D tensor");
  finishFunc();
}

TEST_F(TEDialectTest, ReifiedShapesUseInputDims) {
  ValueRange args =
      makeFunc({tensor({ShapedType::kDynamic, 8, 64}), tensor({32, 64})});
  auto linear = LinearOp::create(builder, loc, args[0], args[1], Value(), Value(),
                                 RecipeAttrInterface());
  ReifiedRankedShapedTypeDims shapes;
  ASSERT_TRUE(succeeded(linear.reifyResultShapes(builder, shapes)));
  ASSERT_EQ(shapes.size(), 1u);
  ASSERT_EQ(shapes[0].size(), 3u);
  auto dim = dyn_cast_or_null<tensor::DimOp>(
      dyn_cast<Value>(shapes[0][0]).getDefiningOp());
  ASSERT_TRUE(dim);
  EXPECT_EQ(dim.getSource(), args[0]);
  EXPECT_EQ(getConstantIntValue(shapes[0][1]), 8);
  EXPECT_EQ(getConstantIntValue(shapes[0][2]), 32);
  finishFunc();
}

TEST_F(TEDialectTest, RecipesByName) {
  for (StringRef name : getRecipeNames()) {
    RecipeAttrInterface recipe = getDefaultRecipe(&context, name);
    ASSERT_TRUE(recipe) << name.str();
    EXPECT_EQ(recipe.getRecipeName(), name);
    EXPECT_EQ(recipe.isQuantized(), name != "bf16") << name.str();
  }
  EXPECT_FALSE(getDefaultRecipe(&context, "fp8"));
  auto delayed =
      cast<FP8DelayedRecipeAttr>(getDefaultRecipe(&context, "fp8-delayed"));
  EXPECT_EQ(delayed.getAmaxHistoryLen(), 1024);
  EXPECT_EQ(delayed.getMargin(), 0);
  EXPECT_EQ(delayed.getFormat(), FP8Format::Hybrid);
  auto block =
      cast<FP8BlockRecipeAttr>(getDefaultRecipe(&context, "fp8-block"));
  EXPECT_EQ(block.getWBlockDim(), 2);
  EXPECT_EQ(block.getXBlockDim(), 1);
  auto nvfp4 = cast<NVFP4RecipeAttr>(getDefaultRecipe(&context, "nvfp4"));
  EXPECT_TRUE(nvfp4.getRht() && nvfp4.getStochasticRounding() &&
              nvfp4.getWeight_2d());
  // Non-default parameters in the dialect's attribute syntax.
  auto noRht = dyn_cast_or_null<NVFP4RecipeAttr>(
      getDefaultRecipe(&context, "#te.nvfp4<rht = false>"));
  ASSERT_TRUE(noRht);
  EXPECT_FALSE(noRht.getRht());
  EXPECT_TRUE(noRht.getStochasticRounding());
  // Malformed or non-recipe attributes are refused (null), quietly.
  EXPECT_FALSE(getDefaultRecipe(&context, "#te.nvfp4<rht = maybe>"));
  EXPECT_FALSE(getDefaultRecipe(&context, "#te.unknown"));
  EXPECT_FALSE(getDefaultRecipe(&context, "#te.nvfp4<rht = false"));
}

TEST_F(TEDialectTest, NVFP4FourOverSix) {
  auto plain = cast<NVFP4RecipeAttr>(getDefaultRecipe(&context, "nvfp4"));
  EXPECT_EQ(plain.getFourOverSix(), NVFP4Scope::None);
  EXPECT_FALSE(plain.fourOverSix(true) || plain.fourOverSix(false));
  EXPECT_EQ(plain.fourOverSixE4M3Max(true), 448.0f);
  // 4-over-6 weights; the 256 bound for activations only: weights keep 448.
  auto w = dyn_cast_or_null<NVFP4RecipeAttr>(
      getDefaultRecipe(&context, "#te.nvfp4<four_over_six = weights, "
                                 "four_over_six_e4m3_use_256 = activations>"));
  ASSERT_TRUE(w);
  EXPECT_TRUE(w.fourOverSix(true));
  EXPECT_FALSE(w.fourOverSix(false));
  EXPECT_EQ(w.fourOverSixE4M3Max(true), 448.0f);
  EXPECT_EQ(w.fourOverSixE4M3Max(false), 448.0f);
  auto all = dyn_cast_or_null<NVFP4RecipeAttr>(getDefaultRecipe(
      &context,
      "#te.nvfp4<rht = false, four_over_six = all, four_over_six_err_mode = "
      "mse>"));
  ASSERT_TRUE(all);
  EXPECT_TRUE(all.fourOverSix(true) && all.fourOverSix(false));
  EXPECT_EQ(all.fourOverSixE4M3Max(true), 256.0f);
  EXPECT_EQ(all.fourOverSixE4M3Max(false), 256.0f);
  EXPECT_EQ(all.getFourOverSixErrMode(), NVFP4ErrMode::MSE);
  // An invalid one says why.
  std::string why;
  EXPECT_FALSE(
      getDefaultRecipe(&context, "#te.nvfp4<four_over_six = all>", &why));
  EXPECT_NE(why.find("needs rht = false"), std::string::npos) << why;
}

TEST_F(TEDialectTest, ActivationTable) {
  const char *gated[] = {"geglu",  "glu",    "qgeglu",        "reglu",
                         "sreglu", "swiglu", "clamped_swiglu", "geglu_erf"};
  const char *plain[] = {"gelu", "qgelu", "relu", "srelu", "silu", "gelu_erf"};
  for (const char *name : gated) {
    auto kind = symbolizeActivationKind(name);
    ASSERT_TRUE(kind) << name;
    EXPECT_TRUE(isGatedActivation(*kind)) << name;
    EXPECT_EQ(stringifyActivationKind(*kind), name);
  }
  for (const char *name : plain) {
    auto kind = symbolizeActivationKind(name);
    ASSERT_TRUE(kind) << name;
    EXPECT_FALSE(isGatedActivation(*kind)) << name;
  }
  // TE's twelve plus PyTorch's erf GELU and its gated form.
  EXPECT_EQ(getMaxEnumValForActivationKind() + 1, 14u);
  // Codes are dense and in table order (the runtime's TE_RT_ACT_* codes).
  for (auto [i, a] : llvm::enumerate(getActivations()))
    EXPECT_EQ(static_cast<uint32_t>(a.kind), i) << a.name.str();
}

TEST_F(TEDialectTest, ActivationAttr) {
  // Defaults are filled in; only clamped_swiglu has parameters.
  auto gelu = ActivationAttr::get(&context, ActivationKind::GELU);
  EXPECT_TRUE(gelu.getParamValues().empty());
  EXPECT_FALSE(gelu.isGated());
  EXPECT_TRUE(gelu.hasGemmEpilogue());
  EXPECT_TRUE(gelu.hasDbiasFusion());
  EXPECT_EQ(gelu.getRuntimeCode(), 0);
  auto clamped = ActivationAttr::get(&context, ActivationKind::ClampedSwiGLU);
  EXPECT_EQ(clamped.getParamValues(), ArrayRef<double>({7.0, 1.702, 1.0}));
  EXPECT_EQ(clamped.getParam("alpha"), 1.702);
  EXPECT_FALSE(clamped.getParam("beta"));
  EXPECT_TRUE(clamped.isGated());
  EXPECT_FALSE(clamped.hasGemmEpilogue());
  EXPECT_FALSE(clamped.hasDbiasFusion());
  // Only the tanh GELU has cuBLASLt's epilogue (not the erf one).
  EXPECT_FALSE(ActivationAttr::get(&context, ActivationKind::GELUErf)
                   .hasGemmEpilogue());
  // Explicit defaults are the same attribute (uniqued) as implicit ones.
  auto parsed = dyn_cast_or_null<ActivationAttr>(parseAttribute(
      "#te.act<clamped_swiglu, limit = 7.0, glu_linear_offset = 1.0>",
      &context));
  EXPECT_EQ(parsed, clamped);
  auto five = dyn_cast_or_null<ActivationAttr>(
      parseAttribute("#te.act<clamped_swiglu, limit = 5.0>", &context));
  ASSERT_TRUE(five);
  EXPECT_EQ(five.getParam("limit"), 5.0);
  // Printing leaves the defaults out.
  std::string text;
  llvm::raw_string_ostream os(text);
  Attribute(five).print(os);
  EXPECT_EQ(text, "#te.act<clamped_swiglu, limit = 5.000000e+00>");
  // Through the interface, without knowing the attribute class.
  auto iface = cast<ActivationAttrInterface>(Attribute(five));
  EXPECT_TRUE(iface.isGated());
  EXPECT_EQ(iface.getActivationName(), "clamped_swiglu");
}

} // namespace

namespace {

TEST(SymDimTest, StaticArithmeticFolds) {
  SymDim a(256), b(128);
  EXPECT_EQ((a * b).getValue(), 32768);
  EXPECT_EQ(a.roundUp(128).getValue(), 256);
  EXPECT_EQ(SymDim(257).roundUp(128).getValue(), 384);
  EXPECT_EQ(SymDim(129).ceilDiv(128).getValue(), 2);
  EXPECT_EQ(a.exactDiv(32).getValue(), 8);
  EXPECT_EQ((a + b - SymDim(1)).getValue(), 383);
}

TEST(SymDimTest, SymbolicExpressions) {
  SymDim d0 = SymDim::symbol("d0");
  EXPECT_FALSE(d0.isStatic());
  EXPECT_EQ((d0 * SymDim(8)).str(), "d0*8");
  EXPECT_EQ((d0 * SymDim(8) * SymDim(64)).str(), "d0*512");
  EXPECT_EQ((d0 * SymDim(64)).exactDiv(32).str(), "d0*2");
  EXPECT_EQ((d0 * SymDim(8)).exactDiv(32).str(), "d0*8/32");
  EXPECT_EQ((d0 * SymDim(8)).roundUp(128).str(), "roundup(d0*8, 128)");
  EXPECT_EQ(d0.ceilDiv(128).roundUp(4).str(), "roundup(ceildiv(d0, 128), 4)");
  EXPECT_EQ((d0 * SymDim::symbol("d1")).str(), "d0*d1");
  EXPECT_EQ((d0 + SymDim(4)).str(), "d0 + 4");
  EXPECT_EQ(((d0 + SymDim(4)) * SymDim(2)).str(), "(d0 + 4)*2");
  EXPECT_EQ(d0.toShapedDim(), ShapedType::kDynamic);
  EXPECT_EQ(SymDim(7).toShapedDim(), 7);
  // Multiplying by 1 or adding 0 keeps the expression as it was.
  EXPECT_EQ((d0 * SymDim(1) + SymDim(0)).str(), "d0");
}

TEST_F(TEDialectTest, InnerTensorsOfAQuantizedType) {
  auto type = QuantizedTensorType::get(
      &context, {ShapedType::kDynamic, 64}, QuantFormat::E4M3,
      getDefaultRecipe(&context, "mxfp8"), QuantUsage::Both, TargetArch::Hopper,
      false, false, false, false);
  SmallVector<InnerTensor> inner = type.getInnerTensors();
  ASSERT_EQ(inner.size(), 4u);
  EXPECT_EQ(inner[1].name, "rowwise_scale_inv");
  EXPECT_EQ(inner[1].shape[0].str(), "roundup(d0, 128)");
  EXPECT_EQ(inner[1].shape[1].getValue(), 4);
  EXPECT_EQ(inner[3].shape[0].str(), "roundup(d0/32, 4)");
  EXPECT_EQ(type.withUsage(QuantUsage::Rowwise).getInnerTensors().size(), 2u);
}

/// A dim algebra over plain integers: the layout rules evaluated at given
/// dims, as the compiled code evaluates them at run time.
struct IntDim {
  IntDim(int64_t v = 0) : v(v) {}
  IntDim operator*(IntDim rhs) const { return v * rhs.v; }
  IntDim exactDiv(int64_t d) const { return v / d; }
  IntDim ceilDiv(int64_t d) const { return (v + d - 1) / d; }
  IntDim roundUp(int64_t m) const { return ceilDiv(m).v * m; }
  int64_t v;
};

TEST_F(TEDialectTest, InnerTensorLayoutsAgreeForDynamicDims) {
  // The layouts of a type with a dynamic token dim, evaluated at M, are those
  // of the type with M static, for every lowered recipe and flag set.
  struct Case {
    const char *recipe;
    TargetArch arch;
    bool block2d, swizzled, rht;
  };
  for (Case c : {Case{"fp8-current", TargetArch::Hopper, false, false, false},
                 Case{"fp8-block", TargetArch::Hopper, false, false, false},
                 Case{"fp8-block", TargetArch::Hopper, true, false, false},
                 Case{"mxfp8", TargetArch::Blackwell, false, true, false},
                 Case{"nvfp4", TargetArch::Blackwell, false, true, true},
                 Case{"nvfp4", TargetArch::Blackwell, true, true, false}}) {
    RecipeAttrInterface recipe = getDefaultRecipe(&context, c.recipe);
    QuantFormat format =
        StringRef(c.recipe) == "nvfp4" ? QuantFormat::E2M1 : QuantFormat::E4M3;
    auto typeOf = [&](int64_t m) {
      return QuantizedTensorType::get(&context, {m, 3, 256}, format, recipe,
                                      QuantUsage::Both, c.arch, c.block2d,
                                      c.swizzled, false, c.rht);
    };
    QuantizedTensorType dynamic = typeOf(ShapedType::kDynamic);
    for (int64_t m : {32, 160, 256, 1024}) {
      SmallVector<InnerTensor> expected = typeOf(m).getInnerTensors();
      SmallVector<InnerTensorOf<IntDim>> got =
          getInnerTensorsOf<IntDim>(dynamic, {IntDim(m), 3, 256});
      ASSERT_EQ(got.size(), expected.size()) << c.recipe;
      for (auto [g, e] : llvm::zip(got, expected)) {
        EXPECT_EQ(g.name, e.name);
        ASSERT_EQ(g.shape.size(), e.shape.size()) << c.recipe << " " << e.name;
        for (auto [gd, ed] : llvm::zip(g.shape, e.shape))
          EXPECT_EQ(gd.v, ed.getValue())
              << c.recipe << " " << e.name << " at M = " << m;
      }
    }
  }
}

} // namespace
