// pk.sqrt, pk.exp, pk.log, ... of a complex number on the GPU, where there is no C
// library's csqrt, cexp, ... to call (the CPU builds call those, as NumPy does: cpu.hpp).
// Written with the real functions CUDA has, in double: a complex64 is computed in double
// and rounded, so its parts are within an ulp or so. The complex128 results are within a
// few ulps of NumPy's, measured as |error| / |result| (tests/pkernels/test_complex_math.py
// compiles this file for the host and compares it with NumPy; the GPU tests run it there).
//
// The inverse functions use Kahan's formulas ("Branch cuts for complex elementary
// functions", 1987), which keep their accuracy near the branch points and put signed
// zeros on the right side of each cut; infinite and NaN parts give C99 Annex G's values,
// which NumPy's results follow. The includer defines PK_FN (how functions are declared)
// and has included shared/complex.hpp and defined inf_value<double>() and
// nan_value<double>(); everything here is in the includer's namespace.

namespace complex_math {

PK_FN double inf() { return inf_value<double>(); }
PK_FN double nan() { return nan_value<double>(); }
PK_FN bool is_nan(double x) { return x != x; }
PK_FN bool is_inf(double x) { return ::fabs(x) == inf(); }
PK_FN bool is_finite(double x) { return ::fabs(x) < inf(); }
PK_FN bool negative(double x) { return ::copysign(1.0, x) < 0; }  // -0.0 included
// -x, NaN's sign bit flipped too. NumPy's (glibc's) results take the sign of an infinite
// part from a NaN's sign where C99 leaves it open, through the rotations and reflections
// below. The GPU's float negation (PTX neg.f64, which any bit-flip the compiler sees
// becomes) may give back a NaN of either sign: flip the bit where the compiler cannot
// see it (pk.asin(inf + nan j) came out nan - inf j on an H100, NumPy's nan + inf j).
#ifdef __CUDA_ARCH__
PK_FN double neg(double x) {
    long long bits = __double_as_longlong(x);
    asm("xor.b64 %0, %0, 0x8000000000000000;" : "+l"(bits));
    return __longlong_as_double(bits);
}
#else
PK_FN double neg(double x) { return -x; }  // x86: a sign-bit xor, NaN or not
#endif

constexpr double kPi = 3.141592653589793238462643383279502884;
constexpr double kHalfPi = 1.570796326794896619231321691639751442;
constexpr double kQuarterPi = 0.785398163267948966192313216916397514;
// exp(x) overflows past this; cosh, sinh and exp of a complex are then computed as
// exp(x / 2) squared, which stays finite up to twice as far.
constexpr double kExpOverflow = 709.0;

using cd = complex<double>;

// f(i z) rotated back: -i * f(i z), how sin, tan, asin, atan come from sinh, tanh, ...
template <typename F>
PK_FN cd rotated(F f, double x, double y) {
    const cd w = f(neg(y), x);
    return cd(w.im, neg(w.re));
}

// ---- sqrt: Kahan's, scaled where the sum of the parts would overflow or lose bits.
PK_FN cd sqrt(double x, double y) {
    if (x == 0 && y == 0) return cd(0.0, y);
    if (is_inf(y)) return cd(inf(), y);
    if (is_nan(x)) return cd(x, x + y);
    if (is_inf(x)) {
        if (x > 0) return cd(x, is_nan(y) ? y : ::copysign(0.0, y));
        return cd(is_nan(y) ? y : 0.0, ::copysign(inf(), y));
    }
    if (is_nan(y)) return cd(y, y);
    double ax = ::fabs(x), ay = ::fabs(y), scale = 1.0;
    if (ax > 0x1p1020 || ay > 0x1p1020) {
        ax *= 0.25, ay *= 0.25, scale = 2.0;
    } else if (ax < 0x1p-1000 && ay < 0x1p-1000) {
        ax *= 0x1p600, ay *= 0x1p600, scale = 0x1p-300;
    }
    const double t = ::sqrt((ax + ::hypot(ax, ay)) * 0.5);
    if (x >= 0) return cd(t * scale, ::copysign(ay / (2 * t), y) * scale);
    return cd(ay / (2 * t) * scale, ::copysign(t, y) * scale);
}

// ---- exp, log
PK_FN cd exp(double x, double y) {
    if (y == 0) return cd(::exp(x), y);
    if (!is_finite(y)) {
        if (x == inf()) return cd(inf(), nan());
        if (x == -inf()) return cd(0.0, ::copysign(0.0, y));
        return cd(nan(), nan());
    }
    if (x > kExpOverflow) {
        const double h = ::exp(x * 0.5);
        return cd((h * ::cos(y)) * h, (h * ::sin(y)) * h);
    }
    const double e = ::exp(x);
    return cd(e * ::cos(y), e * ::sin(y));
}

PK_FN cd log(double x, double y) {
    const double ax = ::fabs(x), ay = ::fabs(y), angle = ::atan2(y, x);
    if (is_inf(ax) || is_inf(ay)) return cd(inf(), angle);
    if (is_nan(ax) || is_nan(ay)) return cd(nan(), nan());
    const double big = ax > ay ? ax : ay, small = ax > ay ? ay : ax;
    if (big == 0) return cd(-inf(), angle);
    // Near the unit circle log|z| is small: log1p of |z|^2 - 1, formed without cancelling.
    if (big >= 0.5 && big <= 2) return cd(0.5 * ::log1p((big - 1) * (big + 1) + small * small), angle);
    return cd(::log(::hypot(ax, ay)), angle);
}

// ---- sinh, cosh, tanh (and sin, cos, tan by rotation)
PK_FN cd sinh(double x, double y) {
    if (y == 0) return cd(::sinh(x), y);
    if (x == 0) return cd(is_finite(y) ? x * ::cos(y) : x, is_finite(y) ? ::sin(y) : nan());
    if (!is_finite(y)) return cd(is_inf(x) ? inf() : nan(), nan());
    if (::fabs(x) > kExpOverflow) {
        const double h = ::exp(::fabs(x) * 0.5);
        return cd(::copysign(1.0, x) * ((0.5 * h * ::cos(y)) * h), (0.5 * h * ::sin(y)) * h);
    }
    return cd(::sinh(x) * ::cos(y), ::cosh(x) * ::sin(y));
}

PK_FN cd cosh(double x, double y) {
    if (y == 0) return cd(::cosh(x), ::copysign(0.0, x) * y);
    if (x == 0) return cd(is_finite(y) ? ::cos(y) : nan(), is_finite(y) ? x * ::sin(y) : 0.0);
    if (!is_finite(y)) return cd(is_inf(x) ? inf() : nan(), nan());
    if (::fabs(x) > kExpOverflow) {
        const double h = ::exp(::fabs(x) * 0.5);
        return cd((0.5 * h * ::cos(y)) * h, ::copysign(1.0, x) * ((0.5 * h * ::sin(y)) * h));
    }
    return cd(::cosh(x) * ::cos(y), ::sinh(x) * ::sin(y));
}

// Kahan's tanh: exact in form where tan(y) is large, and 1 beyond |x| = 22.
PK_FN cd tanh(double x, double y) {
    if (is_nan(x)) return cd(x, y == 0 ? y : nan());
    if (is_inf(x)) return cd(::copysign(1.0, x), ::copysign(0.0, is_finite(y) ? ::sin(2 * y) : y));
    if (!is_finite(y)) return cd(x == 0 ? x : nan(), nan());
    if (::fabs(x) >= 22) return cd(::copysign(1.0, x), 4 * ::sin(y) * ::cos(y) * ::exp(-2 * ::fabs(x)));
    const double t = ::tan(y), beta = 1 + t * t, s = ::sinh(x), rho = ::sqrt(1 + s * s);
    const double den = 1 + beta * s * s;
    return cd(beta * rho * s / den, t / den);
}

// ---- asinh, acos, acosh, atanh (and asin, atan by rotation)
// Kahan's arcsin, from the square roots of 1 - z and 1 + z; finite parts only.
PK_FN cd kahan_asin(double x, double y) {
    const cd a = sqrt(1 - x, -y), b = sqrt(1 + x, y);
    return cd(::atan2(x, a.re * b.re - a.im * b.im), ::asinh(a.re * b.im - a.im * b.re));
}

PK_FN cd asinh(double x, double y) {
    if (negative(x)) {  // asinh is odd
        const cd w = asinh(neg(x), neg(y));
        return cd(neg(w.re), neg(w.im));
    }
    if (is_nan(x)) {
        if (y == 0) return cd(x, y);
        return cd(is_inf(y) ? inf() : x, nan());
    }
    if (is_inf(x)) return cd(x, is_nan(y) ? y : ::copysign(is_inf(y) ? kQuarterPi : 0.0, y));
    if (is_inf(y)) return cd(inf(), ::copysign(kHalfPi, y));
    if (is_nan(y)) return cd(nan(), nan());
    const cd w = kahan_asin(-y, x);  // asinh(z) = -i asin(i z)
    return cd(w.im, -w.re);
}

// acos's real part and acosh's imaginary part where z is infinite (no NaN part): the
// angle, from 0 to pi, of the direction z goes off in (C99 Annex G's table).
PK_FN double angle_at_infinity(double x, double y) {
    if (!is_inf(x)) return kHalfPi;
    if (is_inf(y)) return x > 0 ? kQuarterPi : 3 * kQuarterPi;
    return x > 0 ? 0.0 : kPi;
}

PK_FN cd acos(double x, double y) {
    if (is_nan(x) || is_nan(y)) {
        if (is_inf(x)) return cd(nan(), -inf());  // NumPy's sign of the infinite part
        if (is_inf(y)) return cd(nan(), -y);
        if (x == 0) return cd(kHalfPi, nan());
        return cd(nan(), nan());
    }
    if (is_inf(x) || is_inf(y)) return cd(angle_at_infinity(x, y), ::copysign(inf(), -y));
    const cd a = sqrt(1 - x, -y), b = sqrt(1 + x, y);
    return cd(2 * ::atan2(a.re, b.re), ::asinh(b.re * a.im - b.im * a.re));
}

PK_FN cd acosh(double x, double y) {
    if (is_nan(x) || is_nan(y)) {
        if (is_inf(x) || is_inf(y)) return cd(inf(), nan());
        if (x == 0) return cd(nan(), ::copysign(kHalfPi, y));
        return cd(nan(), nan());
    }
    if (is_inf(x) || is_inf(y)) return cd(inf(), ::copysign(angle_at_infinity(x, y), y));
    const cd a = sqrt(x - 1, y), b = sqrt(x + 1, y);
    return cd(::asinh(a.re * b.re + a.im * b.im), 2 * ::atan2(a.im, b.re));
}

// 1/4 log of |1 + z|^2 / |1 - z|^2 as log1p (odd: computed for x >= 0, so the quotient
// minus 1 is >= 0), and half the angle of (1 + z)(1 - conj z).
PK_FN cd atanh(double x, double y) {
    if (negative(x)) {
        const cd w = atanh(neg(x), neg(y));
        return cd(neg(w.re), neg(w.im));
    }
    if (is_nan(x)) return cd(is_inf(y) ? 0.0 : x, is_inf(y) ? ::copysign(kHalfPi, y) : nan());
    if (is_nan(y)) return cd(is_inf(x) || x == 0 ? ::copysign(0.0, x) : nan(), y);
    if (x > 0x1p500 || ::fabs(y) > 0x1p500) {  // the squares below would overflow
        const double h = ::hypot(x, y);
        return cd(is_inf(h) ? 0.0 : (x / h) / h, ::copysign(kHalfPi, y));
    }
    const double den = (1 - x) * (1 - x) + y * y;
    const double re = den == 0 ? inf() : 0.25 * ::log1p(4 * x / den);
    return cd(re, 0.5 * ::atan2(2 * y, (1 - x) * (1 + x) - y * y));
}

// C99 leaves these signs to the library: NumPy's (glibc's) are returned.
PK_FN cd sin(double x, double y) {
    if (!is_finite(x) && is_inf(y)) return cd(nan(), inf());
    return rotated(sinh, x, y);
}
PK_FN cd cos(double x, double y) {
    if (x == 0 && is_nan(y)) return cd(y, x);
    return cosh(neg(y), x);
}
PK_FN cd tan(double x, double y) { return rotated(tanh, x, y); }
PK_FN cd asin(double x, double y) { return rotated(asinh, x, y); }
PK_FN cd atan(double x, double y) { return rotated(atanh, x, y); }

}  // namespace complex_math

// The kernels' names (builtin_table.COMPLEX_MATH): complex128 in double; complex64
// computed in double and rounded. log10 and log2 are log times the constant, as NumPy
// computes them.
#define PK_COMPLEX_FUNCTION(name, impl, scale)                                          \
    PK_FN complex<double> complex_##name(complex<double> z) {                         \
        const complex<double> r = complex_math::impl(z.re, z.im);                     \
        return scale ? complex<double>(r.re * scale, r.im * scale) : r;               \
    }                                                                                 \
    PK_FN complex<float> complex_##name(complex<float> z) {                           \
        const complex<double> r = complex_math::impl((double)z.re, (double)z.im);     \
        return scale ? complex<float>((float)(r.re * scale), (float)(r.im * scale))   \
                     : complex<float>((float)r.re, (float)r.im);                      \
    }
PK_COMPLEX_FUNCTION(sqrt, sqrt, 0)
PK_COMPLEX_FUNCTION(exp, exp, 0)
PK_COMPLEX_FUNCTION(log, log, 0)
PK_COMPLEX_FUNCTION(log10, log, 0.434294481903251827651128918916605082)
PK_COMPLEX_FUNCTION(log2, log, 1.442695040888963407359924681001892137)
PK_COMPLEX_FUNCTION(sin, sin, 0)
PK_COMPLEX_FUNCTION(cos, cos, 0)
PK_COMPLEX_FUNCTION(tan, tan, 0)
PK_COMPLEX_FUNCTION(sinh, sinh, 0)
PK_COMPLEX_FUNCTION(cosh, cosh, 0)
PK_COMPLEX_FUNCTION(tanh, tanh, 0)
PK_COMPLEX_FUNCTION(asin, asin, 0)
PK_COMPLEX_FUNCTION(acos, acos, 0)
PK_COMPLEX_FUNCTION(atan, atan, 0)
PK_COMPLEX_FUNCTION(asinh, asinh, 0)
PK_COMPLEX_FUNCTION(acosh, acosh, 0)
PK_COMPLEX_FUNCTION(atanh, atanh, 0)
#undef PK_COMPLEX_FUNCTION
