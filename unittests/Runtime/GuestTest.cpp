//===- GuestTest.cpp - the runtime in a process that has no MPI -*- C++ -*-===//
//
// TERuntimeGuestTests: a program linked with libte_runtime.so and nothing
// else of ours (no MPI, no internals), as a PyTorch user's process is. A
// cpu context runs a compute call with no libmpi, libopen-rte or
// libopen-pal mapped (/proc/self/maps); libmpi is mapped only once a
// communicator wraps an MPI one (dlopen'ed on demand, TE_RT_MPI_LIBRARY),
// and when it cannot be loaded or is not an MPI, the call fails with the
// reason. ctest runs each test in its own process, the last one also with
// TE_RT_MPI_LIBRARY set to a missing file and to a library that is not an
// MPI (TE_RT_GUEST_EXPECT_ERROR: the error wrapping then starts with).
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/TERuntime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace {

/// The files mapped into this process (/proc/self/maps' paths), one a line.
std::string mappedFiles() {
  std::ifstream maps("/proc/self/maps");
  std::string line, files;
  std::set<std::string> seen;
  while (std::getline(maps, line)) {
    size_t slash = line.find('/');
    if (slash != std::string::npos && seen.insert(line.substr(slash)).second)
      files += line.substr(slash) + "\n";
  }
  return files;
}

/// The lines of `files` that are one of MPI's libraries.
std::string mpiLibraries(const std::string &files) {
  std::string found;
  size_t begin = 0;
  while (begin < files.size()) {
    size_t end = files.find('\n', begin);
    std::string path = files.substr(begin, end - begin);
    for (const char *lib : {"libmpi", "libopen-rte", "libopen-pal"})
      if (path.find(lib) != std::string::npos) {
        found += path + "\n";
        break;
      }
    begin = end == std::string::npos ? files.size() : end + 1;
  }
  return found;
}

/// A cpu context that ran te_rt_add, checked.
te_rt_context *cpuContextAfterACompute() {
  te_rt_context *ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
  EXPECT_NE(ctx, nullptr) << te_rt_last_error();
  if (!ctx)
    return nullptr;
  std::vector<float> a = {1, 2, 3, 4}, b = {0.5f, 0.25f, -3, 8}, c(4);
  EXPECT_EQ(te_rt_add(ctx, TE_RT_DTYPE_F32, a.data(), b.data(), c.data(), 4), 0)
      << te_rt_last_error();
  EXPECT_EQ(c, (std::vector<float>{1.5f, 2.25f, 0, 12}));
  return ctx;
}

TEST(Guest, CpuRunMapsNoMpi) {
  te_rt_context *ctx = cpuContextAfterACompute();
  ASSERT_NE(ctx, nullptr);
  std::string files = mappedFiles();
  // The maps are read right: the runtime itself is there.
  EXPECT_NE(files.find("/libte_runtime.so"), std::string::npos) << files;
  EXPECT_EQ(mpiLibraries(files), "");
  te_rt_context_destroy(ctx);
  EXPECT_EQ(mpiLibraries(mappedFiles()), "");
}

TEST(Guest, MpiIsLoadedOnDemand) {
  te_rt_context *ctx = cpuContextAfterACompute();
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(mpiLibraries(mappedFiles()), "");
  // This process never calls MPI_Init: wrapping fails, after loading libmpi
  // (or saying why it cannot).
  EXPECT_EQ(te_rt_comm_wrap_mpi(ctx, nullptr), nullptr);
  std::string error = te_rt_last_error();
  if (const char *expect = std::getenv("TE_RT_GUEST_EXPECT_ERROR")) {
    EXPECT_EQ(error.rfind(expect, 0), 0u) << error;
    EXPECT_EQ(te_rt_comm_available(TE_RT_COMM_MPI), 0);
    EXPECT_EQ(mpiLibraries(mappedFiles()), "");
  } else if (te_rt_comm_available(TE_RT_COMM_MPI)) {
    EXPECT_EQ(error.rfind("te_rt_comm_wrap_mpi: MPI is not initialized in ", 0),
              0u)
        << error;
    EXPECT_NE(mpiLibraries(mappedFiles()).find("libmpi"), std::string::npos);
  } else {
    // Built without MPI, or no libmpi here: wrapping says why, as
    // te_rt_comm_available does, and nothing is mapped.
    std::string why = te_rt_last_error();
    const std::string prefix = "te_rt_comm_available: ";
    ASSERT_EQ(why.rfind(prefix, 0), 0u) << why;
    EXPECT_EQ(error, "te_rt_comm_wrap_mpi: " + why.substr(prefix.size()));
    EXPECT_EQ(mpiLibraries(mappedFiles()), "");
  }
  te_rt_context_destroy(ctx);
}

} // namespace
