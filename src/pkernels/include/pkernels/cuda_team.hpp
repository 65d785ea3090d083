// The runtime of TeamPolicy kernels on the GPU, included after cuda.hpp: a team is one
// CUDA block of team_size threads. Its shared state (reduction slots, the barrier
// bookkeeping, level-0 scratch) lives in the block's dynamic shared memory; level-1
// scratch is a slice of a global buffer, one per block of the grid (each block runs league
// ranks blockIdx.x, + gridDim.x, ...). A module defines PK_SLOT_BYTES (a team rank's
// reduction slot) before including it.
//
// team_barrier() is `barrier.sync 0` without .aligned: threads of one team waiting at
// *different* barrier calls still meet there (the hardware counts arrivals at barrier 0,
// not at one instruction), so each compares the Python line it waits at with team rank
// 0's: a mismatch is recorded as a fault and the whole block stops (PTX `exit`) instead
// of hanging, as the CPU runtime reports it.
#ifndef PKERNELS_CUDA_TEAM_HPP
#define PKERNELS_CUDA_TEAM_HPP
#ifndef PK_SLOT_BYTES
#define PK_SLOT_BYTES 8  // a team rank's reduction slot: more for a struct accumulator
#endif
// The block's dynamic shared memory (the team kernel declares the same array).
extern __shared__ unsigned long long pk_dynamic[];
namespace pk_rt {

enum { TEAM_END_OF_WORKUNIT = -1 };

struct TeamShared {
    int size;
    int* arrival_line;      // shared memory, per team rank: the line of its barrier
    unsigned char* slots;   // shared memory, per team rank: PK_SLOT_BYTES (at least 8)
    char* level1;           // this block's level-1 scratch (level 0: level0_scratch())
    int64_t team_bytes[2], thread_bytes[2];
    const char* file;       // of the workunit, for messages
    Fault* fault;
};

// One thread of one team: what a TeamPolicy workunit receives as its team member.
struct TeamMember {
    int64_t league_rank, league_size, team_rank, team_size;
    TeamShared* shared;
    int64_t scratch_used[2];  // of the team's pool, handed out so far, per level
};

__device__ __forceinline__ void bar_sync() { asm volatile("barrier.sync 0;" ::: "memory"); }

// Every thread's `p`, or-ed over the block (also from different call sites).
__device__ __forceinline__ int bar_any(int p) {
    int r;
    asm volatile(
        "{\n\t.reg .pred pin, pout;\n\tsetp.ne.s32 pin, %1, 0;\n\t"
        "barrier.red.or.pred pout, 0, pin;\n\tselp.s32 %0, 1, 0, pout;\n\t}"
        : "=r"(r) : "r"(p) : "memory");
    return r;
}

// The team's state comes by value (not `tm` or its TeamShared by address: a pointer
// passed to a call that is not inlined would keep both in local memory, which every
// league rank's loop then reads: that doubled a team kernel's time).
__device__ __noinline__ void barrier_mismatch(TeamShared ts, int64_t league_rank, int line,
                                              const char* file) {
    const TeamShared* s = &ts;
    int odd = 0;
    while (odd < s->size && s->arrival_line[odd] == s->arrival_line[0]) ++odd;
    char what[512];
    Text t{what, 0, (int)sizeof what};
    t.put("team_barrier() mismatch in league ");
    t.put_int(league_rank);
    t.put(":");
    const int ranks[2] = {0, odd < s->size ? odd : 0};
    for (int k = 0; k < 2; ++k) {
        const int r = ranks[k];
        const int at = s->arrival_line[r];
        if (k) t.put(",");
        t.put(" team_rank ");
        t.put_int(r);
        if (at == TEAM_END_OF_WORKUNIT) {
            t.put(" at the end of the workunit");
        } else {
            t.put(" waits at ");
            t.put(s->file);
            t.put(":");
            t.put_int(at);
        }
    }
    // Report it at a barrier a thread waits at (the last to arrive may be one finishing).
    int where = line;
    for (int r = 0; r < s->size && where == TEAM_END_OF_WORKUNIT; ++r) where = s->arrival_line[r];
    fault(s->fault, 3, where == TEAM_END_OF_WORKUNIT ? s->file : file, where, what);
}

// Wait until every thread of the team arrives; `line` is the Python line of the call
// (TEAM_END_OF_WORKUNIT when a thread finishes the workunit for its league rank).
__device__ __forceinline__ void team_barrier(TeamMember& tm, const char* file, int line) {
    TeamShared* s = tm.shared;
    if (s->size == 1) return;
    s->arrival_line[tm.team_rank] = line;
    bar_sync();
    if (bar_any(s->arrival_line[0] != line)) {  // threads wait at different barriers
        if (tm.team_rank == 0) barrier_mismatch(*s, tm.league_rank, line, file);
        asm volatile("exit;");  // every thread of the block saw it: they all stop
    }
}

#define PK_FN __device__
#define PK_TEAM_SLOT PK_SLOT_BYTES  // a nested reduce's slots: the module's size
#include "pkernels/shared/team_combine.hpp"
#undef PK_FN
#undef PK_TEAM_SLOT

// The fault of a scratch view that does not fit (not inlined: the message is cold).
__device__ __noinline__ void scratch_fault(Fault* f, int R, const char* name,
                                           int64_t bytes, int level, bool per_thread,
                                           int64_t left, const char* file, int line) {
    char what[384];
    Text t{what, 0, (int)sizeof what};
    t.put("ScratchView"); t.put_int(R); t.put("D '"); t.put(name); t.put("' needs ");
    t.put_int(bytes); t.put(" bytes of level-"); t.put_int(level);
    t.put(per_thread ? " thread" : " team"); t.put(" scratch but only ");
    t.put_int(left);
    t.put(" are left: reserve more with policy.set_scratch_size(");
    t.put_int(level); t.put(per_thread ? ", pk.PerThread(...))" : ", pk.PerTeam(...))");
    fault(f, 4, file, line, what);
}

// Where level-0 scratch starts in the block's dynamic shared memory (team_setup's
// layout: the slots, then the barrier lines).
__device__ __forceinline__ char* level0_scratch() {
    const int64_t size = blockDim.x;
    return (char*)pk_dynamic + PK_SLOT_BYTES * size + (4 * size + 7) / 8 * 8;
}

// The next piece of the team's (or this thread's) scratch memory at `level`, as a view
// (one pool per level, handed out as on the CPU). Inlined with the call's constant
// level, a level-0 view's pointer derives from pk_dynamic alone, so the compiler knows it
// is shared memory and issues ld/st.shared (a generic pointer serialised the loads of a
// loop that copies global memory into scratch: the compiler could not rule out that the
// two alias). For that, no other memory may flow into it: a view that does not fit
// records the fault and stops the thread, where it used to go on in malloc'ed memory.
template <typename T, int R>
__device__ __forceinline__ View<T, R, LAST_UNIT> scratch_view(TeamMember& tm, int level,
                                                              bool per_thread,
                                                              const int64_t (&extents)[R],
                                                              const char* name,
                                                              const char* file, int line) {
    TeamShared* s = tm.shared;
    int64_t count = 1;
    for (int k = 0; k < R; ++k) count *= extents[k] > 0 ? extents[k] : 0;
    const int64_t bytes = (count * (int64_t)sizeof(T) + 7) / 8 * 8;
    const int64_t copies = per_thread ? tm.team_size : 1;
    int64_t& used = tm.scratch_used[level];
    const int64_t pool = s->team_bytes[level] + tm.team_size * s->thread_bytes[level];
    if (used + bytes * copies > pool) {
        const int64_t left = pool - used > 0 ? (pool - used) / copies / 8 * 8 : 0;
        scratch_fault(s->fault, R, name, bytes, level, per_thread, left, file, line);
        // The launch has failed: this thread stops. Every thread of a team makes the
        // same allocations (as on the CPU), so the whole team stops here, before any
        // barrier would wait for one of its threads.
        asm volatile("exit;");
    }
    View<T, R, LAST_UNIT> v;
    for (int k = 0; k < R; ++k) v.extent[k] = extents[k] > 0 ? extents[k] : 0;
    v.stride[R - 1] = 1;
    for (int k = R - 2; k >= 0; --k) v.stride[k] = v.stride[k + 1] * v.extent[k + 1];
    char* base = level == 0 ? level0_scratch() : s->level1;
    v.data = (T*)(base + used + (per_thread ? tm.team_rank * bytes : 0));
    used += bytes * copies;
    return v;
}

// The block's team: its shared state laid out in dynamic shared memory (slots, then the
// barrier lines, then level-0 scratch), its level-1 scratch a slice of global memory.
__device__ __forceinline__ void team_setup(TeamShared& s, unsigned char* dynamic,
                                           const int64_t* bytes, char* level1, Fault* fault,
                                           const char* file) {
    const int size = (int)blockDim.x;
    s.size = size;
    s.slots = dynamic;
    s.arrival_line = (int*)(dynamic + PK_SLOT_BYTES * size);
    s.level1 = level1;
    s.team_bytes[0] = bytes[0];
    s.team_bytes[1] = bytes[1];
    s.thread_bytes[0] = bytes[2];
    s.thread_bytes[1] = bytes[3];
    s.file = file;
    s.fault = fault;
}

__device__ __forceinline__ void team_start(TeamMember& tm, TeamShared* s, int64_t league_rank,
                                           int64_t league_size) {
    tm.league_rank = league_rank;
    tm.league_size = league_size;
    tm.team_rank = threadIdx.x;
    tm.team_size = blockDim.x;
    tm.shared = s;
    tm.scratch_used[0] = tm.scratch_used[1] = 0;
}

// A TeamPolicy parallel_reduce: the block's threads' partials combined in team rank
// order with the reduction's operation (the module's pk_reduce).
template <typename T, typename F>
__device__ void team_total(TeamShared& s, T partial, T* out, F combine) {
    bar_sync();
    *(T*)(s.slots + PK_SLOT_BYTES * threadIdx.x) = partial;
    bar_sync();
    if (threadIdx.x == 0) {
        T total = *(T*)(s.slots);
        for (int r = 1; r < s.size; ++r)
            total = combine(total, *(T*)(s.slots + PK_SLOT_BYTES * r));
        out[blockIdx.x] = total;
    }
}

}  // namespace pk_rt
#endif  // PKERNELS_CUDA_TEAM_HPP
