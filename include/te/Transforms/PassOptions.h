//===- PassOptions.h - Enum-typed options of the te passes ------*- C++ -*-===//
//
// The enum-valued options of the passes, te-pipeline and te-compile (arch,
// te-describe's mode, act-epilogues, dedup-layers): their enums, their
// names, and their defaults, each declared once here.
//
// An option's value is an EnumOption: one of the enum's values, or the
// spelling of an invalid one. The option's parser (llvm::cl::parser below)
// keeps an invalid spelling instead of failing, so that the pass that reads
// the option reports it with its own diagnostic, at the IR, whichever way
// the option came in (a pass option, te-pipeline's, te-compile's flag).
//
//===----------------------------------------------------------------------===//

#ifndef TE_TRANSFORMS_PASSOPTIONS_H
#define TE_TRANSFORMS_PASSOPTIONS_H

#include "te/Dialect/TE/IR/TEAttrs.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <utility>

namespace mlir::te {

//===----------------------------------------------------------------------===//
// The enums
//===----------------------------------------------------------------------===//

/// te-fuse-gemm-epilogues act-epilogues (te-pipeline and te-compile
/// gemm-act-epilogues): fold GELU / dGELU into no GEMM, the GEMMs with a
/// static row count >= the minimum, or every eligible GEMM.
enum class ActEpilogues { Off, Auto, On };

/// te-lower-to-runtime dedup-layers (te-pipeline, te-compile): outline no
/// segment, the segments that repeat in their function, or every segment.
enum class DedupLayers { Off, Auto, On };

/// te-describe mode: describe for training (saved tensors, gradients) or
/// inference.
enum class DescribeMode { Training, Inference };

/// The names of an option enum's values, in their help order.
template <typename EnumT> struct EnumOptionNames;

template <> struct EnumOptionNames<TargetArch> {
  static constexpr std::pair<const char *, TargetArch> values[] = {
      {"hopper", TargetArch::Hopper}, {"blackwell", TargetArch::Blackwell}};
};
template <> struct EnumOptionNames<ActEpilogues> {
  static constexpr std::pair<const char *, ActEpilogues> values[] = {
      {"off", ActEpilogues::Off},
      {"auto", ActEpilogues::Auto},
      {"on", ActEpilogues::On}};
};
template <> struct EnumOptionNames<DedupLayers> {
  static constexpr std::pair<const char *, DedupLayers> values[] = {
      {"off", DedupLayers::Off},
      {"auto", DedupLayers::Auto},
      {"on", DedupLayers::On}};
};
template <> struct EnumOptionNames<DescribeMode> {
  static constexpr std::pair<const char *, DescribeMode> values[] = {
      {"training", DescribeMode::Training},
      {"inference", DescribeMode::Inference}};
};

/// The value named `name`, if any.
template <typename EnumT>
std::optional<EnumT> parseEnumOption(llvm::StringRef name) {
  for (auto [n, v] : EnumOptionNames<EnumT>::values)
    if (name == n)
      return v;
  return std::nullopt;
}

/// The name of `value`.
template <typename EnumT> llvm::StringRef stringifyEnumOption(EnumT value) {
  for (auto [n, v] : EnumOptionNames<EnumT>::values)
    if (v == value)
      return n;
  return "";
}

//===----------------------------------------------------------------------===//
// The defaults
//===----------------------------------------------------------------------===//

/// Architecture class of the quantized layouts, everywhere (te-compile's
/// --arch default, sm_90a, is its target).
constexpr TargetArch kDefaultArch = TargetArch::Hopper;
/// te-describe's mode.
constexpr DescribeMode kDefaultDescribeMode = DescribeMode::Training;
/// The compilation's (te-compile --gemm-act-epilogues, te-pipeline
/// gemm-act-epilogues).
constexpr ActEpilogues kDefaultGemmActEpilogues = ActEpilogues::Auto;
/// The bare pass's (te-fuse-gemm-epilogues act-epilogues): nothing folds
/// unless asked.
constexpr ActEpilogues kDefaultPassActEpilogues = ActEpilogues::Off;
/// The compilation's row limits of the dGELU and bias-gradient epilogues
/// (te-compile --gemm-dact-epilogue-max-rows /
/// --gemm-bias-grad-epilogue-max-rows; -1: no limit).
constexpr int64_t kDefaultDActEpilogueMaxRows = -1;
constexpr int64_t kDefaultBiasGradEpilogueMaxRows = -1;
/// The compilation's (te-compile --dedup-layers, te-pipeline dedup-layers).
constexpr DedupLayers kDefaultDedupLayers = DedupLayers::Auto;
/// The bare pass's (te-lower-to-runtime dedup-layers): every op inline.
constexpr DedupLayers kDefaultPassDedupLayers = DedupLayers::Off;

/// te-compile's --arch names: the GPU target of each architecture class.
inline llvm::StringRef getTargetName(TargetArch arch) {
  return arch == TargetArch::Hopper ? "sm_90a" : "sm_100a";
}
/// The architecture class of te-compile's --arch name, if any.
inline std::optional<TargetArch> getArchOfTarget(llvm::StringRef target) {
  if (target == "sm_90a")
    return TargetArch::Hopper;
  if (target == "sm_100a")
    return TargetArch::Blackwell;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// EnumOption
//===----------------------------------------------------------------------===//

/// The value of an enum-typed option: a value of `EnumT`, or the spelling of
/// none (which the pass reading it reports).
template <typename EnumT> class EnumOption {
public:
  EnumOption() = default;
  EnumOption(EnumT value) : value(value) {}

  /// The value named `spelling`, or an invalid option that keeps it.
  static EnumOption parse(llvm::StringRef spelling) {
    EnumOption option;
    option.value = parseEnumOption<EnumT>(spelling);
    if (!option.value)
      option.invalidSpelling = spelling.str();
    return option;
  }

  bool isValid() const { return value.has_value(); }
  /// The value (valid options only).
  EnumT operator*() const {
    assert(value && "an invalid option value");
    return *value;
  }
  /// The name of the value, or the invalid spelling.
  llvm::StringRef spelling() const {
    return value ? stringifyEnumOption(*value)
                 : llvm::StringRef(invalidSpelling);
  }
  /// "a, b or c": the valid names, for messages.
  static std::string validNames() {
    std::string names;
    llvm::ArrayRef values(EnumOptionNames<EnumT>::values);
    for (auto [i, entry] : llvm::enumerate(values))
      names += (i == 0                   ? ""
                : i + 1 == values.size() ? " or "
                                         : ", ") +
               std::string(entry.first);
    return names;
  }

  friend bool operator==(const EnumOption &option, EnumT v) {
    return option.value == v;
  }
  friend bool operator!=(const EnumOption &option, EnumT v) {
    return !(option == v);
  }
  friend llvm::raw_ostream &operator<<(llvm::raw_ostream &os,
                                       const EnumOption &option) {
    return os << option.spelling();
  }

private:
  std::optional<EnumT> value;
  std::string invalidSpelling;
};

using ArchOption = EnumOption<TargetArch>;
using ActEpiloguesOption = EnumOption<ActEpilogues>;
using DedupLayersOption = EnumOption<DedupLayers>;
using DescribeModeOption = EnumOption<DescribeMode>;

} // namespace mlir::te

namespace llvm::cl {

/// The command-line parser of an EnumOption (pass options, te-pipeline,
/// te-compile): never fails; the help shows the valid names.
template <typename EnumT>
class parser<mlir::te::EnumOption<EnumT>>
    : public basic_parser<mlir::te::EnumOption<EnumT>> {
public:
  using Value = mlir::te::EnumOption<EnumT>;
  using OptVal = typename basic_parser<Value>::OptVal;

  parser(Option &o) : basic_parser<Value>(o) {}

  /// Keeps `arg` (returns false: no error; see EnumOption).
  bool parse(Option &, StringRef, StringRef arg, Value &value) {
    value = Value::parse(arg);
    return false;
  }

  StringRef getValueName() const override {
    static const std::string names = [] {
      std::string s;
      for (auto [n, v] : mlir::te::EnumOptionNames<EnumT>::values)
        s += (s.empty() ? "" : "|") + std::string(n);
      return s;
    }();
    return names;
  }

  void printOptionDiff(const Option &o, const Value &v, const OptVal &,
                       size_t globalWidth) const {
    this->printOptionName(o, globalWidth);
    outs() << "= " << v.spelling() << "\n";
  }

  /// Prints `v` in a pass pipeline (for pass options without operator<<).
  static void print(raw_ostream &os, const Value &v) { os << v; }
};

} // namespace llvm::cl

#endif // TE_TRANSFORMS_PASSOPTIONS_H
