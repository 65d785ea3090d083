// The C++ runtime of every kernel pkernels compiles for the CPU (OpenMP and Serial):
// views, Python arithmetic, faults, print(). Generated kernels start with
// `#include "pkernels/cpu.hpp"`; g++ finds it through -I<pkernels>/include, and the
// content of every header here is part of each kernel's cache key (pkernels.build.runtime).
//
// Kept free of heavy headers (no <vector>, <atomic>, <string>) so a cold compile stays
// near the cost of g++ itself. Compiled with -DPK_DEBUG=1 for debug builds, which turns
// on bounds and division checks (-DPK_CHECKS=1: the checks in release code).
//
// The workunit body is declared through macros so one generated source serves both builds:
// * debug (PK_DEBUG): PK_KERNEL is a real, never inlined function taking its views by
//   reference, so gdb (and pkdb) can set breakpoints and show frames in pk_kernel::<name>;
// * release: the body is inlined into the launcher's loop (g++ would otherwise leave a call
//   per index, its inliner judging the call "cold"), takes its views by value (their fields
//   become registers) and is a template on PK_NA: true when the launcher has checked that
//   no view it writes overlaps another view, so its data pointer can be __restrict__
//   (RView) and g++ drops its run-time alias checks around vector loops.
//
// What the GPU computes alike is in shared/ (one text for both runtimes, parameterised by
// the macros each shared header names).
#ifndef PKERNELS_CPU_HPP
#define PKERNELS_CPU_HPP
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifndef PK_DEBUG
#define PK_DEBUG 0
#endif
#ifndef PK_HYBRID
#define PK_HYBRID 0
#endif
// The debug build's checks (view indices, integer divisors, float to int conversions,
// integer ** negative): on in debug builds, and in checked release builds
// (BuildMode.CHECKED: -O3 code that reports a failed check instead of corrupting memory).
#ifndef PK_CHECKS
#define PK_CHECKS PK_DEBUG
#endif
#if PK_DEBUG
#define PK_KERNEL_TEMPLATE
#define PK_KERNEL static __attribute__((noinline))
#define PK_VIEW_ARG(T, R, L) const pk_rt::View<T, R, L>&
#define PK_ACCESS static inline
#else
#define PK_KERNEL_TEMPLATE template <bool PK_NA>
#define PK_KERNEL static inline __attribute__((always_inline))
#define PK_VIEW_ARG(T, R, L) const typename pk_rt::ViewArg<PK_NA, T, R, L>::type
// View accesses are inlined before g++ computes restrict information for the body (its
// early alias pass): an access still a call then loses it, and the vectoriser versions
// the loop on run-time alias checks again.
#define PK_ACCESS static inline __attribute__((always_inline))
#endif

namespace pk_rt {

#include "pkernels/shared/view_layout.hpp"

// A strided view of caller-owned memory. L: its layout (view_layout.hpp), which axis, if
// any, has stride 1.
template <typename T, int R, int L>
struct View {
    T* data;
    int64_t extent[R];
    int64_t stride[R];
    static constexpr int rank = R;
    static constexpr int layout = L;
};

// A view whose memory no other view of the launch overlaps (checked by the launcher, as
// Numba and the vectorisers do at run time): stores through it cannot change what the
// other views read. Release builds only.
template <typename T, int R, int L>
struct RView {
    T* __restrict__ data;
    int64_t extent[R];
    int64_t stride[R];
    static constexpr int rank = R;
    static constexpr int layout = L;
};

template <bool NoAlias, typename T, int R, int L>
struct ViewArg {
    using type = View<T, R, L>;
};
template <typename T, int R, int L>
struct ViewArg<true, T, R, L> {
    using type = RView<T, R, L>;
};

template <bool NoAlias, typename T, int R, int L>
static inline typename ViewArg<NoAlias, T, R, L>::type view_arg(const View<T, R, L>& v) {
    typename ViewArg<NoAlias, T, R, L>::type out;
    out.data = v.data;
    for (int k = 0; k < R; ++k) {
        out.extent[k] = v.extent[k];
        out.stride[k] = v.stride[k];
    }
    return out;
}

// The bytes a view can reach, [lo, hi); lo == hi for an empty view.
struct Span {
    uintptr_t lo, hi;
};

template <typename T, int R, int L>
static inline Span span(const View<T, R, L>& v) {
    int64_t lo = 0, hi = 0;
    for (int k = 0; k < R; ++k) {
        if (v.extent[k] <= 0) return {0, 0};
        const int64_t reach = (v.extent[k] - 1) * v.stride[k];
        if (reach < 0) lo += reach; else hi += reach;
    }
    const uintptr_t base = (uintptr_t)v.data;
    const int64_t size = (int64_t)sizeof(T);
    return {base + (uintptr_t)(lo * size), base + (uintptr_t)((hi + 1) * size)};
}

static inline bool overlap(Span a, Span b) {
    return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

// This thread's share of [begin, end) under schedule(static): libgomp's split, so a
// launcher that walks its own chunk sees the same indices an `omp for` would give it.
static inline void static_chunk(int64_t begin, int64_t end, int64_t* lo, int64_t* hi) {
#ifdef _OPENMP
    const int64_t nthreads = omp_get_num_threads(), tid = omp_get_thread_num();
#else
    const int64_t nthreads = 1, tid = 0;
#endif
    const int64_t n = end > begin ? end - begin : 0;
    int64_t q = n / nthreads, t = n % nthreads;
    if (tid < t) {
        t = 0;
        ++q;
    }
    *lo = begin + q * tid + t;
    *hi = *lo + q;
}

// A double argument of a packed entry (see emit_launch._packed_entry): its slot holds the
// double's bits.
static inline double slot_double(int64_t bits) {
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

static inline int thread_id() {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

// ---- faults: the first one is recorded, later ones are ignored
static int fault_set = 0;
static char fault_text[1024];
static int fault_kind = 0;  // 1: index, 2: zero division, 5 and 6: float to int
// Set while a launch runs its checked build first, to be run again in the debug build
// if a check fails (Dispatch.check_first): the failure is only recorded, never held for
// a debugger nor stopped at in pk_fault_hook.
static int quiet_faults = 0;

}  // namespace pk_rt

extern "C" {
// Debuggers break here to stop in the faulting thread (pkdb does).
__attribute__((noinline, visibility("default"))) void pk_fault_hook(const char* message) {
    __asm__ volatile("" : : "r"(message) : "memory");
}
__attribute__((visibility("default"))) const char* pk_fault_message() {
    return pk_rt::fault_set ? pk_rt::fault_text : nullptr;
}
__attribute__((visibility("default"))) int pk_fault_kind() { return pk_rt::fault_kind; }
__attribute__((visibility("default"))) void pk_quiet_faults(int on) { pk_rt::quiet_faults = on; }
__attribute__((visibility("default"))) void pk_fault_clear() {
    pk_rt::fault_set = 0;
    pk_rt::fault_kind = 0;
}
// Put back a record pk_fault_message/kind read (a debugger launching this library while
// one of its launches is held restores that launch's record afterwards).
__attribute__((visibility("default"))) void pk_fault_restore(int kind, const char* text) {
    if (text == nullptr) {
        pk_fault_clear();
        return;
    }
    std::snprintf(pk_rt::fault_text, sizeof pk_rt::fault_text, "%s", text);
    pk_rt::fault_kind = kind;
    pk_rt::fault_set = 1;
}
}

namespace pk_rt {

#if PK_CHECKS && !PK_DEBUG
// A checked release build runs with no debugger attached under pkdb, whose crash-parking
// library (loaded RTLD_GLOBAL) exports pk_crash_check_failed: it holds this thread until
// the debugger is attached, which then stops it in pk_fault_hook, at the failed check.
// Elsewhere the symbol is missing and the failed check is only recorded.
static void wait_for_debugger() {
    void* hold = dlsym(RTLD_DEFAULT, "pk_crash_check_failed");
    if (hold != nullptr) ((void (*)())hold)();
}
#endif

__attribute__((noinline)) static void fault(int kind, const char* file, int line,
                                            const char* what) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&fault_set, &expected, 1, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        fault_kind = kind;
        // The OpenMP thread number (a debugger numbers the threads its own way).
        std::snprintf(fault_text, sizeof fault_text, "%s:%d: %s (OpenMP thread %d)", file, line,
                      what, thread_id());
        if (quiet_faults) return;
#if PK_CHECKS && !PK_DEBUG
        wait_for_debugger();
#endif
        pk_fault_hook(fault_text);
    }
}

template <typename T>
static inline T& fault_slot() {
    static thread_local T slot;
    return slot;
}

// std::remove_reference without <type_traits> (see the module docstring: light headers).
template <typename T>
struct NoRef {
    using type = T;
};
template <typename T>
struct NoRef<T&> {
    using type = T;
};

// Either kind of view (View, RView): a checked release build checks restrict-qualified
// accesses too.
// A failed index check, out of line and cold: the checked loops keep a compare and a
// branch per index, not the message's formatting.
__attribute__((cold, noinline)) static void index_fault(int64_t i, int axis, const char* name,
                                                        int64_t extent, const char* file,
                                                        int line) {
    char what[256];
    std::snprintf(what, sizeof what,
                  "index %lld is out of range for axis %d of view '%s' with extent %lld",
                  (long long)i, axis, name, (long long)extent);
    fault(1, file, line, what);
}

template <typename V>
static inline auto at_checked(const V& v, const int64_t* idx, const char* name,
                              const char* file, int line) -> decltype(*v.data) {
    using T = typename NoRef<decltype(*v.data)>::type;
    constexpr int R = V::rank;
    constexpr int U = UnitAxis<V::layout, R>::value;
    int64_t offset = 0;
    for (int k = 0; k < R; ++k) {
        // One unsigned compare: a negative index is a huge one.
        if (__builtin_expect((uint64_t)idx[k] >= (uint64_t)v.extent[k], 0)) {
            index_fault(idx[k], k, name, v.extent[k], file, line);
            return fault_slot<T>();
        }
        offset += idx[k] * (k == U ? 1 : v.stride[k]);
    }
    return v.data[offset];
}

// An index into a subview (whose elements are its view's): checked against the subview's
// own extent in debug builds, where the view's check would miss an index past the
// subview but inside the view.
static inline int64_t subview_index(int64_t i, int64_t extent, const char* name, int axis,
                                    const char* file, int line) {
#if PK_CHECKS
    if (__builtin_expect((uint64_t)i >= (uint64_t)extent, 0)) {
        index_fault(i, axis, name, extent, file, line);
        return 0;
    }
#else
    (void)extent; (void)name; (void)axis; (void)file; (void)line;
#endif
    return i;
}

template <int R, int L>
PK_ACCESS int64_t offset_of(const int64_t* stride, const int64_t* idx) {
    constexpr int U = UnitAxis<L, R>::value;
    int64_t offset = 0;
    for (int k = 0; k < R; ++k) offset += idx[k] * (k == U ? 1 : stride[k]);
    return offset;
}

// v[i, j]: either kind of view (View, RView: V), as at_checked takes them. The element
// is read through v.data, so an RView's stays restrict-qualified.
template <typename V, typename... I>
PK_ACCESS auto at(const V& v, const char* name, const char* file, int line, I... indices)
    -> decltype(*v.data) {
    const int64_t idx[V::rank] = {(int64_t)indices...};
#if PK_CHECKS
    return at_checked(v, idx, name, file, line);
#else
    (void)name; (void)file; (void)line;
    return v.data[offset_of<V::rank, V::layout>(v.stride, idx)];
#endif
}

// v[i - 1, j, k + 1]: the indices without their constant shifts, and the shifts. Release
// builds add the shifts' offset to the unshifted indices' one, so the neighbours of one
// point share that point's offset (g++ does not rewrite (i - 1) * s0 + j * s1 + k as
// i * s0 + j * s1 + k - s0 itself: a stencil's seven accesses cost seven offsets).
template <typename V, typename... I>
PK_ACCESS auto at_shifted(const V& v, const char* name, const char* file, int line,
                          const int64_t (&shift)[V::rank], I... indices) -> decltype(*v.data) {
    constexpr int R = V::rank;
    int64_t idx[R] = {(int64_t)indices...};
#if PK_CHECKS
    for (int k = 0; k < R; ++k) idx[k] += shift[k];
    return at_checked(v, idx, name, file, line);
#else
    (void)name; (void)file; (void)line;
    constexpr int L = V::layout;
    return v.data[offset_of<R, L>(v.stride, idx) + offset_of<R, L>(v.stride, shift)];
#endif
}

#define PK_FN PK_ACCESS
#include "pkernels/shared/search.hpp"
#undef PK_FN

// ---- Python arithmetic on integers: a zero divisor is an error in debug builds (release
// builds go on with NumPy's 0); false for a zero divisor
template <typename T>
static inline bool check_divisor(T b, const char* file, int line) {
#if PK_CHECKS
    if (b == 0) fault(2, file, line, "integer division or modulo by zero");
#else
    (void)file; (void)line;
#endif
    return b != 0;
}

// ---- an integer ** a negative integer is a float in Python, and the kernel's result an
// integer: an error in debug builds (release builds: ipow gives 1)
template <typename T>
static inline T check_exponent(T e, const char* file, int line) {
#if PK_CHECKS
    if (e < 0) {
        char what[200];
        std::snprintf(what, sizeof what,
                      "an integer ** %lld: Python gives a float, this kernel's integer "
                      "result cannot hold it (write float(base) ** exponent)",
                      (long long)e);
        fault(5, file, line, what);
    }
#else
    (void)file; (void)line;
#endif
    return e;
}

// ---- int(x), round(x), math.floor(x) of a float: a NaN, an infinity or a value past the
// integer type is an error in debug builds (Python raises, or makes a bigger integer; the
// C++ conversion gives any number)
__attribute__((cold, noinline)) static void float_to_int_fault(double x, int bits,
                                                               bool is_signed,
                                                               const char* file, int line) {
    if (x != x) {
        fault(5, file, line, "cannot convert float NaN to integer");
        return;
    }
    char what[160];
    std::snprintf(what, sizeof what, "cannot convert %.17g to a %d-bit %s integer", x, bits,
                  is_signed ? "signed" : "unsigned");
    fault(6, file, line, what);
}

template <typename T, typename F>
static inline T float_to_int(F x, const char* file, int line) {
#if PK_CHECKS
    const bool is_signed = (T)-1 < (T)0;
    const int bits = 8 * (int)sizeof(T);
    const F end = std::ldexp((F)1, is_signed ? bits - 1 : bits);  // the first value past T
    const F whole = std::trunc(x);
    // NaN fails the test too; the message is made out of line (see index_fault).
    if (__builtin_expect(!(whole >= (is_signed ? -end : (F)0) && whole < end), 0))
        float_to_int_fault((double)x, bits, is_signed, file, line);
#else
    (void)file; (void)line;
#endif
    return (T)x;
}

#define PK_FN static inline
#define PK_MATH std
#include "pkernels/shared/arithmetic.hpp"
#undef PK_FN
#define PK_FN inline
#include "pkernels/shared/complex.hpp"
#undef PK_FN
// abs(z): NumPy's, the C library's hypot of the parts (in their own type).
template <typename T>
static inline T cabs(complex<T> z) { return std::hypot(z.re, z.im); }
// pk.exp(z), pk.sqrt(z), ... of a complex: the C library's cexp, csqrt, ... (cexpf ... for
// a complex64), which NumPy's np.exp ... of a complex call: NumPy's results, bit for bit;
// log10 and log2 are clog times the constant, as NumPy computes them. The argument
// reaches the library through an empty asm, so g++ cannot fold a call on constants with
// its own (correctly rounded) arithmetic, which may differ from the library's.
#define PK_COMPLEX_FUNCTION(name, c_double, c_float, scale)                         \
    static inline complex<double> complex_##name(complex<double> z) {              \
        __complex__ double a;                                                      \
        __real__ a = z.re;                                                         \
        __imag__ a = z.im;                                                         \
        __asm__("" : "+m"(a));                                                     \
        const __complex__ double r = c_double(a);                                  \
        return scale ? complex<double>(__real__ r * scale, __imag__ r * scale)     \
                     : complex<double>(__real__ r, __imag__ r);                    \
    }                                                                              \
    static inline complex<float> complex_##name(complex<float> z) {                \
        __complex__ float a;                                                       \
        __real__ a = z.re;                                                         \
        __imag__ a = z.im;                                                         \
        __asm__("" : "+m"(a));                                                     \
        const __complex__ float r = c_float(a);                                    \
        return scale ? complex<float>(__real__ r * (float)scale, __imag__ r * (float)scale) \
                     : complex<float>(__real__ r, __imag__ r);                     \
    }
PK_COMPLEX_FUNCTION(sqrt, __builtin_csqrt, __builtin_csqrtf, 0)
PK_COMPLEX_FUNCTION(exp, __builtin_cexp, __builtin_cexpf, 0)
PK_COMPLEX_FUNCTION(log, __builtin_clog, __builtin_clogf, 0)
PK_COMPLEX_FUNCTION(log10, __builtin_clog, __builtin_clogf, 0.434294481903251827651128918916605082)
PK_COMPLEX_FUNCTION(log2, __builtin_clog, __builtin_clogf, 1.442695040888963407359924681001892137)
PK_COMPLEX_FUNCTION(sin, __builtin_csin, __builtin_csinf, 0)
PK_COMPLEX_FUNCTION(cos, __builtin_ccos, __builtin_ccosf, 0)
PK_COMPLEX_FUNCTION(tan, __builtin_ctan, __builtin_ctanf, 0)
PK_COMPLEX_FUNCTION(sinh, __builtin_csinh, __builtin_csinhf, 0)
PK_COMPLEX_FUNCTION(cosh, __builtin_ccosh, __builtin_ccoshf, 0)
PK_COMPLEX_FUNCTION(tanh, __builtin_ctanh, __builtin_ctanhf, 0)
PK_COMPLEX_FUNCTION(asin, __builtin_casin, __builtin_casinf, 0)
PK_COMPLEX_FUNCTION(acos, __builtin_cacos, __builtin_cacosf, 0)
PK_COMPLEX_FUNCTION(atan, __builtin_catan, __builtin_catanf, 0)
PK_COMPLEX_FUNCTION(asinh, __builtin_casinh, __builtin_casinhf, 0)
PK_COMPLEX_FUNCTION(acosh, __builtin_cacosh, __builtin_cacoshf, 0)
PK_COMPLEX_FUNCTION(atanh, __builtin_catanh, __builtin_catanhf, 0)
#undef PK_COMPLEX_FUNCTION
#undef PK_MATH
// ---- Python's float ** (and math.pow): CPython calls the C library's pow, so does this.
// g++ folds pow(x, 2.0) into x * x, which differs from pow's result in the last bit for
// about 0.08% of x (glibc's pow is not always correctly rounded): the exponent reaches pow
// through an empty asm, which g++ cannot see through.
template <typename T>
static inline T pow_py(T x, T y) {
    __asm__("" : "+m"(y));
    return std::pow(x, y);
}

// ---- atomics (GCC builtins: no <atomic>, works on float and double)
// *p = Op::apply(*p, v) atomically (Op: one of the Atomic* structs below); the old value,
// or the new one when New. The kernel calls it where Python calls pk.atomic_*, with no
// lambda at the Python line: gdb then finds one breakpoint location on the line, and
// no frame of generated code (the operations' lines are this file's).
template <typename Op, bool New, typename T>
static inline T atomic_apply(T* p, T v, const char* file, int line) {
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    T desired = Op::apply(old, v, file, line);
    while (!__atomic_compare_exchange(p, &old, &desired, false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED)) {
        desired = Op::apply(old, v, file, line);
    }
    return New ? desired : old;
}

template <typename T>
static inline T atomic_load(T* p) {
    T value;
    __atomic_load(p, &value, __ATOMIC_ACQUIRE);
    return value;
}

// One struct per atomic update (pk.atomic_add ...): `static T apply(T old, T value,
// file, line)`, for atomic_apply. The updates are those emit_cpp writes inline
// (pkernels.translate.cpp_prelude.atomic_update; a test checks they agree).
#define PK_ATOMIC_OPERATION(Name, update)                                    \
    struct Name {                                                          \
        template <typename T>                                              \
        static inline T apply(T a, T b, const char* file, int line) {      \
            (void)file; (void)line;                                        \
            return (T)(update);                                            \
        }                                                                  \
    };
PK_ATOMIC_OPERATION(AtomicAdd, a + b)
PK_ATOMIC_OPERATION(AtomicSub, a - b)
PK_ATOMIC_OPERATION(AtomicMul, a * b)
PK_ATOMIC_OPERATION(AtomicDiv, a / b)
PK_ATOMIC_OPERATION(AtomicMax, (a < b ? b : a))
PK_ATOMIC_OPERATION(AtomicMin, (b < a ? b : a))
PK_ATOMIC_OPERATION(AtomicAnd, a & b)
PK_ATOMIC_OPERATION(AtomicOr, a | b)
PK_ATOMIC_OPERATION(AtomicXor, a ^ b)
PK_ATOMIC_OPERATION(AtomicMod, pk_rt::mod(a, b, file, line))
PK_ATOMIC_OPERATION(AtomicLshift, pk_rt::lshift(a, b))
PK_ATOMIC_OPERATION(AtomicRshift, pk_rt::rshift(a, b))
PK_ATOMIC_OPERATION(AtomicTruncDiv, pk_rt::truncdiv(a, b, file, line))
#undef PK_ATOMIC_OPERATION


template <typename T>
static inline T atomic_exchange(T* p, T v) {
    T old;
    __atomic_exchange(p, &v, &old, __ATOMIC_ACQ_REL);
    return old;
}

template <typename T>
static inline T atomic_cas(T* p, T expected, T desired) {
    __atomic_compare_exchange(p, &expected, &desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return expected;  // the old value, whether or not the exchange happened
}

// ---- print(): Python's formatting, one write per call so threads do not interleave
#define PK_FN static inline
#define PK_NOINLINE __attribute__((noinline))
#define PK_MATH std
#include "pkernels/shared/decimal.hpp"
#undef PK_FN
#undef PK_NOINLINE
#undef PK_MATH

struct Printer {
    char buf[4096];
    int len = 0;
    int mark_at = 0;  // where the value finish() pads starts

    Printer& raw(const char* s) {
        int n = (int)std::strlen(s);
        if (len + n >= (int)sizeof buf) n = (int)sizeof buf - 1 - len;
        std::memcpy(buf + len, s, n);
        len += n;
        buf[len] = 0;
        return *this;
    }
    // Each returns the Printer: a print is one chain of calls on a temporary, with no
    // local variable, so its line has no lexical block of its own (gdb would put a
    // second breakpoint location in the block, and stop twice at the line).
    Printer& value(bool v) { return raw(v ? "True" : "False"); }
    Printer& value(long long v) {
        char s[32];
        std::snprintf(s, sizeof s, "%lld", v);
        return raw(s);
    }
    Printer& value(unsigned long long v) {
        char s[32];
        std::snprintf(s, sizeof s, "%llu", v);
        return raw(s);
    }
    Printer& value(int8_t v) { return value((long long)v); }
    Printer& value(int16_t v) { return value((long long)v); }
    Printer& value(int32_t v) { return value((long long)v); }
    Printer& value(long v) { return value((long long)v); }
    Printer& value(uint8_t v) { return value((unsigned long long)v); }
    Printer& value(uint16_t v) { return value((unsigned long long)v); }
    Printer& value(uint32_t v) { return value((unsigned long long)v); }
    Printer& value(unsigned long v) { return value((unsigned long long)v); }
    Printer& value(double v) { floating(v, false); return *this; }
    Printer& value(float v) { floating((double)v, true); return *this; }

    static bool round_trips(const char* text, double v, bool single) {
        return single ? std::strtof(text, nullptr) == (float)v : std::strtod(text, nullptr) == v;
    }

    // `sci` ("-d.ddde+XX", `precision` digits) moved by `delta` units in its last digit,
    // written to `out` in the same form; false when that leaves the digit count.
    static bool neighbour(const char* sci, int precision, int delta, char* out, int size) {
        const char* p = sci;
        bool negative = *p == '-';
        if (negative) ++p;
        unsigned long long m = 0, low = 1;
        for (; *p && *p != 'e'; ++p)
            if (*p >= '0' && *p <= '9') m = m * 10 + (unsigned long long)(*p - '0');
        int exponent = std::atoi(p + 1);
        for (int k = 1; k < precision; ++k) low *= 10;
        m += delta;
        if (m >= low * 10) { m = low; ++exponent; }  // 9.99 + 1 unit -> 1.00e+1
        if (m < low) {  // 1.00 - 1 unit -> 9.99e-1
            if (precision == 1 || m == 0) return false;
            m = low * 10 - 1;
            --exponent;
        }
        char digits[24];
        std::snprintf(digits, sizeof digits, "%llu", m);
        std::snprintf(out, size, "%s%c%s%se%+03d", negative ? "-" : "", digits[0],
                      precision > 1 ? "." : "", digits + 1, exponent);
        return true;
    }

    // Python's repr(): the shortest digits that round-trip (the nearest such string when
    // several do), fixed notation for exponents in [-4, 16), scientific otherwise; a
    // float32 as NumPy's str() writes it: fixed for 1e-4 <= |v| < 1e6 only.
    void floating(double v, bool single) {
        if (std::isnan(v)) { raw("nan"); return; }
        if (std::isinf(v)) { raw(v > 0 ? "inf" : "-inf"); return; }
        char sci[40];
        for (int precision = 1; precision <= 17; ++precision) {
            std::snprintf(sci, sizeof sci, "%.*e", precision - 1, v);
            if (round_trips(sci, v, single)) break;
            // Next to a power of two the values that read back as v lie unevenly around
            // it, so the nearest string may miss while its neighbour on the wide side does
            // not (2**-24 is 5.960464477539063e-08, though ...0625 rounds to ...062).
            char other[40];
            bool found = false;
            for (int delta = -1; delta <= 1 && !found; delta += 2) {
                if (neighbour(sci, precision, delta, other, sizeof other) &&
                    round_trips(other, v, single)) {
                    std::memcpy(sci, other, sizeof sci);
                    found = true;
                }
            }
            if (found) break;
        }
        char digits[24];
        int nd = 0;
        const char* p = sci;
        bool negative = false;
        if (*p == '-') { negative = true; ++p; }
        for (; *p && *p != 'e'; ++p)
            if (*p >= '0' && *p <= '9') digits[nd++] = *p;
        int exponent = std::atoi(p + 1);
        while (nd > 1 && digits[nd - 1] == '0') --nd;
        digits[nd] = 0;
        char out[64];
        int o = 0;
        if (negative) out[o++] = '-';
        const double magnitude = std::fabs(v);
        const bool fixed = single ? magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e6)
                                  : exponent >= -4 && exponent < 16;
        if (fixed) {
            if (exponent < 0) {
                out[o++] = '0'; out[o++] = '.';
                for (int k = 0; k < -exponent - 1; ++k) out[o++] = '0';
                for (int k = 0; k < nd; ++k) out[o++] = digits[k];
            } else {
                for (int k = 0; k <= exponent; ++k) out[o++] = k < nd ? digits[k] : '0';
                out[o++] = '.';
                if (nd > exponent + 1) {
                    for (int k = exponent + 1; k < nd; ++k) out[o++] = digits[k];
                } else {
                    out[o++] = '0';
                }
            }
            out[o] = 0;
        } else {
            out[o++] = digits[0];
            if (nd > 1) {
                out[o++] = '.';
                for (int k = 1; k < nd; ++k) out[o++] = digits[k];
            }
            std::snprintf(out + o, sizeof out - o, "e%c%02d", exponent < 0 ? '-' : '+',
                          exponent < 0 ? -exponent : exponent);
        }
        raw(out);
    }
    void flush() {
        std::fputs(buf, stdout);
        std::fflush(stdout);
    }
#define PK_METHOD
#define PK_NOINLINE __attribute__((noinline))
#define PK_MATH std
#include "pkernels/shared/printer_methods.hpp"
#undef PK_METHOD
#undef PK_NOINLINE
#undef PK_MATH
};

}  // namespace pk_rt
#endif  // PKERNELS_CPU_HPP
