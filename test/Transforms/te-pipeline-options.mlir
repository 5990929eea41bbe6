// RUN: te-opt %s --te-pipeline --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: te-opt %s --te-pipeline="train=true" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=TRAIN
// RUN: te-opt %s --te-describe --te-generate-backward --te-decompose --te-fuse-gemm-epilogues --te-lower-to-runtime --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASSES
// RUN: te-opt %s --te-pipeline="arch=blackwell gemm-act-epilogues=on gemm-dact-epilogue-max-rows=4096 gemm-bias-grad-epilogue-max-rows=64 dedup-layers=off" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=SET
// RUN: not te-opt %s --te-pipeline="arch=ampere" 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not te-opt %s --te-pipeline="arch=ampere train=true" 2>&1 | FileCheck %s --check-prefix=ARCH-TRAIN
// RUN: not te-opt %s --te-pipeline="dedup-layers=sometimes" 2>&1 | FileCheck %s --check-prefix=DEDUP
// RUN: not te-opt %s --te-pipeline="gemm-act-epilogues=maybe" 2>&1 | FileCheck %s --check-prefix=ACT
// RUN: not te-opt %s --te-lower-to-runtime="dedup-layers=" 2>&1 | FileCheck %s --check-prefix=EMPTY
//
// The enum-valued options (include/te/Transforms/PassOptions.h): one
// default each, declared once; te-pipeline (and te-compile) compile with
// act-epilogues and dedup-layers auto, the bare passes default to off; every
// pass defaults to hopper. An invalid value reaches the pass that reads it,
// which says what it expected (at the module).

// PIPELINE:      te-decompose{arch=hopper strict-recipe=false}
// PIPELINE:      te-fuse-gemm-epilogues{act-epilogue-min-rows=1024 act-epilogues=auto bias-grad-epilogue-max-rows=-1 dact-epilogue-max-rows=-1 report-work=false}
// PIPELINE:      te-lower-to-runtime{dedup-layers=auto}

// TRAIN:         te-generate-backward{arch=hopper checkpoint=false dedup=true}
// TRAIN:         te-decompose{arch=hopper strict-recipe=false}

// PASSES:        te-describe{arch=hopper mode=training out=- pretty=false}
// PASSES-NEXT:   te-generate-backward{arch=hopper checkpoint=false dedup=true}
// PASSES-NEXT:   te-decompose{arch=hopper strict-recipe=false}
// PASSES-NEXT:   te-fuse-gemm-epilogues{act-epilogue-min-rows=1024 act-epilogues=off bias-grad-epilogue-max-rows=-1 dact-epilogue-max-rows=-1 report-work=false}
// PASSES-NEXT:   te-lower-to-runtime{dedup-layers=off}

// SET:           te-decompose{arch=blackwell strict-recipe=false}
// SET:           te-fuse-gemm-epilogues{act-epilogue-min-rows=1024 act-epilogues=on bias-grad-epilogue-max-rows=64 dact-epilogue-max-rows=4096 report-work=false}
// SET:           te-lower-to-runtime{dedup-layers=off}

// ARCH:          error: te-decompose: unknown arch 'ampere' (hopper or blackwell)
// ARCH-TRAIN:    error: te-generate-backward: unknown arch 'ampere' (expected hopper or blackwell)
// DEDUP:         error: te-lower-to-runtime: dedup-layers must be off, auto or on, got 'sometimes'
// ACT:           error: te-fuse-gemm-epilogues: act-epilogues must be off, auto or on, got 'maybe'
// EMPTY:         error: te-lower-to-runtime: dedup-layers must be off, auto or on, got ''

func.func @f(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) -> tensor<8x32xf32> {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) : (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
