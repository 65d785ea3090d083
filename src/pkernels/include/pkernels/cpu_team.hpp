// The CPU runtime of TeamPolicy kernels, included after cpu.hpp only by the modules that
// need it. A team is team_size real threads of one OpenMP parallel region; the teams that
// run at once each have a TeamShared (barrier, reduction slots, scratch memory) and take
// a contiguous share of the league. Barriers carry the Python line they are called from,
// so threads of one team that reach different barriers (one in a branch others skip) are
// reported as a fault instead of hanging; once any fault is recorded, barriers no longer
// wait, so a faulting team cannot deadlock the launch.
#ifndef PKERNELS_CPU_TEAM_HPP
#define PKERNELS_CPU_TEAM_HPP
#include <sched.h>
namespace pk_rt {

enum { TEAM_END_OF_WORKUNIT = -1 };

struct TeamShared {
    int size;
    int count;       // threads arrived at the current barrier
    int generation;  // bumped when the last one arrives
    int64_t* arrival_line;  // per team rank: the line of the barrier it waits at
    unsigned char* slots;   // per team rank: 16 bytes for reductions and scans
    char* scratch[2];       // per level: one pool, PerTeam + team_size x PerThread bytes
    int64_t team_bytes[2], thread_bytes[2];
    const char* file;       // of the workunit, for messages
};

// One thread of one team: what a TeamPolicy workunit receives as its team member.
struct TeamMember {
    int64_t league_rank, league_size, team_rank, team_size;
    TeamShared* shared;
    int64_t scratch_used[2];  // of the team's pool, handed out so far, per level
};

static inline bool faulted() { return __atomic_load_n(&fault_set, __ATOMIC_ACQUIRE) != 0; }

static void barrier_mismatch(const TeamMember& tm, int line, const char* file) {
    TeamShared* s = tm.shared;
    int odd = 0;
    while (odd < s->size && s->arrival_line[odd] == s->arrival_line[0]) ++odd;
    char what[512];
    int used = std::snprintf(what, sizeof what, "team_barrier() mismatch in league %lld:",
                             (long long)tm.league_rank);
    const int ranks[2] = {0, odd};
    for (int r : ranks) {
        const int64_t at = s->arrival_line[r];
        if (at == TEAM_END_OF_WORKUNIT)
            used += std::snprintf(what + used, sizeof what - used,
                                  "%s team_rank %d at the end of the workunit", r ? "," : "", r);
        else
            used += std::snprintf(what + used, sizeof what - used,
                                  "%s team_rank %d waits at %s:%lld", r ? "," : "", r, s->file,
                                  (long long)at);
        if (used >= (int)sizeof what) break;
    }
    // Report it at a barrier a thread waits at (the last to arrive may be one finishing).
    int64_t where = line;
    for (int r = 0; r < s->size && where == TEAM_END_OF_WORKUNIT; ++r) where = s->arrival_line[r];
    fault(3, where == TEAM_END_OF_WORKUNIT ? s->file : file, (int)where, what);
}

// Wait until every thread of the team arrives; ``line`` is the Python line of the call
// (TEAM_END_OF_WORKUNIT when a thread finishes the workunit for its league rank).
static void team_barrier(TeamMember& tm, const char* file, int line) {
    TeamShared* s = tm.shared;
    if (s->size == 1 || faulted()) return;
    s->arrival_line[tm.team_rank] = line;
    const int gen = __atomic_load_n(&s->generation, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&s->count, 1, __ATOMIC_ACQ_REL) == s->size) {
        for (int r = 1; r < s->size; ++r)
            if (s->arrival_line[r] != s->arrival_line[0]) {
                barrier_mismatch(tm, line, file);
                break;
            }
        __atomic_store_n(&s->count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->generation, gen + 1, __ATOMIC_RELEASE);
        return;
    }
    for (int spins = 0; __atomic_load_n(&s->generation, __ATOMIC_ACQUIRE) == gen; ++spins) {
        if (spins > 256) {
            if (faulted()) return;
            sched_yield();  // teams may have more threads than the machine has cores
        }
    }
}

#define PK_FN static
#define PK_TEAM_SLOT 16
#include "pkernels/shared/team_combine.hpp"
#undef PK_FN
#undef PK_TEAM_SLOT

// The next piece of the team's (or this thread's) scratch memory at ``level``, as a view.
// As in Kokkos, a level's PerTeam and PerThread bytes are one pool, handed out in the
// order of the allocations: a team piece once, a thread piece once per team rank (side
// by side). Every thread of a team makes the same allocations, so they agree on where.
template <typename T, int R>
static View<T, R, LAST_UNIT> scratch_view(TeamMember& tm, int level, bool per_thread,
                                          const int64_t (&extents)[R], const char* name,
                                          const char* file, int line) {
    TeamShared* s = tm.shared;
    int64_t count = 1;
    for (int k = 0; k < R; ++k) count *= extents[k] > 0 ? extents[k] : 0;
    const int64_t bytes = (count * (int64_t)sizeof(T) + 7) / 8 * 8;
    const int64_t copies = per_thread ? tm.team_size : 1;
    int64_t& used = tm.scratch_used[level];
    const int64_t pool = s->team_bytes[level] + tm.team_size * s->thread_bytes[level];
    View<T, R, LAST_UNIT> v;
    for (int k = 0; k < R; ++k) v.extent[k] = extents[k] > 0 ? extents[k] : 0;
    v.stride[R - 1] = 1;
    for (int k = R - 2; k >= 0; --k) v.stride[k] = v.stride[k + 1] * v.extent[k + 1];
    if (used + bytes * copies > pool) {
        const int64_t left = pool - used > 0 ? (pool - used) / copies / 8 * 8 : 0;
        char what[384];
        std::snprintf(what, sizeof what,
                      "ScratchView%dD '%s' needs %lld bytes of level-%d %s scratch but only %lld "
                      "are left: reserve more with policy.set_scratch_size(%d, pk.%s(...))",
                      R, name, (long long)bytes, level, per_thread ? "thread" : "team",
                      (long long)left, level, per_thread ? "PerThread" : "PerTeam");
        fault(4, file, line, what);
        v.data = (T*)std::calloc(count > 0 ? count : 1, sizeof(T));  // the launch has failed
        return v;
    }
    v.data = (T*)(s->scratch[level] + used + (per_thread ? tm.team_rank * bytes : 0));
    used += bytes * copies;
    return v;
}

// The teams of one launch: how many run at once, their shared state, their leagues.
struct TeamLaunch {
    int64_t league, team_size, teams;
    TeamShared* shared;

    TeamLaunch(const int64_t* spec, bool parallel, const char* file) {
        league = spec[0];
        team_size = spec[1];
#ifdef _OPENMP
        const int64_t threads = parallel ? omp_get_max_threads() : 1;
#else
        const int64_t threads = 1;
        (void)parallel;
#endif
        teams = threads / team_size;
        if (teams < 1) teams = 1;  // a team larger than the machine still runs, oversubscribed
        if (teams > league) teams = league > 0 ? league : 1;
        shared = (TeamShared*)std::calloc(teams, sizeof(TeamShared));
        for (int64_t t = 0; t < teams; ++t) {
            TeamShared& s = shared[t];
            s.size = (int)team_size;
            s.arrival_line = (int64_t*)std::calloc(team_size, sizeof(int64_t));
            s.slots = (unsigned char*)std::aligned_alloc(16, 16 * team_size);
            s.file = file;
            for (int level = 0; level < 2; ++level) {
                s.team_bytes[level] = spec[3 + level];
                s.thread_bytes[level] = spec[5 + level];
                const int64_t bytes = s.team_bytes[level] + team_size * s.thread_bytes[level];
                s.scratch[level] = (char*)std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
            }
        }
    }
    ~TeamLaunch() {
        for (int64_t t = 0; t < teams; ++t) {
            std::free(shared[t].arrival_line);
            std::free(shared[t].slots);
            std::free(shared[t].scratch[0]);
            std::free(shared[t].scratch[1]);
        }
        std::free(shared);
    }
    int64_t threads() const { return teams * team_size; }

    // Thread ``tid`` of ``nthreads`` as a team member, and the league ranks its team runs;
    // false for a thread left over when OpenMP gave fewer threads than asked.
    bool member(int tid, int nthreads, TeamMember* tm, int64_t* lo, int64_t* hi) {
        const int64_t running = nthreads / team_size;
        if (running == 0 && tid == 0) {
            char what[160];
            std::snprintf(what, sizeof what, "OpenMP started %d threads, fewer than the team "
                          "size %lld (is OMP_THREAD_LIMIT set?)", nthreads, (long long)team_size);
            fault(3, shared[0].file, 0, what);
        }
        const int64_t team = tid / team_size;
        if (team >= running || team >= teams) return false;
        *tm = TeamMember{0, league, tid % team_size, team_size, &shared[team], {0, 0}};
        const int64_t q = league / running, extra = league % running;
        *lo = team * q + (team < extra ? team : extra);
        *hi = *lo + q + (team < extra ? 1 : 0);
        return true;
    }

    static void start(TeamMember& tm, int64_t league_rank) {
        tm.league_rank = league_rank;
        tm.scratch_used[0] = tm.scratch_used[1] = 0;
    }
};

}  // namespace pk_rt
#endif  // PKERNELS_CPU_TEAM_HPP
