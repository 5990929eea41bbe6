//===- Inputs.cpp - te-run's inputs -----------------------------*- C++ -*-===//
//
// The inputs of an entry: given as .npy files (--input, --inputs), TE's
// initial recipe state, or --random values at dims te-run chooses so that
// they meet the entry's alignment (under --tp: GLOBAL values, each rank
// keeping its part).
//
//===----------------------------------------------------------------------===//

#include "DimExpr.h"
#include "Driver.h"

#include <cctype>
#include <numeric>

namespace te::run {

using te::dimexpr::parseUnsigned;

/// The inputs of `e` given as files: --input, then --inputs DIR (others
/// are left empty).
std::vector<Tensor> givenInputs(const Entry &e) {
  size_t n = e.numArgs;
  std::vector<Tensor> preset(n);
  std::vector<bool> have(n);
  for (const std::string &spec : opts.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq + 1 == spec.size())
      die("--input expects NAME=FILE, got '" + spec + "'");
    std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    std::optional<size_t> index;
    std::string_view digits = name;
    if (digits.substr(0, 3) == "arg")
      digits.remove_prefix(3);
    if (std::optional<uint64_t> k = parseUnsigned(digits))
      index = *k;
    for (size_t i = 0; !index && i < n; ++i)
      for (auto [role, key] : kNamingRoles)
        if (auto s = roleOf(e.arg(i), role); s && *s == name)
          index = i;
    if (!index || *index >= n)
      die("--input " + name + ": " + e.name + " has no such argument (" +
          str(n) + " arguments; see --list)");
    if (have[*index])
      die("--input " + name + ": " + e.name + " " + e.argLabel(*index) +
          " is given twice");
    std::string what = e.name + ": " + e.argLabel(*index) + " ('" + file + "')";
    preset[*index] = localPart(loadNpy(file, dtypeOf(e.arg(*index))),
                               shardOf(e.arg(*index), what, true), what);
    have[*index] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (have[i] || opts.inputsDir.empty())
      continue;
    std::string path = findNpy(opts.inputsDir, "arg" + std::to_string(i));
    if (path.empty())
      continue;
    std::string what = e.name + ": " + e.argLabel(i) + " ('" + path + "')";
    preset[i] = localPart(loadNpy(path, dtypeOf(e.arg(i))),
                          shardOf(e.arg(i), what, true), what);
    have[i] = true;
  }
  return preset;
}

/// The dim symbols of `text` (a dim expression).
static std::vector<size_t> symbolsOf(const std::string &text) {
  std::vector<size_t> symbols;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != 'd' ||
        (i && std::isalnum(static_cast<unsigned char>(text[i - 1]))))
      continue;
    size_t j = i + 1;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])))
      ++j;
    if (std::optional<size_t> k =
            te::dimexpr::symbolIndex(text.substr(i, j - i)))
      symbols.push_back(*k);
  }
  return symbols;
}

/// --tp: the factor between the global and the local value of each dim
/// symbol: N for the symbol of a split argument's sharded dim (its value
/// in the signature is local; te-run chooses the global one), else 1.
/// `where` names such an argument.
std::vector<int64_t> dimScales(const Entry &e,
                               std::vector<std::string> *where) {
  std::vector<int64_t> scale(e.numDims, 1);
  if (where)
    where->assign(e.numDims, "");
  if (opts.tp <= 1)
    return scale;
  for (size_t i = 0; i < e.numArgs; ++i) {
    const te_module_tensor *a = e.arg(i);
    Shard shard = shardOf(a, e.name + ": " + e.argLabel(i), true);
    int64_t d = te::tp::shardedDim(shard, size_t(te_module_tensor_rank(a)));
    if (d < 0)
      continue;
    if (auto k = te::dimexpr::symbolIndex(te_module_tensor_dim(a, d));
        k && *k < e.numDims && scale[*k] == 1) {
      scale[*k] = opts.tp;
      if (where)
        (*where)[*k] = e.argLabel(i) + " (te.tp_shard " +
                       te::tp::shardName(shard) + ", dim " + str(d) + ")";
    }
  }
  return scale;
}

/// The dim values of the inputs te-run generates. Dims bound by the given
/// inputs keep their values; the others (`chosen`) start at `choice` (8
/// unless a recipe asked for more) and are raised until the dim expressions
/// of its quantized tensors' layouts divide exactly (MXFP8's
/// `roundup(d0/32, 4)` needs d0 % 32 == 0): the alignment the module info
/// states.
std::vector<int64_t> generatedDims(const Entry &e,
                                   const std::vector<Tensor> &given,
                                   std::vector<int64_t> &choice,
                                   std::vector<bool> &chosen) {
  size_t numDims = e.numDims;
  std::vector<int64_t> dims(numDims, -1);
  for (size_t i = 0; i < e.numArgs; ++i) {
    const te_module_tensor *a = e.arg(i);
    size_t rank = size_t(te_module_tensor_rank(a));
    if (given[i].dtype.empty() || given[i].shape.size() != rank)
      continue; // not given, raw qtensor bytes, or a rank bindDims reports
    for (size_t d = 0; d < rank; ++d)
      if (auto k = te::dimexpr::symbolIndex(te_module_tensor_dim(a, d));
          k && dims[*k] < 0)
        dims[*k] = given[i].shape[d];
  }
  // Under --tp a choice is global: a sharded dim's local value is 1/N.
  std::vector<std::string> where;
  std::vector<int64_t> scale = dimScales(e, &where);
  chosen.assign(numDims, false);
  for (size_t k = 0; k < numDims; ++k)
    if (dims[k] < 0) {
      if (choice[k] % scale[k] != 0)
        die(e.name + ": " + where[k] + ": its global value of d" + str(k) +
            " = " + str(choice[k]) + " is not a multiple of --tp " +
            str(opts.tp) + " (give the input with --input or --inputs)");
      chosen[k] = true, dims[k] = choice[k] / scale[k];
    }
  // The expressions of the quantized tensors' inner shapes: their exact
  // divisions are the recipe's alignment (a plain result's shape that does
  // not divide is an error, reported where it is evaluated).
  std::vector<std::string> exprs;
  auto collect = [&](const te_module_tensor *t) {
    for (int64_t p = 0; p < te_module_tensor_num_inner(t); ++p)
      for (int64_t d = 0; d < te_module_tensor_inner_rank(t, p); ++d)
        if (std::string x = te_module_tensor_inner_dim(t, p, d);
            !parseUnsigned(x))
          exprs.push_back(x);
  };
  for (size_t i = 0; i < e.numArgs; ++i)
    collect(e.arg(i));
  for (size_t i = 0; i < e.numResults; ++i)
    collect(e.result(i));
  for (int round = 0; round < 16; ++round) {
    bool raised = false;
    for (const std::string &x : exprs) {
      int64_t value, divisor;
      if (te_module_eval_dim(x.c_str(), dims.data(), int64_t(numDims), &value,
                             &divisor) == 0 ||
          divisor == 0)
        continue; // fine, or an error reported where the shape is used
      for (size_t k : symbolsOf(x))
        if (chosen[k] && choice[k] < (int64_t(1) << 20)) {
          int64_t multiple; // the global multiple (local x --tp's N)
          if (divisor < 0 || divisor > (int64_t(1) << 30) ||
              __builtin_mul_overflow(divisor, scale[k], &multiple))
            continue; // no such dim: reported where the shape is used
          choice[k] = std::lcm(choice[k], multiple);
          dims[k] = choice[k] / scale[k];
          raised = true;
          break;
        }
    }
    if (!raised)
      break;
  }
  return dims;
}

/// The inputs of `e`: the given ones, then TE's initial recipe state, then
/// --random values at `dims` (the generated dims).
std::vector<Tensor> completeInputs(const Entry &e, std::vector<Tensor> preset,
                                   const std::vector<int64_t> &dims) {
  for (size_t i = 0; i < preset.size(); ++i) {
    if (!preset[i].dtype.empty())
      continue;
    const te_module_tensor *a = e.arg(i);
    std::vector<int64_t> shape = shapeOf(a, dims.data());
    // Recipe state not given starts as TE initializes it.
    if (std::optional<Tensor> state = initialState(a, shape)) {
      preset[i] = std::move(*state);
      continue;
    }
    if (opts.randomSeed < 0)
      die(e.name + ": no value for " + e.argLabel(i) +
          " (use --input, --inputs or --random)");
    if (dtypeOf(a) == "qtensor") {
      // FP8 bytes are not random data: all-zero is a valid value.
      std::string what = e.name + ": " + e.argLabel(i);
      preset[i] =
          Tensor{"qtensor", shape, hostBuffer(bufferBytes(a, dims), what)};
      continue;
    }
    // Under --tp the values are those of the GLOBAL tensor (the tp=1
    // library's, same seed), and this rank keeps its part.
    std::string what = e.name + ": " + e.argLabel(i);
    Shard shard = shardOf(a, what, true);
    preset[i] = localPart(
        randomTensor(a, unsigned(opts.randomSeed) * 7919u + unsigned(i),
                     globalShapeOf(shape, shard, what)),
        shard, what + " (--random)");
  }
  return preset;
}

} // namespace te::run
