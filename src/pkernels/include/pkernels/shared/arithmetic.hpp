// Shared by cpu.hpp and cuda.hpp (one text: the same results bit for bit): Python's //
// and % (integers on the runtime's check_divisor, floats), integer **, abs/min/max and the
// counter-based random numbers. The includer defines PK_FN (how the functions are
// declared) and PK_MATH (the namespace of the math functions: std, pk_math).
// ---- Bessel functions of the first kind (Kokkos' cyl_bessel_j0/j1 of a real): the C
// library's j0/j1 (glibc on the CPU, which the Debug space calls too; CUDA's on the GPU).
PK_FN double cyl_bessel_j0(double x) { return ::j0(x); }
PK_FN float cyl_bessel_j0(float x) { return ::j0f(x); }
PK_FN double cyl_bessel_j1(double x) { return ::j1(x); }
PK_FN float cyl_bessel_j1(float x) { return ::j1f(x); }

// ---- Python's integer // and % (floor division), on the runtime's check_divisor.
// Where Python raises and NumPy warns, release builds give NumPy's answers: x // 0 and
// x % 0 are 0, MIN // -1 wraps to MIN and MIN % -1 is 0 (C++'s MIN / -1 traps: SIGFPE).
template <typename T>
PK_FN T floordiv(T a, T b, const char* file, int line) {
    if (!check_divisor(b, file, line)) return T(0);
    if (T(-1) < T(0) && b == T(-1)) return T(0ULL - (unsigned long long)(long long)a);
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

// Shifts as NumPy computes them in the operands' type: a count outside [0, bits) gives 0
// (for >> of a negative number, -1) where C++ leaves it undefined; << wraps.
template <typename T>
PK_FN T lshift(T a, T b) {
    if (b < T(0) || b >= T(sizeof(T) * 8)) return T(0);
    return T((unsigned long long)a << (int)b);
}

template <typename T>
PK_FN T rshift(T a, T b) {
    if (b < T(0) || b >= T(sizeof(T) * 8)) return a < T(0) ? T(-1) : T(0);
    return T(a >> (int)b);
}

// Kokkos' integer atomic_div (C's truncating /) on the same check: x / 0 is 0 in release
// builds and a stop in debug builds, MIN / -1 wraps to MIN (in C++ both trap: SIGFPE).
template <typename T>
PK_FN T truncdiv(T a, T b, const char* file, int line) {
    if (!check_divisor(b, file, line)) return T(0);
    if (T(-1) < T(0) && b == T(-1)) return T(0ULL - (unsigned long long)(long long)a);
    return a / b;
}

template <typename T>
PK_FN T mod(T a, T b, const char* file, int line) {
    if (!check_divisor(b, file, line)) return T(0);
    if (T(-1) < T(0) && b == T(-1)) return T(0);
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

// ---- Python compares integers by value: a signed and an unsigned 64-bit integer, whose
// C++ comparison converts the signed one (-1 > 0u), compared exactly: -1, 0 or 1
template <typename A, typename B>
PK_FN int int_cmp(A a, B b) {
    if (A(-1) < A(0) && !(B(-1) < B(0))) {
        if (a < 0) return -1;
        unsigned long long x = (unsigned long long)a;
        return x < b ? -1 : (x > b ? 1 : 0);
    }
    if (!(A(-1) < A(0)) && B(-1) < B(0)) {
        if (b < 0) return 1;
        unsigned long long y = (unsigned long long)b;
        return a < y ? -1 : (a > y ? 1 : 0);
    }
    return a < b ? -1 : (a > b ? 1 : 0);
}

// ---- Python arithmetic on floats (CPython's float_divmod; NumPy's for float32).
// a // b is not floor(a / b): 1.0 // 0.1 == 9.0, as 0.1 is slightly above one tenth.
template <typename T>
PK_FN T fmod_py(T a, T b) {
    T r = PK_MATH::fmod(a, b);
    if (r != 0) {
        if ((r < 0) != (b < 0)) r += b;
    } else {
        r = PK_MATH::copysign(T(0), b);
    }
    return r;
}

template <typename T>
PK_FN T floordiv_py(T a, T b) {
    if (b == 0) return a / b;  // NumPy's +-inf or nan (Python raises)
    T r = PK_MATH::fmod(a, b);
    T div = (a - r) / b;
    if (r != 0 && ((r < 0) != (b < 0))) div -= T(1);
    if (div == 0) return PK_MATH::copysign(T(0), a / b);
    T q = PK_MATH::floor(div);
    if (div - q > T(0.5)) q += T(1);
    return q;
}

// ---- math.modf / math.frexp, one part each (`frac, whole = math.modf(x)` reads both)
template <typename T>
PK_FN T modf_frac(T x) {
    T whole;
    return PK_MATH::modf(x, &whole);
}

template <typename T>
PK_FN T modf_whole(T x) {
    T whole;
    PK_MATH::modf(x, &whole);
    return whole;
}

template <typename T>
PK_FN T frexp_mantissa(T x) {
    int e;
    return PK_MATH::frexp(x, &e);
}

// Python's exponent of an infinity or a NaN is 0 (C leaves it unspecified).
template <typename T>
PK_FN int64_t frexp_exponent(T x) {
    int e = 0;
    PK_MATH::frexp(x, &e);
    return PK_MATH::isfinite(x) ? (int64_t)e : 0;
}

template <typename T>
PK_FN T ipow(T base, T exp) {
    T result = 1;
    while (exp > 0) {
        if (exp & 1) result *= base;
        exp >>= 1;
        if (exp > 0) base *= base;  // not after the last bit: it could overflow needlessly
    }
    return result;
}

template <typename T>
PK_FN T iabs(T v) { return v < 0 ? -v : v; }
template <typename T>
PK_FN T min(T a, T b) { return b < a ? b : a; }
template <typename T>
PK_FN T max(T a, T b) { return a < b ? b : a; }

// ---- counter-based random numbers: pk.rand(seed, counter), pk.rand_int(seed, counter, n)
PK_FN uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}
PK_FN uint64_t rand_bits(uint64_t seed, uint64_t counter) {
    return splitmix64(splitmix64(seed) ^ counter);
}
PK_FN double rand_uniform(uint64_t seed, uint64_t counter) {
    return (double)(rand_bits(seed, counter) >> 11) * 0x1.0p-53;  // [0, 1), 53 bits
}
PK_FN int64_t rand_int(uint64_t seed, uint64_t counter, int64_t n) {
    return n > 0 ? (int64_t)(rand_bits(seed, counter) % (uint64_t)n) : 0;
}

// ---- draws from a random pool: pk.rand(T) in a workunit with a pk.Random_*_Pool in reach.
// Each workunit call has its own stream, rand_stream(launch key, index ...), the launch
// key the pool's (seed, launch number) (api/random_pools.py computes it); a call site
// `site` draws its n-th number (its counter, counted here) from the stream. Whatever
// thread runs a call, it draws the same numbers: the same in every space.
PK_FN uint64_t rand_stream(uint64_t key, uint64_t index) { return rand_bits(key, index); }
PK_FN uint64_t pool_bits(uint64_t stream, uint64_t site, uint64_t& n) {
    return rand_bits(stream + site, n++);
}
// Floats in [0, 1) (53 and 24 bits); signed integers in [0, max of the type], unsigned
// ones any value of the type (Kokkos' rand<Generator, T>::draw ranges).
PK_FN double pool_float64(uint64_t s, uint64_t site, uint64_t& n) {
    return (double)(pool_bits(s, site, n) >> 11) * 0x1.0p-53;
}
PK_FN float pool_float32(uint64_t s, uint64_t site, uint64_t& n) {
    return (float)(pool_bits(s, site, n) >> 40) * 0x1.0p-24f;
}
PK_FN int64_t pool_int64(uint64_t s, uint64_t site, uint64_t& n) {
    return (int64_t)(pool_bits(s, site, n) >> 1);
}
PK_FN int32_t pool_int32(uint64_t s, uint64_t site, uint64_t& n) {
    return (int32_t)(pool_bits(s, site, n) >> 33);
}
PK_FN int16_t pool_int16(uint64_t s, uint64_t site, uint64_t& n) {
    return (int16_t)(pool_bits(s, site, n) >> 49);
}
PK_FN int8_t pool_int8(uint64_t s, uint64_t site, uint64_t& n) {
    return (int8_t)(pool_bits(s, site, n) >> 57);
}
PK_FN uint64_t pool_uint64(uint64_t s, uint64_t site, uint64_t& n) { return pool_bits(s, site, n); }
PK_FN uint32_t pool_uint32(uint64_t s, uint64_t site, uint64_t& n) {
    return (uint32_t)(pool_bits(s, site, n) >> 32);
}
PK_FN uint16_t pool_uint16(uint64_t s, uint64_t site, uint64_t& n) {
    return (uint16_t)(pool_bits(s, site, n) >> 48);
}
PK_FN uint8_t pool_uint8(uint64_t s, uint64_t site, uint64_t& n) {
    return (uint8_t)(pool_bits(s, site, n) >> 56);
}
