// The CUDA C++ runtime every GPU kernel pkernels generates starts with
// (`#include "pkernels/cuda.hpp"`; NVRTC and nvcc find it through -I<pkernels>/include).
//
// Compiled by NVRTC, which has no standard headers: the integer types are declared here
// (`long` for 64 bits, as glibc declares them, so the same text also compiles under nvcc,
// whose host headers declare them too), math goes through the overloads of pk_math
// (sqrt(float) calls sqrtf), and nothing uses std::. The Python arithmetic helpers are
// shared with cpu.hpp (shared/), so a kernel computes the same values on the GPU as on
// the CPU (release builds: an integer division by zero gives NumPy's 0 instead of
// faulting, as there). cuda_print.hpp (kernels that print) and cuda_team.hpp (TeamPolicy
// kernels) follow it where a module needs them.
#ifndef PKERNELS_CUDA_HPP
#define PKERNELS_CUDA_HPP
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
// A range or box module's entry: 32-bit offsets from 64-bit bounds (pk_cuda_entry_i32),
// or, in debug builds and in the build the host makes for a launch too large for
// 32-bit offsets (PK_WIDE), 64-bit ones (pk_cuda_entry). One of them per compile.
#ifndef PK_WIDE
#define PK_WIDE 0
#endif
// The workunit body and its views, by value. Release builds inline the body; debug
// builds keep it a function of its own, the frame cuda-gdb shows at the Python lines.
#define PK_KERNEL_TEMPLATE
#if PK_DEBUG
#define PK_KERNEL __device__ __noinline__
#else
#define PK_KERNEL __device__ __forceinline__
#endif
#define PK_VIEW_ARG(T, R, L) const pk_rt::View<T, R, L>
#include "pkernels/cuda_step.hpp"  // next/step at a Python line (debug builds)

namespace pk_math {
// sqrt(float) calls sqrtf ...: a double and a float overload of each C math function.
#define PK_UNARY(name)                                                           \
    __device__ __forceinline__ double name(double x) { return ::name(x); }       \
    __device__ __forceinline__ float name(float x) { return ::name##f(x); }
#define PK_BINARY(name)                                                          \
    __device__ __forceinline__ double name(double a, double b) { return ::name(a, b); } \
    __device__ __forceinline__ float name(float a, float b) { return ::name##f(a, b); }
PK_UNARY(sqrt)
PK_UNARY(exp)
PK_UNARY(exp2)
PK_UNARY(expm1)
PK_UNARY(log)
PK_UNARY(log2)
PK_UNARY(log10)
PK_UNARY(log1p)
PK_UNARY(sin)
PK_UNARY(cos)
PK_UNARY(tan)
PK_UNARY(asin)
PK_UNARY(acos)
PK_UNARY(atan)
PK_UNARY(sinh)
PK_UNARY(cosh)
PK_UNARY(tanh)
PK_UNARY(asinh)
PK_UNARY(acosh)
PK_UNARY(atanh)
PK_UNARY(fabs)
PK_UNARY(cbrt)
PK_UNARY(erf)
PK_UNARY(erfc)
PK_UNARY(tgamma)
PK_UNARY(lgamma)
PK_UNARY(floor)
PK_UNARY(ceil)
PK_UNARY(trunc)
PK_UNARY(nearbyint)
PK_BINARY(pow)
PK_BINARY(atan2)
PK_BINARY(fmod)
PK_BINARY(fmin)
PK_BINARY(fmax)
PK_BINARY(hypot)
PK_BINARY(copysign)
PK_BINARY(remainder)
#undef PK_UNARY
#undef PK_BINARY
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

#include "pkernels/shared/view_layout.hpp"

// A strided view of device memory (a CuPy array). L: its layout (view_layout.hpp), which
// axis, if any, has stride 1.
template <typename T, int R, int L>
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

// Not inlined (put, put_int): NVVM unrolls each call's copy loop over its constant
// string, which made a team kernel (the barrier-mismatch message: a dozen calls) take
// 4.7 s to compile instead of 0.3 s. They only run when a message is written.
struct Text {
    char* buf;
    int len, cap;
    __device__ __noinline__ void put(const char* s) {
        while (*s && len < cap - 1) buf[len++] = *s++;
        buf[len] = 0;
    }
    __device__ __noinline__ void put_int(long long v) {
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
#if !PK_CHECKS
// Release builds, whose only faults are a team kernel's: a word of pinned host memory the
// host gives the module once, which fault() raises. The host reads it where it is after
// a launch and copies the record only when it is set (clearing the record before and
// copying it after every launch cost a team launch some 15 us).
__device__ volatile int* pk_fault_host_flag;
#endif

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
    if (gridDim.y * gridDim.z * blockDim.y * blockDim.z == 1) {  // a 1-D launch: x alone
        t.put(" (block "); t.put_int(blockIdx.x); t.put(", thread "); t.put_int(threadIdx.x);
    } else {  // an MDRange box: (x,y,z), as cuda-gdb and pkdb's `cuda block B thread T`
        t.put(" (block ("); t.put_int(blockIdx.x); t.put(","); t.put_int(blockIdx.y);
        t.put(","); t.put_int(blockIdx.z); t.put("), thread ("); t.put_int(threadIdx.x);
        t.put(","); t.put_int(threadIdx.y); t.put(","); t.put_int(threadIdx.z); t.put(")");
    }
    t.put(")");
    __threadfence();
#if !PK_CHECKS
    if (pk_fault_host_flag != nullptr) {
        *pk_fault_host_flag = 1;
        __threadfence_system();
    }
#endif
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

template <typename T, int R, int L, typename... I>
__device__ __forceinline__ T& at(const View<T, R, L>& v, const char* name, const char* file,
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
    constexpr int U = UnitAxis<L, R>::value;
    int64_t offset = 0;
#pragma unroll
    for (int k = 0; k < R; ++k) offset += idx[k] * (k == U ? 1 : v.stride[k]);
    return v.data[offset];
}

#define PK_FN __device__ __forceinline__
#include "pkernels/shared/search.hpp"
#undef PK_FN


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

#define PK_FN __device__ __forceinline__
#define PK_MATH pk_math
#include "pkernels/shared/arithmetic.hpp"
#undef PK_FN
#define PK_FN __host__ __device__ __forceinline__
#include "pkernels/shared/complex.hpp"
#undef PK_FN
// pk.exp(z), pk.sqrt(z), ... of a complex: written with CUDA's real functions (not
// forced inline: a kernel calling several keeps one copy of each).
#define PK_FN __device__ inline
#include "pkernels/complex_math.hpp"
#undef PK_FN
// abs(z): NumPy's, the C library's hypot of the parts (in their own type). CUDA's hypot
// is within 2 ulps, not correctly rounded: near the largest finite value that overflows
// (hypot(1.8e14, DBL_MAX) is inf there, DBL_MAX in C: found on the H200). Where one part
// is below 2^-27 (float: 2^-13) of the other, the exact result rounds to the larger part:
// that is returned; parts above 2^1000 are scaled by a power of two (exact both ways).
template <typename T>
__device__ __forceinline__ T cabs(complex<T> z) {
    const T re = fabs(z.re), im = fabs(z.im);
    if (!(re != re || im != im)) {  // no NaN part (fmax/fmin would pass it over)
        const T big = fmax(re, im), small = fmin(re, im);
        const T tiny = sizeof(T) == 8 ? T(0x1p-27) : T(0x1p-13f);
        if (small <= big * tiny)
            return big;  // inf included: hypot(inf, y) is inf
        const T huge = sizeof(T) == 8 ? T(0x1p1000) : T(0x1p120f);
        const T down = sizeof(T) == 8 ? T(0x1p-600) : T(0x1p-60f);
        if (big > huge)
            return pk_math::hypot(z.re * down, z.im * down) / down;
    }
    return pk_math::hypot(z.re, z.im);
}
#undef PK_MATH

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

// An atomic read (pk.atomic_load): a volatile load, never torn for the naturally aligned
// element types views hold, then a fence, for acquire order as the CPU's __ATOMIC_ACQUIRE.
template <typename T>
__device__ __forceinline__ T atomic_load(T* p) {
    const T value = *(volatile T*)p;
    __threadfence();
    return value;
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

// ---- parallel_reduce of a range or MDRange box, in one pass. Each thread combines its
// indices into a partial (in the order it runs them); the block combines its threads'
// partials (warp shuffles for 4- and 8-byte numbers, shared memory for complex numbers
// and reducer structs), thread 0 stores the block's partial, and the last block to
// arrive (an atomic ticket, after a fence) combines the blocks' partials, in a fixed
// tree over block order, into *result. The shapes of both trees depend only on the
// launch's geometry: the same total every run for a given range and GPU. The ticket
// goes back to 0 in that last block (atomicInc wraps), so no launch clears it.

// Most threads a range or box block has (the entry's __launch_bounds__).
#define PK_RANGE_BLOCK 256

// The types that cross lanes through a warp shuffle (their bits).
template <typename T> struct Shuffles { static constexpr bool value = false; };
template <> struct Shuffles<int32_t> { static constexpr bool value = true; };
template <> struct Shuffles<uint32_t> { static constexpr bool value = true; };
template <> struct Shuffles<int64_t> { static constexpr bool value = true; };
template <> struct Shuffles<uint64_t> { static constexpr bool value = true; };
template <> struct Shuffles<float> { static constexpr bool value = true; };
template <> struct Shuffles<double> { static constexpr bool value = true; };

template <typename T>
__device__ __forceinline__ T shuffle_down(unsigned mask, T v, int offset) {
    typedef typename UInt<sizeof(T)>::type U;
    return bit_cast<T>((U)__shfl_down_sync(mask, bit_cast<U>(v), offset));
}

// The combination of the values of lanes 0..lanes-1 of a warp (1 to 32 lanes), in lane
// 0: a tree, lane l taking lane l + offset where that lane exists. Exactly those lanes
// call it (the shuffles' mask).
template <typename T, typename F>
__device__ __forceinline__ T warp_combine(T v, int lane, int lanes, F combine) {
    const unsigned mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
    for (int offset = 16; offset > 0; offset >>= 1) {
        const T other = shuffle_down(mask, v, offset);
        if (lane + offset < lanes) v = combine(v, other);
    }
    return v;
}

// A loop the warps of a block share (translate/lane_split.py): the block runs 32 indices,
// warp `lane` of `lanes` taking every lanes-th iteration of each one's loop. The sum of
// a value over the warps, for each of the 32 indices, in warp order, in warp 0 (the
// others get their own back). Every thread of the block calls it (it synchronises).
template <typename T>
__device__ __forceinline__ T split_sum(T v, int lane, int lanes) {
    __shared__ T partial[1024];
    __syncthreads();  // the last call's reads are done
    partial[threadIdx.x] = v;
    __syncthreads();
    if (lane == 0)
        for (int k = 1; k < lanes; ++k) v = (T)(v + partial[threadIdx.x + 32 * k]);
    return v;
}

// The block's linear thread number, x + y * X + z * X * Y: the hardware's warps are runs
// of 32 of these numbers.
__device__ __forceinline__ int block_thread() {
    return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

// The values of the block's threads 0..count-1 (block_thread() numbers) combined, in
// thread 0 only: warp trees then a tree over the warps' totals (4- and 8-byte numbers),
// else a tree in shared memory. Every thread of the block calls it (it synchronises).
template <typename T, typename F>
__device__ __forceinline__ T block_combine(T v, int count, F combine) {
    const int t = block_thread();
    if constexpr (Shuffles<T>::value) {
        __shared__ T warp_totals[PK_RANGE_BLOCK / 32];
        const int warp = t >> 5, lane = t & 31;
        const int left = count - (warp << 5);
        const int lanes = left < 32 ? left : 32;
        if (lane < lanes) {
            v = warp_combine(v, lane, lanes, combine);
            if (lane == 0) warp_totals[warp] = v;
        }
        __syncthreads();
        const int warps = (count + 31) >> 5;
        if (t < warps) v = warp_combine(warp_totals[t], t, warps, combine);
        __syncthreads();  // warp_totals is read before a next call writes it
        return v;
    } else {
        // Raw storage: a __shared__ array of a type with constructors is not allowed.
        __shared__ __align__(16) unsigned char bytes[PK_RANGE_BLOCK * sizeof(T)];
        T* slots = reinterpret_cast<T*>(bytes);
        if (t < count) slots[t] = v;
        __syncthreads();
        int half = 1;
        while (half < count) half <<= 1;
        for (half >>= 1; half > 0; half >>= 1) {
            if (t < half && t + half < count) slots[t] = combine(slots[t], slots[t + half]);
            __syncthreads();
        }
        v = slots[0];
        __syncthreads();  // slots is read before a next call writes it
        return v;
    }
}

// A block's partial as another block stored it: read at L2 (ld.global.cg), past this
// multiprocessor's L1, for the numbers (the struct and complex slots: plain loads, which
// the fences order the same way; no block of this SM read them before in the launch).
template <typename T>
__device__ __forceinline__ T load_partial(const T* p) {
    if constexpr (Shuffles<T>::value) {
        typedef typename UInt<sizeof(T)>::type U;
        return bit_cast<T>((U)__ldcg(reinterpret_cast<const U*>(p)));
    } else {
        return *p;
    }
}

// The end of a one-pass reduce (see above): every thread of every block calls it with its
// partial. partials: a slot per block; ticket: 0 before the launch, 0 after it.
// count: the block's threads that hold partials, the first ones (0: all of them, at
// most PK_RANGE_BLOCK; the shared loop's blocks: its first warp).
template <typename T, typename F>
__device__ void grid_reduce(T partial, T* partials, unsigned int* ticket, T* result,
                            F combine, int count = 0) {
    const unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
    const unsigned int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const int n = count ? count : (int)(blockDim.x * blockDim.y * blockDim.z);
    const int t = block_thread();
    __shared__ bool last;
    T total = block_combine(partial, n, combine);
    if (t == 0) {
        partials[block] = total;
        __threadfence();  // the partial is visible to every block before the ticket moves
        last = atomicInc(ticket, blocks - 1) == blocks - 1;  // the last one resets it to 0
    }
    __syncthreads();
    if (!last) return;
    __threadfence();  // the other blocks' partials, as their fences published them
    // Thread t combines blocks t, t + n, ... in order (the first one it has as its start),
    // then the block's tree: a fixed order for a given block count.
    if (t < (int)blocks && t < n) {
        total = load_partial(partials + t);
        for (unsigned int b = t + n; b < blocks; b += n)
            total = combine(total, load_partial(partials + b));
    }
    const int holders = (int)blocks < n ? (int)blocks : n;
    total = block_combine(total, holders, combine);
    if (t == 0) *result = total;
}

}  // namespace pk_rt
#endif  // PKERNELS_CUDA_HPP
