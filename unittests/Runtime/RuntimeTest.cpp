//===- RuntimeTest.cpp - Runtime ABI: backends and errors -------*- C++ -*-===//
//
// Unit tests of the runtime's backend selection and error reporting, through
// the C ABI only.
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/TERuntime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

/// Sets TE_RT_BACKEND for the scope of a test.
class ScopedBackendEnv {
public:
  explicit ScopedBackendEnv(const char *value) {
    if (const char *old = std::getenv("TE_RT_BACKEND"))
      saved = old, hadOld = true;
    if (value)
      setenv("TE_RT_BACKEND", value, 1);
    else
      unsetenv("TE_RT_BACKEND");
  }
  ~ScopedBackendEnv() {
    if (hadOld)
      setenv("TE_RT_BACKEND", saved.c_str(), 1);
    else
      unsetenv("TE_RT_BACKEND");
  }

private:
  std::string saved;
  bool hadOld = false;
};

TEST(RuntimeBackends, NamesRoundTrip) {
  for (int32_t b : {TE_RT_BACKEND_CPU, TE_RT_BACKEND_CUDA, TE_RT_BACKEND_AUTO})
    EXPECT_EQ(te_rt_backend_from_name(te_rt_backend_name(b)), b);
  EXPECT_EQ(te_rt_backend_from_name("gpu"), TE_RT_BACKEND_INVALID);
  EXPECT_EQ(te_rt_backend_from_name(nullptr), TE_RT_BACKEND_INVALID);
  EXPECT_EQ(te_rt_backend_name(7), nullptr);
}

TEST(RuntimeBackends, CpuIsAlwaysAvailable) {
  ScopedBackendEnv env(nullptr);
  EXPECT_EQ(te_rt_backend_available(TE_RT_BACKEND_CPU), 1);
  EXPECT_EQ(te_rt_select_backend(TE_RT_BACKEND_CPU), TE_RT_BACKEND_CPU);
  EXPECT_EQ(te_rt_backend_available(42), 0);
}

TEST(RuntimeBackends, AutoPicksCudaOnlyWhenAvailable) {
  ScopedBackendEnv env(nullptr);
  int32_t expected = te_rt_backend_available(TE_RT_BACKEND_CUDA)
                         ? TE_RT_BACKEND_CUDA
                         : TE_RT_BACKEND_CPU;
  EXPECT_EQ(te_rt_select_backend(TE_RT_BACKEND_AUTO), expected);
}

TEST(RuntimeBackends, CudaWithoutDeviceIsAClearError) {
  ScopedBackendEnv env(nullptr);
  if (te_rt_backend_available(TE_RT_BACKEND_CUDA)) {
    EXPECT_EQ(te_rt_select_backend(TE_RT_BACKEND_CUDA), TE_RT_BACKEND_CUDA);
    EXPECT_EQ(te_rt_cuda_selftest(), 0) << te_rt_last_error();
    return;
  }
  EXPECT_EQ(te_rt_select_backend(TE_RT_BACKEND_CUDA), TE_RT_BACKEND_INVALID);
  std::string err = te_rt_last_error();
  EXPECT_NE(err.find("te_rt_select_backend: backend 'cuda' requested but"),
            std::string::npos)
      << err;
  EXPECT_NE(te_rt_cuda_selftest(), 0);
  EXPECT_NE(std::string(te_rt_last_error()).find("te_rt_cuda_selftest"),
            std::string::npos);
}

TEST(RuntimeBackends, EnvironmentOverridesTheRequest) {
  ScopedBackendEnv env("cpu");
  EXPECT_EQ(te_rt_select_backend(TE_RT_BACKEND_CUDA), TE_RT_BACKEND_CPU);
  EXPECT_EQ(te_rt_select_backend(TE_RT_BACKEND_AUTO), TE_RT_BACKEND_CPU);
}

TEST(RuntimeBackends, BadEnvironmentValueNamesTheVariable) {
  ScopedBackendEnv env("tpu");
  EXPECT_EQ(te_rt_select_backend(TE_RT_BACKEND_CPU), TE_RT_BACKEND_INVALID);
  EXPECT_EQ(std::string(te_rt_last_error()),
            "te_rt_select_backend: environment variable TE_RT_BACKEND='tpu' "
            "is not one of cpu, cuda, auto");
}

TEST(RuntimeBackends, BadArgumentNamesTheArgument) {
  ScopedBackendEnv env(nullptr);
  EXPECT_EQ(te_rt_select_backend(9), TE_RT_BACKEND_INVALID);
  EXPECT_EQ(std::string(te_rt_last_error()),
            "te_rt_select_backend: argument 'requested' = 9 is not a backend "
            "(0 cpu, 1 cuda, 2 auto)");
}

TEST(RuntimeVersion, MentionsBuiltBackends) {
  std::string version = te_rt_version();
  EXPECT_EQ(version.rfind("te-mlir ", 0), 0u) << version;
#ifdef TE_RT_TEST_HAVE_CUDA
  EXPECT_NE(version.find("cuda"), std::string::npos) << version;
#else
  EXPECT_EQ(version.find("cuda"), std::string::npos) << version;
#endif
}

} // namespace
