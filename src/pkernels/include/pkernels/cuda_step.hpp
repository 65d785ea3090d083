// pkernels CUDA runtime: `next` and `step` of a debugger, run by the kernel itself
// (debug builds only; included by cuda.hpp).
//
// cuda-gdb steps a warp instruction by instruction, with a host round trip each: in a -G
// build a `next` over one Python line took 0.3 to 6 s on an H200. Instead the debugger
// writes a request into the globals below (which thread, which mode, its call depth
// and the line it is at), lets the GPU run at full speed, and the thread asked for calls
// pk_step_hook (where the debugger breaks) at its next Python line:
//   * PK_LINE(n) starts every statement of Python line n (and every test of a loop's
//     condition, on the loop's line); with no request it costs one global load;
//   * PK_STEP_DEPTH opens every @pk.function helper: the call depth of the thread asked
//     for, so that a `next` passes over the helper's lines.
// Release and checked builds compile the same text with both macros empty.
#pragma once

#if PK_DEBUG
// The request (written by the debugger while the kernel is held; volatile: read from
// memory each time, as it changes under the running code).
__device__ volatile int pk_step_mode = 0;  // 0: none, 1: step (any line), 2: next (depth <= start)
__device__ volatile unsigned int pk_step_block_x = 0, pk_step_block_y = 0, pk_step_block_z = 0;
__device__ volatile unsigned int pk_step_thread_x = 0, pk_step_thread_y = 0, pk_step_thread_z = 0;
__device__ volatile int pk_step_start = 0;  // the call depth the thread was at (0: the workunit)
__device__ volatile int pk_step_depth = 0;  // its call depth now
// The line the thread is at: its first PK_LINE is passed over when it is that line (the
// thread was held at the start of the line, before its PK_LINE).
__device__ volatile int pk_step_skip = 0;
__device__ volatile int pk_step_line = 0;  // the line of the last stop (keeps the hook's body)

// Debuggers break here: the thread asked for has reached a new line (the first frame
// below in the Python file, past pk_rt::step_at).
extern "C" __device__ __noinline__ void pk_step_hook(int line) { pk_step_line = line; }

namespace pk_rt {
__device__ inline bool step_thread() {
    return blockIdx.x == pk_step_block_x && blockIdx.y == pk_step_block_y &&
           blockIdx.z == pk_step_block_z && threadIdx.x == pk_step_thread_x &&
           threadIdx.y == pk_step_thread_y && threadIdx.z == pk_step_thread_z;
}

// A request is active: stop if this is the thread asked for and line `line` is a new line
// at a depth it may stop at. A stop clears the request (a later launch does not stop).
__device__ inline void step_at(int line) {
    if (!step_thread()) return;
    const int skip = pk_step_skip;
    pk_step_skip = 0;
    if (line == skip) return;
    if (pk_step_mode == 2 && pk_step_depth > pk_step_start) return;
    pk_step_mode = 0;
    pk_step_hook(line);
}

// The thread asked for is one call deeper while a helper runs (counted only when a
// request was active at the call: the debugger writes the depth with each request).
struct StepDepth {
    bool counted;
    __device__ StepDepth() : counted(pk_step_mode != 0 && step_thread()) {
        if (counted) pk_step_depth = pk_step_depth + 1;
    }
    __device__ ~StepDepth() {
        if (counted) pk_step_depth = pk_step_depth - 1;
    }
};
}  // namespace pk_rt

#define PK_LINE(n) (pk_step_mode != 0 ? pk_rt::step_at(n) : (void)0)
#define PK_STEP_DEPTH pk_rt::StepDepth pk_step_depth_guard;
#else
#define PK_LINE(n) ((void)0)
#define PK_STEP_DEPTH
#endif
