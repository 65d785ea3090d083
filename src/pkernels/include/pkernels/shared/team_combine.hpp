// Shared by cpu_team.hpp and cuda_team.hpp: team_combine, every team thread's partial
// combined with a reducer's operation in team rank order, the same result in all. The
// includer defines PK_FN (how it is declared) and PK_TEAM_SLOT (the bytes between two
// team ranks' slots).
// The team's partials combined with `combine` (a reducer's operation)
// in team rank order: the same result in all (CPU and GPU alike, for one team size).
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
