//===- te-run.cpp - runs te-compile'd libraries -----------------*- C++ -*-===//
//
// te-run LIB.so: loads a library made by te-compile, lists its entries
// (--list), feeds .npy inputs (--input NAME=FILE, --inputs DIR) or seeded
// random ones (--random SEED), checks their shapes and dtypes against the
// entry's signature, runs it on a backend (--backend cpu|cuda|auto) and
// writes one .npy per result (--outputs DIR). --step NAME runs a training
// step: NAME_fwd, then NAME_bwd fed with the saved bundle (aliases from the
// forward's own inputs and outputs) and the output gradients (--grads DIR).
// --bench N reports the median and spread of N timed calls (--graph: N
// launches of a CUDA graph captured from one call).
//
// --tp N runs a tensor-parallel library (te-compile --tp N: its entries say
// "te.tp" = N, its arguments and results "te.tp_shard") under
// `mpirun -np N`: each rank sets its runtime communicator (MPI on the cpu
// backend, NCCL from a unique id broadcast over MPI on cuda, one GPU per
// local rank), reads the same GLOBAL inputs and keeps its part by each
// argument's shard (TP.h), and rank 0 writes GLOBAL results (split ones
// gathered, replicated ones checked identical on every rank, partial ones
// summed in fp32): the files of a tp=1 run of the same model, for
// utils/compare_npy.py. An error on any rank stops the whole job
// (MPI_Abort) with a message naming the rank.
//
// Nothing read is trusted: the library is opened, checked and described by
// the module client (te/Runtime/TEModule.h: the file checked before
// dlopen, the module info validated before use, dim expressions evaluated
// with overflow checks), .npy files are parsed strictly (Npy.h) and host
// buffers are sized with checked arithmetic and refused beyond the
// machine's memory: bad input is an error naming the file and the field,
// never a crash.
//
// The work is done by the driver library beside this file (Driver.h).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <new>
#include <stdexcept>

int main(int argc, char **argv) {
  // Sizes are checked before anything is allocated (hostBuffer); an
  // allocation that still fails is reported, not an abort.
  try {
    int rc = te::run::runTERun(argc, argv);
    te::run::endTP();
    return rc;
  } catch (const std::bad_alloc &) {
    te::run::die("out of host memory");
  } catch (const std::length_error &) {
    te::run::die("out of host memory (a size too large for the C++ library)");
  }
}
