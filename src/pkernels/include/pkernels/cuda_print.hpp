// print() on the GPU: Python's formatting into a per-thread buffer, written with one
// printf per call so the lines of different threads do not interleave. Included after
// cuda.hpp by kernels that print.
#ifndef PKERNELS_CUDA_PRINT_HPP
#define PKERNELS_CUDA_PRINT_HPP
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

#define PK_FN __device__ inline
#define PK_NOINLINE __noinline__
#define PK_MATH pk_math
#include "pkernels/shared/decimal.hpp"
#undef PK_FN
#undef PK_NOINLINE
#undef PK_MATH

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
    // Not inlined: one copy serves every float a kernel prints (inlined at each printed
    // value, NVRTC took ~5 s more per value: 27 s for one print of five complex numbers).
    __device__ __noinline__ void floating(double v, bool single) {
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
#define PK_METHOD __device__
#define PK_NOINLINE __noinline__
#define PK_MATH pk_math
#include "pkernels/shared/printer_methods.hpp"
#undef PK_METHOD
#undef PK_NOINLINE
#undef PK_MATH
};

}  // namespace pk_rt
#endif  // PKERNELS_CUDA_PRINT_HPP
