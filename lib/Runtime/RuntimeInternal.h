//===- RuntimeInternal.h - Runtime-internal helpers -------------*- C++ -*-===//
//
// Shared between the host runtime's translation units; not part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_RUNTIMEINTERNAL_H
#define TE_LIB_RUNTIME_RUNTIMEINTERNAL_H

#include <cstdint>
#include <string>

/// Records the message te_rt_last_error() returns on this thread.
void te_rt_internal_set_error(const std::string &message);

/// True when the CUDA backend is built in and a device is visible.
bool te_rt_internal_cuda_available();

/// Why the CUDA backend cannot run, for error messages.
const char *te_rt_internal_cuda_unavailable_reason();

//===----------------------------------------------------------------------===//
// CUDA buffers and streams (cuda/CudaBackend.cpp; without TE_RT_HAVE_CUDA
// every one fails). Each returns null on success, else a static message.
//===----------------------------------------------------------------------===//

/// Creates the stream of a CUDA context in *stream.
const char *te_rt_internal_cuda_stream_create(void **stream);
void te_rt_internal_cuda_stream_destroy(void *stream);
/// cudaMalloc of max(bytes, 1) (256-byte aligned by the driver). Runs in
/// relaxed capture mode, so that it also works while this thread captures a
/// CUDA graph (the allocation is not part of the graph).
const char *te_rt_internal_cuda_alloc(int64_t bytes, void **ptr);
const char *te_rt_internal_cuda_free(void *ptr);

/// Directions of te_rt_internal_cuda_copy.
enum class CudaCopy { HostToDevice, DeviceToHost, DeviceToDevice };

/// Copies on `stream`; host copies return once the host buffer may be
/// reused or read (stream-ordered, then synchronized).
const char *te_rt_internal_cuda_copy(void *stream, void *dst, const void *src,
                                     int64_t bytes, CudaCopy direction);
const char *te_rt_internal_cuda_zero(void *stream, void *dst, int64_t bytes);
const char *te_rt_internal_cuda_synchronize(void *stream);
/// Makes `to` wait (on the device) for the work queued on `from` so far: an
/// event recorded on `from`, waited for on `to`. *event is that event,
/// created at the first call (cudaEventDisableTiming) and reused after;
/// its owner destroys it with te_rt_internal_cuda_event_destroy.
const char *te_rt_internal_cuda_stream_follow(void *from, void *to,
                                              void **event);
void te_rt_internal_cuda_event_destroy(void *event);
/// Frees a context's kernel state (te_kernels_state; null is fine).
void te_rt_internal_cuda_state_destroy(void *state);

//===----------------------------------------------------------------------===//
// CUDA graphs (cuda/CudaBackend.cpp; without TE_RT_HAVE_CUDA every one
// fails). Each returns null on success, else a static message.
//===----------------------------------------------------------------------===//

/// Starts capturing `stream` in thread-local mode: CUDA calls that cannot be
/// captured fail on this thread (instead of being silently left out), and
/// other threads, with their own contexts and streams, are not affected.
const char *te_rt_internal_cuda_capture_begin(void *stream);
/// Ends the capture of `stream` (begun on this thread) into *graph (a
/// cudaGraph_t; null on failure). The stream stops capturing either way.
const char *te_rt_internal_cuda_capture_end(void *stream, void **graph);
/// Destroys a captured `graph` that will not be instantiated (null is fine).
void te_rt_internal_cuda_graph_discard(void *graph);
/// Instantiates `graph` into *exec (a cudaGraphExec_t) and uploads it to
/// the device on `stream`; destroys `graph` either way.
const char *te_rt_internal_cuda_graph_instantiate(void *graph, void *stream,
                                                  void **exec);
/// Queues one launch of `exec` on `stream`.
const char *te_rt_internal_cuda_graph_launch(void *exec, void *stream);
/// Destroys `exec`; launches in flight complete first (asynchronously).
void te_rt_internal_cuda_graph_exec_destroy(void *exec);
/// Whether `stream` (null: the legacy default stream) is being captured
/// into a CUDA graph, by anyone; an error (a capture elsewhere that makes
/// the query itself illegal) counts as capturing.
bool te_rt_internal_cuda_stream_capturing(void *stream);

#endif // TE_LIB_RUNTIME_RUNTIMEINTERNAL_H
