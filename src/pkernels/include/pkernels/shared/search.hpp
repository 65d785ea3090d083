// Shared by cpu.hpp and cuda.hpp: pk.lower_bound / pk.upper_bound, reading views with the
// runtime's at(). The includer defines PK_FN (how the functions are declared).
// ---- Kokkos' lower_bound / upper_bound over the first n elements of a sorted rank-1
// view: the first index whose element is >= value (lower) or > value (upper), n if none.
// Elements are read through at(): debug builds check n against the view's extent.
template <bool Upper, typename V, typename T>
PK_FN int64_t search_bound(const V& v, const char* name, const char* file, int line, int64_t n,
                           T value) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        const auto element = at(v, name, file, line, mid);
        if (Upper ? !(value < element) : (element < value)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}
