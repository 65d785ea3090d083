"""The CUDA C++ runtime every generated GPU kernel starts with.

Compiled by NVRTC, which has no standard headers: the integer types are declared here
(``long`` for 64 bits, as glibc declares them, so the same text also compiles under
nvcc, whose host headers declare them too), math goes through the overloads of
``pk_math`` (``sqrt(float)`` calls ``sqrtf``), and nothing uses ``std::``. The Python
arithmetic helpers are ports of :data:`pkernels.translate.cpp_prelude.PRELUDE`'s, so a
kernel computes the same values on the GPU as on the CPU (release builds: an integer
division by zero gives NumPy's 0 instead of faulting, as there).

Three parts, added as a module needs them: :data:`CUDA_PRELUDE` (always),
:data:`CUDA_PRINT_PRELUDE` (kernels that ``print``), :data:`CUDA_TEAM_PRELUDE`
(TeamPolicy kernels).
"""

from __future__ import annotations

from .cpp_prelude import (
    shared_arithmetic,
    shared_formatting,
    shared_search,
    shared_team_combine,
)

# Functions of one float argument / two, as the IR names them (typing_rules.MATH_FUNCTIONS
# plus floor, ceil and trunc); each gets a double and a float overload in pk_math.
_UNARY = (
    "sqrt exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh tanh "
    "asinh acosh atanh fabs cbrt erf erfc tgamma lgamma floor ceil trunc nearbyint"
).split()
_BINARY = "pow atan2 fmod fmin fmax hypot copysign remainder".split()


def _math_overloads() -> str:
    lines = []
    for name in _UNARY:
        lines.append(
            f"__device__ __forceinline__ double {name}(double x) {{ return ::{name}(x); }}\n"
            f"__device__ __forceinline__ float {name}(float x) {{ return ::{name}f(x); }}"
        )
    for name in _BINARY:
        lines.append(
            f"__device__ __forceinline__ double {name}(double a, double b) "
            f"{{ return ::{name}(a, b); }}\n"
            f"__device__ __forceinline__ float {name}(float a, float b) "
            f"{{ return ::{name}f(a, b); }}"
        )
    return "\n".join(lines)


CUDA_PRELUDE = (
    r"""
// ---- pkernels CUDA runtime (NVRTC: no standard headers)
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
#ifndef INT64_C
#define INT64_C(c) c##L
#endif
#ifndef UINT64_C
#define UINT64_C(c) c##UL
#endif
#ifndef INT64_MIN
#define INT64_MIN (-INT64_C(9223372036854775807) - 1)
#endif
#ifndef PK_DEBUG
#define PK_DEBUG 0
#endif
// The debug build's checks (view indices, integer divisors, float to int, integer **
// negative): on in debug builds (NVRTC -G) and in checked release builds.
#ifndef PK_CHECKS
#define PK_CHECKS PK_DEBUG
#endif
// The workunit body and its views, by value. Release builds inline the body; debug
// builds keep it a function of its own, the frame cuda-gdb shows at the Python lines.
#define PK_KERNEL_TEMPLATE
#if PK_DEBUG
#define PK_KERNEL __device__ __noinline__
#else
#define PK_KERNEL __device__ __forceinline__
#endif
#define PK_VIEW_ARG(T, R, C) const pk_rt::View<T, R, C>

namespace pk_math {
"""
    + _math_overloads()
    + r"""
__device__ __forceinline__ bool isnan(double x) { return x != x; }
__device__ __forceinline__ bool isinf(double x) { return x - x != x - x && x == x; }
__device__ __forceinline__ bool isfinite(double x) { return x - x == x - x; }
__device__ __forceinline__ double modf(double x, double* whole) { return ::modf(x, whole); }
__device__ __forceinline__ float modf(float x, float* whole) { return ::modff(x, whole); }
__device__ __forceinline__ double frexp(double x, int* e) { return ::frexp(x, e); }
__device__ __forceinline__ double ldexp(double x, int e) { return ::ldexp(x, e); }
__device__ __forceinline__ float ldexp(float x, int e) { return ::ldexpf(x, e); }
__device__ __forceinline__ float frexp(float x, int* e) { return ::frexpf(x, e); }
}  // namespace pk_math

namespace pk_rt {

// A strided view of device memory (a CuPy array). C: the last axis is contiguous.
template <typename T, int R, bool C>
struct View {
    T* data;
    int64_t extent[R];
    int64_t stride[R];
};

// ---- faults: the first failed check (or team fault) of a launch, in the module's
// pk_fault_record, which the host clears before a launch that can fail and reads after.
struct Fault {
    int flag;
    int kind;  // 1: index, 2: zero division, 3: barrier mismatch, 4: scratch, 5/6: float to int
    double value;  // kind 6: the float no integer holds (the host formats it as Python does)
    char text[1008];
};

struct Text {
    char* buf;
    int len, cap;
    __device__ void put(const char* s) {
        while (*s && len < cap - 1) buf[len++] = *s++;
        buf[len] = 0;
    }
    __device__ void put_int(long long v) {
        char d[24];
        int n = 0;
        unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
        if (v < 0) put("-");
        do { d[n++] = (char)('0' + u % 10); u /= 10; } while (u);
        char out[24];
        for (int k = 0; k < n; ++k) out[k] = d[n - 1 - k];
        out[n] = 0;
        put(out);
    }
};

}  // namespace pk_rt

// Global names (not mangled): the host finds them with cuModuleGetGlobal.
__device__ pk_rt::Fault pk_fault_record;
// Where a failed check's access goes instead of the view (the launch has failed).
__device__ unsigned long long pk_fault_slot[2];

// Debuggers break here to stop in the thread whose check failed (pkdb does).
extern "C" __device__ __noinline__ void pk_fault_hook(const pk_rt::Fault* fault) {
    asm volatile("" : : "l"(fault) : "memory");
}

namespace pk_rt {

__device__ __noinline__ void fault(Fault* f, int kind, const char* file, int line,
                                   const char* what, double value = 0.0) {
    if (atomicCAS(&f->flag, 0, 1) != 0) return;
    f->kind = kind;
    f->value = value;
    Text t{f->text, 0, (int)sizeof f->text};
    t.put(file); t.put(":"); t.put_int(line); t.put(": "); t.put(what);
    t.put(" (block "); t.put_int(blockIdx.x); t.put(", thread "); t.put_int(threadIdx.x);
    t.put(")");
    __threadfence();
    pk_fault_hook(f);
}

template <typename T>
__device__ __forceinline__ T& fault_slot() {
    return *reinterpret_cast<T*>(pk_fault_slot);
}

__device__ __noinline__ void index_fault(int64_t i, int axis, const char* name, int64_t extent,
                                         const char* file, int line) {
    char what[256];
    Text t{what, 0, (int)sizeof what};
    t.put("index "); t.put_int(i); t.put(" is out of range for axis "); t.put_int(axis);
    t.put(" of view '"); t.put(name); t.put("' with extent "); t.put_int(extent);
    fault(&pk_fault_record, 1, file, line, what);
}

template <typename T, int R, bool C, typename... I>
__device__ __forceinline__ T& at(const View<T, R, C>& v, const char* name, const char* file,
                                 int line, I... indices) {
    const int64_t idx[R] = {(int64_t)indices...};
#if PK_CHECKS
    for (int k = 0; k < R; ++k) {
        if (idx[k] < 0 || idx[k] >= v.extent[k]) {
            index_fault(idx[k], k, name, v.extent[k], file, line);
            return fault_slot<T>();
        }
    }
#else
    (void)name; (void)file; (void)line;
#endif
    int64_t offset = 0;
#pragma unroll
    for (int k = 0; k < R; ++k) offset += idx[k] * ((C && k == R - 1) ? 1 : v.stride[k]);
    return v.data[offset];
}

"""
    + shared_search("__device__ __forceinline__")
    + r"""

// An index into a subview: checked against the subview's own extent (checked builds).
__device__ __forceinline__ int64_t subview_index(int64_t i, int64_t extent, const char* name,
                                                 int axis, const char* file, int line) {
#if PK_CHECKS
    if (i < 0 || i >= extent) {
        index_fault(i, axis, name, extent, file, line);
        return 0;
    }
#else
    (void)extent; (void)name; (void)axis; (void)file; (void)line;
#endif
    return i;
}

template <typename T>
__device__ __forceinline__ T nan_value();
template <>
__device__ __forceinline__ double nan_value<double>() {
    return __longlong_as_double(0x7ff8000000000000LL);
}
template <>
__device__ __forceinline__ float nan_value<float>() { return __int_as_float(0x7fc00000); }
template <typename T>
__device__ __forceinline__ T inf_value();
template <>
__device__ __forceinline__ double inf_value<double>() {
    return __longlong_as_double(0x7ff0000000000000LL);
}
template <>
__device__ __forceinline__ float inf_value<float>() { return __int_as_float(0x7f800000); }

// ---- Python arithmetic on integers: a zero divisor is an error in checked builds
// (release builds go on with NumPy's 0, as on the CPU); false for a zero divisor
template <typename T>
__device__ __forceinline__ bool check_divisor(T b, const char* file, int line) {
#if PK_CHECKS
    if (b == 0) fault(&pk_fault_record, 2, file, line, "integer division or modulo by zero");
#else
    (void)file; (void)line;
#endif
    return b != 0;
}

// An integer ** a negative integer is a float in Python: an error in checked builds
// (release builds: ipow gives 1)
template <typename T>
__device__ __forceinline__ T check_exponent(T e, const char* file, int line) {
#if PK_CHECKS
    if (e < 0) {
        char what[200];
        Text t{what, 0, (int)sizeof what};
        t.put("an integer ** "); t.put_int((long long)e);
        t.put(": Python gives a float, this kernel's integer result cannot hold it "
              "(write float(base) ** exponent)");
        fault(&pk_fault_record, 5, file, line, what);
    }
#else
    (void)file; (void)line;
#endif
    return e;
}

// int() of a float: a NaN, an infinity or a value past the integer type is an error in
// checked builds (release builds: the conversion itself, as on the CPU)
template <typename T, typename F>
__device__ __forceinline__ T float_to_int(F x, const char* file, int line) {
#if PK_CHECKS
    const bool is_signed = (T)-1 < (T)0;
    const int bits = 8 * (int)sizeof(T);
    const F end = pk_math::ldexp((F)1, is_signed ? bits - 1 : bits);  // the first value past T
    const F whole = pk_math::trunc(x);
    if (x != x) {
        fault(&pk_fault_record, 5, file, line, "cannot convert float NaN to integer");
        return (T)0;
    }
    if (!(whole >= (is_signed ? -end : (F)0) && whole < end)) {
        char what[160];
        Text t{what, 0, (int)sizeof what};
        // The host puts the value where @VALUE@ is, formatted as Python's %.17g.
        t.put("cannot convert @VALUE@ to a "); t.put_int(bits);
        t.put(is_signed ? "-bit signed integer" : "-bit unsigned integer");
        fault(&pk_fault_record, 6, file, line, what, (double)x);
        return (T)0;
    }
#else
    (void)file; (void)line;
#endif
    return (T)x;
}

"""
    + shared_arithmetic("__device__ __forceinline__", "pk_math::")
    + r"""
// ---- atomics: atomicAdd where the hardware has it, else an atomicCAS loop on the bits
// (1- and 2-byte elements through the aligned 4-byte word that holds them)
template <typename To, typename From>
__device__ __forceinline__ To bit_cast(From v) {
    static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
    union {
        From from;
        To to;
    } u;
    u.from = v;
    return u.to;
}

template <int N> struct UInt;
template <> struct UInt<1> { typedef unsigned char type; };
template <> struct UInt<2> { typedef unsigned short type; };
template <> struct UInt<4> { typedef unsigned int type; };
template <> struct UInt<8> { typedef unsigned long long type; };

template <typename T, typename F>
__device__ T atomic_update(T* p, F f, T* new_value) {
    T old, desired;
    if constexpr (sizeof(T) == 8 || sizeof(T) == 4) {
        typedef typename UInt<sizeof(T)>::type U;
        U* word = (U*)p;
        U seen = *(volatile U*)word, assumed;
        do {
            assumed = seen;
            old = bit_cast<T>(assumed);
            desired = f(old);
            seen = atomicCAS(word, assumed, bit_cast<U>(desired));
        } while (seen != assumed);
    } else {
        typedef typename UInt<sizeof(T)>::type U;
        unsigned int* word = (unsigned int*)((unsigned long long)p & ~3ULL);
        const unsigned int shift = (unsigned int)((unsigned long long)p & 3ULL) * 8u;
        const unsigned int mask = ((1u << (8 * sizeof(T))) - 1u) << shift;
        unsigned int seen = *(volatile unsigned int*)word, assumed;
        do {
            assumed = seen;
            old = bit_cast<T>((U)((assumed & mask) >> shift));
            desired = f(old);
            const unsigned int bits = (unsigned int)bit_cast<U>(desired) << shift;
            seen = atomicCAS(word, assumed, (assumed & ~mask) | bits);
        } while (seen != assumed);
    }
    if (new_value) *new_value = desired;
    return old;
}

// *p = f(*p, v) atomically; the old value, or the new one when want_new.
template <typename T, typename F>
__device__ __forceinline__ T atomic_apply(T* p, T v, F f, bool want_new) {
    T desired;
    const T old = atomic_update(p, [=](T a) { return f(a, v); }, &desired);
    return want_new ? desired : old;
}

template <typename T>
__device__ __forceinline__ T atomic_add(T* p, T v) {
    return atomic_update(p, [=](T a) { return (T)(a + v); }, (T*)nullptr);
}
__device__ __forceinline__ float atomic_add(float* p, float v) { return atomicAdd(p, v); }
__device__ __forceinline__ double atomic_add(double* p, double v) { return atomicAdd(p, v); }
__device__ __forceinline__ int32_t atomic_add(int32_t* p, int32_t v) { return atomicAdd(p, v); }
__device__ __forceinline__ uint32_t atomic_add(uint32_t* p, uint32_t v) {
    return atomicAdd(p, v);
}
__device__ __forceinline__ int64_t atomic_add(int64_t* p, int64_t v) {
    return (int64_t)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
__device__ __forceinline__ uint64_t atomic_add(uint64_t* p, uint64_t v) {
    return (uint64_t)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
template <typename T>
__device__ __forceinline__ T atomic_add_fetch(T* p, T v) {
    return (T)(atomic_add(p, v) + v);
}

template <typename T>
__device__ __forceinline__ T atomic_exchange(T* p, T v) {
    return atomic_update(p, [=](T) { return v; }, (T*)nullptr);
}

// The old value, whether or not the exchange happened (compared bit for bit, as the CPU's
// __atomic_compare_exchange does).
template <typename T>
__device__ T atomic_cas(T* p, T expected, T desired) {
    typedef typename UInt<sizeof(T)>::type U;
    if constexpr (sizeof(T) == 8 || sizeof(T) == 4) {
        return bit_cast<T>(atomicCAS((U*)p, bit_cast<U>(expected), bit_cast<U>(desired)));
    } else {
        unsigned int* word = (unsigned int*)((unsigned long long)p & ~3ULL);
        const unsigned int shift = (unsigned int)((unsigned long long)p & 3ULL) * 8u;
        const unsigned int mask = ((1u << (8 * sizeof(T))) - 1u) << shift;
        unsigned int seen = *(volatile unsigned int*)word, assumed;
        do {
            assumed = seen;
            const U current = (U)((assumed & mask) >> shift);
            if (current != bit_cast<U>(expected)) return bit_cast<T>(current);
            const unsigned int bits = (unsigned int)bit_cast<U>(desired) << shift;
            seen = atomicCAS(word, assumed, (assumed & ~mask) | bits);
        } while (seen != assumed);
        return expected;
    }
}

// ---- one block's partial of a parallel_reduce: the threads' partials added in shared
// memory (a tree of fixed shape: the same total every run), written to out[blockIdx.x]
// The block's threads' partials combined (a tree: blockDim.x is a power of two), into
// out[blockIdx.x]; `combine` is the reduction's operation (the module's pk_reduce).
template <typename T, typename F>
__device__ void block_reduce(T* shared, T partial, T* out, F combine) {
    shared[threadIdx.x] = partial;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            shared[threadIdx.x] = combine(shared[threadIdx.x], shared[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = shared[0];
}

}  // namespace pk_rt
"""
)


# print(): Python's formatting into a per-thread buffer, written with one printf per call
# so the lines of different threads do not interleave.
CUDA_PRINT_PRELUDE = (
    r"""
namespace pk_rt {

// 10^k: exact for 0 <= k <= 22, correctly rounded for -22 <= k < 0, close beyond.
__device__ inline double ten_to(int k) {
    if (k < -22 || k > 22) return pk_math::pow(10.0, (double)k);
    double p = 1.0;  // exact: every power of ten up to 1e22 is a double
    for (int i = 0; i < (k < 0 ? -k : k); ++i) p *= 10.0;
    return k < 0 ? 1.0 / p : p;
}

// A double-double: hi + lo, about 106 bits (powers of ten beyond the exact doubles).
struct DoubleDouble {
    double hi, lo;
};

__device__ inline DoubleDouble dd_mul(DoubleDouble a, DoubleDouble b) {
    const double h = a.hi * b.hi;
    const double l = ::fma(a.hi, b.hi, -h) + (a.hi * b.lo + a.lo * b.hi);
    const double s = h + l;
    return {s, l - (s - h)};
}

__device__ inline DoubleDouble ten_to_dd(int k) {
    DoubleDouble p{1.0, 0.0};
    const DoubleDouble step = k >= 0 ? DoubleDouble{10.0, 0.0}
                                     : DoubleDouble{0.1, -5.551115123125782702e-18};
    for (int i = 0; i < (k >= 0 ? k : -k); ++i) p = dd_mul(p, step);
    return p;
}

"""
    + shared_formatting("__device__ inline", "__device__ ", "__noinline__", "pk_math::")[0]
    + r"""
struct Printer {
    char buf[1024];
    int len = 0;
    int mark_at = 0;  // where the value finish() pads starts

    __device__ Printer& raw(const char* s) {
        while (*s && len < (int)sizeof buf - 1) buf[len++] = *s++;
        buf[len] = 0;
        return *this;
    }
    // Each returns the Printer: a print is one chain of calls (the CPU's Printer says why).
    __device__ Printer& value(bool v) { return raw(v ? "True" : "False"); }
    __device__ Printer& value(long long v) { return in_base(v, 'd'); }  // shared_formatting's
    __device__ Printer& value(unsigned long long v) { return in_base(v, 'd'); }
    __device__ Printer& value(double v) { floating(v, false); return *this; }
    __device__ Printer& value(float v) { floating((double)v, true); return *this; }

    // a * 10^j rounded to an integer m, and d = a * 10^j - m (|d| <= 0.5); exact (through
    // fma) for |j| <= 22, to about 106 bits beyond.
    __device__ static long long scaled(double a, int j, double* d) {
        double hi, lo;
        if (j >= 0 && j <= 22) {
            const double p = ten_to(j);
            hi = a * p;
            lo = ::fma(a, p, -hi);
        } else if (j < 0 && j >= -22) {
            const double p = ten_to(-j);  // exact
            hi = a / p;
            lo = ::fma(-hi, p, a) / p;  // a = hi * p + r exactly
        } else {  // in two steps: 10^j alone may be out of a double's range
            const int j1 = j / 2;
            const DoubleDouble p1 = ten_to_dd(j1), p2 = ten_to_dd(j - j1);
            const double h = a * p1.hi, l = ::fma(a, p1.hi, -h) + a * p1.lo;
            const double t = h + l;
            const DoubleDouble r = dd_mul(DoubleDouble{t, l - (t - h)}, p2);
            hi = r.hi;
            lo = r.lo;
        }
        const double f = pk_math::floor(hi);
        long long m = (long long)f;
        double frac = (hi - f) + lo;
        while (frac >= 1.0) { ++m; frac -= 1.0; }
        while (frac < 0.0) { --m; frac += 1.0; }
        if (frac > 0.5 || (frac == 0.5 && (m & 1))) { ++m; frac -= 1.0; }
        *d = frac;
        return m;
    }

    // Whether the decimal m * 10^-j reads back as a (a float, when single): within half a
    // unit in the last place of a, ties to even (as strtod rounds). Decided exactly in
    // 128-bit integers: m * 10^-j and a = S * 2^E, both scaled by 4 * 10^max(j, 0) *
    // 2^max(-E, 0); -1 when those integers would not fit (very large or small a).
    __device__ static int reads_back_exactly(double a, long long m, int j, bool single) {
        typedef unsigned __int128 u128;
        int e;
        (void)::frexp(a, &e);
        const int bits = single ? 24 : 53, lowest = single ? -149 : -1074;
        const int E = e - bits > lowest ? e - bits : lowest;
        const unsigned long long S = (unsigned long long)::ldexp(a, -E);  // exact
        const bool boundary = S == (1ULL << (bits - 1)) && E > lowest;  // a power of two
        const int tens_a = j > 0 ? j : 0, tens_m = j < 0 ? -j : 0;
        const int twos_a = E > 0 ? E : 0, twos_m = E < 0 ? -E : 0;
        int bits_m = 0, bits_s = 0;
        for (unsigned long long u = (unsigned long long)m; u; u >>= 1) ++bits_m;
        for (unsigned long long u = S; u; u >>= 1) ++bits_s;
        // 10^k < 2^(10k/3 + 1)
        if (bits_m + tens_m * 10 / 3 + 1 + twos_m + 2 > 124) return -1;
        if (bits_s + tens_a * 10 / 3 + 1 + twos_a + 2 > 124) return -1;
        u128 ten_m = 1, ten_a = 1;
        for (int k = 0; k < tens_m; ++k) ten_m *= 10;
        for (int k = 0; k < tens_a; ++k) ten_a *= 10;
        const u128 A = ((u128)(unsigned long long)m * ten_m) << (twos_m + 2);
        const u128 B = ((u128)S * ten_a) << (twos_a + 2);
        const u128 half = ten_a << (twos_a + (boundary && A < B ? 0 : 1));
        const u128 diff = A > B ? A - B : B - A;
        if (diff != half) return diff < half;
        return (S & 1ULL) == 0;
    }

    // reads_back_exactly, else from d = a * 10^j - m (close, in doubles).
    __device__ static bool reads_back(double a, long long m, int j, double d, bool single) {
        const int exact = reads_back_exactly(a, m, j, single);
        if (exact >= 0) return exact != 0;
        int e;
        const double mant = ::frexp(a, &e);  // a = mant * 2^e, mant in [0.5, 1)
        const int bits = single ? 24 : 53, lowest = single ? -149 : -1074;
        const int ulp_exp = e - bits > lowest ? e - bits : lowest;
        // Half an ulp of a, times 10^j (in two steps where 10^j is out of range).
        const int j1 = j >= -22 && j <= 22 ? j : j / 2;
        double half = ::ldexp(ten_to(j1), ulp_exp - 1);
        if (j != j1) half *= ten_to(j - j1);
        if (d > 0 && mant == 0.5 && e - bits > lowest) half /= 2;  // below a power of two
        const double err = d < 0 ? -d : d;
        if (err < half) return true;
        if (err > half) return false;
        const double units = ::ldexp(mant, bits);  // the significand, an integer
        return pk_math::fmod(units, 2.0) == 0.0;
    }

    // Python's repr(): the shortest digits that read back as v (the nearest such digits
    // when several do), fixed notation for exponents in [-4, 16), scientific otherwise.
    __device__ void floating(double v, bool single) {
        if (pk_math::isnan(v)) { raw("nan"); return; }
        if (pk_math::isinf(v)) { raw(v > 0 ? "inf" : "-inf"); return; }
        if (pk_math::copysign(1.0, v) < 0) raw("-");
        const double a = pk_math::fabs(v);
        if (a == 0) { raw("0.0"); return; }
        int x = (int)pk_math::floor(pk_math::log10(a));
        const int most = single ? 9 : 17;
        long long m = 0;
        int p = 1;
        for (; p <= most; ++p) {
            double d = 0;
            for (int tries = 0; tries < 3; ++tries) {  // correct x if log10 was off by one
                m = scaled(a, p - 1 - x, &d);
                const double top = ten_to(p);
                if ((double)m >= top && (double)m != top) { ++x; continue; }
                if ((double)m < ten_to(p - 1)) { --x; continue; }
                break;
            }
            const int j = p - 1 - x;
            if (reads_back(a, m, j, d, single)) break;
            // Next to a power of two the values that read back as v lie unevenly around
            // it: the neighbour on the wide side may read back when the nearest does not.
            if (m > 1 && reads_back(a, m - 1, j, d + 1.0, single)) { --m; break; }
            if (reads_back(a, m + 1, j, d - 1.0, single)) { ++m; break; }
            if (p == most) break;
        }
        if (p > most) p = most;
        if ((double)m >= ten_to(p)) { m /= 10; ++x; }  // 9.99 rounded up to 10.0
        char dg[24];
        int nd = 0;
        {
            char rev[24];
            unsigned long long u = (unsigned long long)m;
            do { rev[nd++] = (char)('0' + u % 10); u /= 10; } while (u);
            for (int k = 0; k < nd; ++k) dg[k] = rev[nd - 1 - k];
        }
        while (nd > 1 && dg[nd - 1] == '0') --nd;
        char out[64];
        int o = 0;
        const bool fixed = single ? a >= 1e-4 && a < 1e6 : x >= -4 && x < 16;  // as the CPU's
        if (fixed) {
            if (x < 0) {
                out[o++] = '0'; out[o++] = '.';
                for (int k = 0; k < -x - 1; ++k) out[o++] = '0';
                for (int k = 0; k < nd; ++k) out[o++] = dg[k];
            } else {
                for (int k = 0; k <= x; ++k) out[o++] = k < nd ? dg[k] : '0';
                out[o++] = '.';
                if (nd > x + 1) {
                    for (int k = x + 1; k < nd; ++k) out[o++] = dg[k];
                } else {
                    out[o++] = '0';
                }
            }
        } else {
            out[o++] = dg[0];
            if (nd > 1) {
                out[o++] = '.';
                for (int k = 1; k < nd; ++k) out[o++] = dg[k];
            }
            out[o++] = 'e';
            out[o++] = x < 0 ? '-' : '+';
            const int ax = x < 0 ? -x : x;
            if (ax >= 100) out[o++] = (char)('0' + ax / 100);
            out[o++] = (char)('0' + ax / 10 % 10);
            out[o++] = (char)('0' + ax % 10);
        }
        out[o] = 0;
        raw(out);
    }
    __device__ void flush() { printf("%s", buf); }
"""
    + shared_formatting("__device__ inline", "__device__ ", "__noinline__", "pk_math::")[1]
    + r"""};

}  // namespace pk_rt
"""
)

# The runtime of TeamPolicy kernels: a team is one CUDA block of team_size threads. Its
# shared state (reduction slots, the barrier bookkeeping, level-0 scratch) lives in the
# block's dynamic shared memory; level-1 scratch is a slice of a global buffer, one per
# block of the grid (each block runs league ranks blockIdx.x, + gridDim.x, ...).
#
# team_barrier() is `barrier.sync 0` without .aligned: threads of one team waiting at
# *different* barrier calls still meet there (the hardware counts arrivals at barrier 0,
# not at one instruction), so each compares the Python line it waits at with team rank
# 0's: a mismatch is recorded as a fault and the whole block stops (PTX `exit`) instead
# of hanging, as the CPU runtime reports it.
CUDA_TEAM_PRELUDE = (
    r"""
#ifndef PK_SLOT_BYTES
#define PK_SLOT_BYTES 8  // a team rank's reduction slot: more for a struct accumulator
#endif
namespace pk_rt {

enum { TEAM_END_OF_WORKUNIT = -1 };

struct TeamShared {
    int size;
    int* arrival_line;      // shared memory, per team rank: the line of its barrier
    unsigned char* slots;   // shared memory, per team rank: PK_SLOT_BYTES (at least 8)
    char* scratch[2];       // level 0: shared memory; level 1: this block's global buffer
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

__device__ __noinline__ void barrier_mismatch(const TeamMember& tm, int line, const char* file) {
    TeamShared* s = tm.shared;
    int odd = 0;
    while (odd < s->size && s->arrival_line[odd] == s->arrival_line[0]) ++odd;
    char what[512];
    Text t{what, 0, (int)sizeof what};
    t.put("team_barrier() mismatch in league ");
    t.put_int(tm.league_rank);
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
        if (tm.team_rank == 0) barrier_mismatch(tm, line, file);
        asm volatile("exit;");  // every thread of the block saw it: they all stop
    }
}

// This thread's share of [begin, end) in a TeamThreadRange: contiguous chunks in rank
// order, the CPU's split.
__device__ __forceinline__ void team_chunk(const TeamMember& tm, int64_t begin, int64_t end,
                                           int64_t* lo, int64_t* hi) {
    const int64_t n = end > begin ? end - begin : 0;
    const int64_t chunk = (n + tm.team_size - 1) / tm.team_size;
    *lo = begin + tm.team_rank * chunk;
    if (*lo > end) *lo = end;
    *hi = *lo + chunk < end ? *lo + chunk : end;
}

// Every thread's partial, added in team rank order: the same total, bit for bit, in all
// (and the CPU's, for the same team size).
template <typename T>
__device__ T team_reduce(TeamMember& tm, T partial, const char* file, int line) {
    if (tm.team_size == 1) return T(0) + partial;
    TeamShared* s = tm.shared;
    *(T*)(s->slots + 8 * tm.team_rank) = partial;
    team_barrier(tm, file, line);
    T total = 0;
    for (int r = 0; r < s->size; ++r) total += *(T*)(s->slots + 8 * r);
    team_barrier(tm, file, line);  // the slots are reused by the next collective
    return total;
}

"""
    + shared_team_combine("__device__", 8)
    + r"""
// The sum of the partials of the threads before this one (an exclusive scan in team rank
// order); `*total`: the sum of all.
template <typename T>
__device__ T team_scan(TeamMember& tm, T partial, T* total, const char* file, int line) {
    TeamShared* s = tm.shared;
    *(T*)(s->slots + 8 * tm.team_rank) = partial;
    team_barrier(tm, file, line);
    T before = 0, all = 0;
    for (int r = 0; r < s->size; ++r) {
        if (r == tm.team_rank) before = all;
        all += *(T*)(s->slots + 8 * r);
    }
    team_barrier(tm, file, line);
    *total = all;
    return before;
}

// The next piece of the team's (or this thread's) scratch memory at `level`, as a view
// (one pool per level, handed out as on the CPU).
template <typename T, int R>
__device__ View<T, R, true> scratch_view(TeamMember& tm, int level, bool per_thread,
                                         const int64_t (&extents)[R], const char* name,
                                         const char* file, int line) {
    TeamShared* s = tm.shared;
    int64_t count = 1;
    for (int k = 0; k < R; ++k) count *= extents[k] > 0 ? extents[k] : 0;
    const int64_t bytes = (count * (int64_t)sizeof(T) + 7) / 8 * 8;
    const int64_t copies = per_thread ? tm.team_size : 1;
    int64_t& used = tm.scratch_used[level];
    const int64_t pool = s->team_bytes[level] + tm.team_size * s->thread_bytes[level];
    View<T, R, true> v;
    for (int k = 0; k < R; ++k) v.extent[k] = extents[k] > 0 ? extents[k] : 0;
    v.stride[R - 1] = 1;
    for (int k = R - 2; k >= 0; --k) v.stride[k] = v.stride[k + 1] * v.extent[k + 1];
    if (used + bytes * copies > pool) {
        const int64_t left = pool - used > 0 ? (pool - used) / copies / 8 * 8 : 0;
        char what[384];
        Text t{what, 0, (int)sizeof what};
        t.put("ScratchView"); t.put_int(R); t.put("D '"); t.put(name); t.put("' needs ");
        t.put_int(bytes); t.put(" bytes of level-"); t.put_int(level);
        t.put(per_thread ? " thread" : " team"); t.put(" scratch but only ");
        t.put_int(left);
        t.put(" are left: reserve more with policy.set_scratch_size(");
        t.put_int(level); t.put(per_thread ? ", pk.PerThread(...))" : ", pk.PerTeam(...))");
        fault(s->fault, 4, file, line, what);
        // The launch has failed; the kernel runs on in memory of its own (or this thread
        // stops, when the device heap has none left).
        v.data = (T*)malloc((unsigned long)(count > 0 ? count : 1) * sizeof(T));
        if (v.data == nullptr) asm volatile("exit;");
        return v;
    }
    v.data = (T*)(s->scratch[level] + used + (per_thread ? tm.team_rank * bytes : 0));
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
    s.scratch[0] = (char*)(dynamic + PK_SLOT_BYTES * size + (4 * size + 7) / 8 * 8);
    s.scratch[1] = level1;
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
"""
)
