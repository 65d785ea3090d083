// Shared by cpu_team.hpp and cuda_team.hpp: the team collectives that compute alike on
// the CPU and the GPU (the same results, bit for bit, for one team size). The includer
// defines PK_FN (how a function is declared: `static` on the CPU, `__device__` on the
// GPU) and PK_TEAM_SLOT (the bytes between two team ranks' slots), and has declared
// TeamMember, TeamShared and team_barrier.

// This thread's share of [begin, end) in a TeamThreadRange: contiguous chunks in rank order.
PK_FN inline void team_chunk(const TeamMember& tm, int64_t begin, int64_t end, int64_t* lo,
                             int64_t* hi) {
    const int64_t n = end > begin ? end - begin : 0;
    const int64_t chunk = (n + tm.team_size - 1) / tm.team_size;
    *lo = begin + tm.team_rank * chunk;
    if (*lo > end) *lo = end;
    *hi = *lo + chunk < end ? *lo + chunk : end;
}

// Every thread's partial, added in team rank order: the same total, bit for bit, in all.
template <typename T>
PK_FN T team_reduce(TeamMember& tm, T partial, const char* file, int line) {
    if (tm.team_size == 1) return T(0) + partial;
    TeamShared* s = tm.shared;
    *(T*)(s->slots + PK_TEAM_SLOT * tm.team_rank) = partial;
    team_barrier(tm, file, line);
    T total = 0;
    for (int r = 0; r < s->size; ++r) total += *(T*)(s->slots + PK_TEAM_SLOT * r);
    team_barrier(tm, file, line);  // the slots are reused by the next collective
    return total;
}

// The team's partials combined with `combine` (a reducer's operation) in team rank order:
// the same result in all.
template <typename T, typename F>
PK_FN T team_combine(TeamMember& tm, T partial, F combine, const char* file, int line) {
    if (tm.team_size == 1) return partial;
    TeamShared* s = tm.shared;
    *(T*)(s->slots + PK_TEAM_SLOT * tm.team_rank) = partial;
    team_barrier(tm, file, line);
    T total = *(T*)(s->slots);
    for (int r = 1; r < s->size; ++r) total = combine(total, *(T*)(s->slots + PK_TEAM_SLOT * r));
    team_barrier(tm, file, line);  // the slots are reused by the next collective
    return total;
}

// The sum of the partials of the threads before this one (an exclusive scan in team rank
// order); `*total`: the sum of all.
template <typename T>
PK_FN T team_scan(TeamMember& tm, T partial, T* total, const char* file, int line) {
    TeamShared* s = tm.shared;
    *(T*)(s->slots + PK_TEAM_SLOT * tm.team_rank) = partial;
    team_barrier(tm, file, line);
    T before = 0, all = 0;
    for (int r = 0; r < s->size; ++r) {
        if (r == tm.team_rank) before = all;
        all += *(T*)(s->slots + PK_TEAM_SLOT * r);
    }
    team_barrier(tm, file, line);
    *total = all;
    return before;
}
