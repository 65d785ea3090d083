// Shared by cpu.hpp and cuda.hpp (one text: the same results bit for bit): the complex
// numbers of complex64/complex128 views (NumPy's layout: the real part, then the
// imaginary part) and their arithmetic as NumPy computes it on np.complex64/np.complex128
// scalars (numpy/_core/src/umath/scalarmath.c.src; its division is the ufunc loop's, in
// loops.c.src), which is what a kernel run as Python computes. Every operation is in
// the parts' own type (complex64 in float: NumPy's too), written out here: std::complex's
// operators call __muldc3/__divdc3 (C99 Annex G's inf/nan recovery, and a division
// CPython and NumPy do not use). The includer defines PK_FN (how the functions are
// declared; members take no `static`) and compiles with -ffp-contract=off,
// so no multiply and add here fuse (fma_guard.py keeps g++'s SLP vectoriser from fusing
// the product's two lanes).
template <typename T>
struct complex {
    T re, im;

    PK_FN complex() : re(0), im(0) {}
    PK_FN complex(T r, T i) : re(r), im(i) {}
    // A real number, imaginary part 0. Through a double, as NumPy converts a Python int
    // (what an int64 element is in a kernel run as Python): 2**60 + 2**36 + 1 becomes the
    // float 2**60, not 2**60 + 2**37 (exact for every float and every int of 53 bits).
    template <typename U>
    PK_FN complex(U r) : re((T)(double)r), im(0) {}
    // complex64 <-> complex128: each part converted.
    template <typename U>
    PK_FN complex(const complex<U>& z) : re((T)z.re), im((T)z.im) {}

    // fabs, in host and device code alike (-0.0 gives +0.0; NaN stays NaN, which only
    // compares false in operator/).
    PK_FN static T magnitude(T x) { return x < 0 ? -x : (x == 0 ? T(0) : x); }
};

// The operators are templates of namespace scope, not friends defined in the class: g++
// 12 compiled such friends with the command line's target options, not those of
// fma_guard's `#pragma GCC target` before the include, and fused the product's lanes
// there (vfmaddsub; seen with -march=native). The generated code converts both operands to one complex type
// first (CppEmitter.cast), as NumPy does, so no conversion is needed here.
template <typename T>
PK_FN complex<T> operator+(complex<T> a, complex<T> b) { return complex<T>(a.re + b.re, a.im + b.im); }
template <typename T>
PK_FN complex<T> operator-(complex<T> a, complex<T> b) { return complex<T>(a.re - b.re, a.im - b.im); }
template <typename T>
PK_FN complex<T> operator*(complex<T> a, complex<T> b) {
    return complex<T>(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
// NumPy's (Smith's) division: by the larger part of the divisor, then times the
// reciprocal `scl` of the scaled denominator (CPython's complex divides by it).
template <typename T>
PK_FN complex<T> operator/(complex<T> a, complex<T> b) {
    T br_abs = complex<T>::magnitude(b.re), bi_abs = complex<T>::magnitude(b.im);
    if (br_abs >= bi_abs) {
        if (br_abs == 0 && bi_abs == 0) {  // a complex inf or nan, as NumPy gives
            return complex<T>(a.re / br_abs, a.im / bi_abs);
        }
        T rat = b.im / b.re;
        T scl = T(1) / (b.re + b.im * rat);
        return complex<T>((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
    }
    T rat = b.re / b.im;
    T scl = T(1) / (b.im + b.re * rat);
    return complex<T>((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
}
// For the runtime's own sums of partial results (a scan's chunk totals, a team's
// threads' partials): the same `+` (the generated code writes `acc = acc + x`).
template <typename T>
PK_FN complex<T>& operator+=(complex<T>& a, complex<T> b) { return a = a + b; }
template <typename T>
PK_FN complex<T> operator-(complex<T> a) { return complex<T>(-a.re, -a.im); }
template <typename T>
PK_FN complex<T> operator+(complex<T> a) { return a; }
template <typename T>
PK_FN bool operator==(complex<T> a, complex<T> b) { return a.re == b.re && a.im == b.im; }
template <typename T>
PK_FN bool operator!=(complex<T> a, complex<T> b) { return a.re != b.re || a.im != b.im; }
// A truth test (`if z:`, `not z`), which the generated code writes `(z) != 0`.
template <typename T>
PK_FN bool operator!=(complex<T> a, int zero) { return a != complex<T>(zero); }

// NumPy's conjugate: the imaginary part negated (so +0.0 becomes -0.0).
template <typename T>
PK_FN complex<T> conj(complex<T> z) { return complex<T>(z.re, -z.im); }
