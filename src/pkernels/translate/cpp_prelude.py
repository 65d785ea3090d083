"""The C++ runtime every generated kernel starts with (views, Python arithmetic, faults).

Kept free of heavy headers (no <vector>, <atomic>, <string>) so a cold compile stays
near the cost of g++ itself. Compiled with ``-DPK_DEBUG=1`` for debug builds, which
turns on bounds and division checks.

The workunit body is declared through macros so one generated source serves both builds:

* debug (``PK_DEBUG``): ``PK_KERNEL`` is a real, never inlined function taking its views by
  reference, so gdb (and pkdb) can set breakpoints and show frames in ``pk_kernel::<name>``;
* release: the body is inlined into the launcher's loop (g++ would otherwise leave a call
  per index, its inliner judging the call "cold"), takes its views by value (their fields
  become registers) and is a template on ``PK_NA``: ``true`` when the launcher has checked
  that no view it writes overlaps another view, so its data pointer can be
  ``__restrict__`` (``RView``) and g++ drops its run-time alias checks around vector loops.
"""


def shared_arithmetic(qualifier: str, math: str) -> str:
    """Python's ``//`` and ``%`` (integers on the runtime's ``check_divisor``, floats),
    integer ``**``, ``abs``/``min``/``max`` and the
    counter-based random numbers, as C++ for a runtime whose functions are declared
    ``qualifier`` and whose math functions live in namespace ``math`` (the CPU's and the
    GPU's, one text: the same results bit for bit)."""
    text = _SHARED_ARITHMETIC.lstrip("\n")
    return text.replace("PK_FN ", qualifier + " ").replace("PK_MATH::", math)


_SHARED_SEARCH = r"""
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
"""


def shared_search(qualifier: str) -> str:
    """``pk.lower_bound`` / ``pk.upper_bound`` as C++ for a runtime whose functions are
    declared ``qualifier`` and whose views are read with its ``at()``."""
    return _SHARED_SEARCH.lstrip("\n").replace("PK_FN ", qualifier + " ")


def shared_team_combine(qualifier: str, slot_bytes: int) -> str:
    """``team_combine``: every team thread's partial combined with ``combine`` (a reducer's
    operation) in team rank order, the same result in all; for a runtime whose functions
    are declared ``qualifier`` and whose team slots are ``slot_bytes`` apart."""
    return _SHARED_TEAM_COMBINE.replace("PK_FN ", qualifier + " ").replace(
        "PK_SLOT", str(slot_bytes)
    )


_SHARED_TEAM_COMBINE = r"""// The team's partials combined with `combine` (a reducer's operation)
// in team rank order: the same result in all (CPU and GPU alike, for one team size).
template <typename T, typename F>
PK_FN T team_combine(TeamMember& tm, T partial, F combine, const char* file, int line) {
    if (tm.team_size == 1) return partial;
    TeamShared* s = tm.shared;
    *(T*)(s->slots + PK_SLOT * tm.team_rank) = partial;
    team_barrier(tm, file, line);
    T total = *(T*)(s->slots);
    for (int r = 1; r < s->size; ++r) total = combine(total, *(T*)(s->slots + PK_SLOT * r));
    team_barrier(tm, file, line);  // the slots are reused by the next collective
    return total;
}

"""


def shared_formatting(qualifier: str, method: str, noinline: str, math: str) -> tuple[str, str]:
    """What ``print(f"{v:spec}")`` needs, as C++ for the CPU's runtime and the GPU's (one
    text: the same output): the free functions (``qualifier``), and the Printer methods
    (``method``) to put inside each runtime's ``struct Printer``. The digit loops are
    ``noinline``: inlined into each of a print's values they took nvcc a minute."""
    functions = _SHARED_DECIMAL.lstrip("\n").replace("PK_FN ", qualifier + " ")
    methods = _SHARED_PRINTER_METHODS.lstrip("\n").replace("PK_METHOD ", method)
    text = functions, methods.replace("PK_MATH::", math)
    return tuple(part.replace("PK_NOINLINE ", noinline + " ") for part in text)  # type: ignore[return-value]


_SHARED_DECIMAL = r"""
// ---- f-string formatting: the exact decimal digits of a double (no snprintf on the GPU)
struct Decimal {
    char d[800];  // the significant digits, no leading or trailing zeros
    int n;        // how many (0: the value is zero)
    int point;    // the value is 0.d[0]d[1]... * 10^point
};

// The exact decimal digits of a > 0 (finite): a = S * 2^E, and S * 2^E (E >= 0) or
// S * 5^-E / 10^-E (E < 0) computed in base-10^9 limbs.
PK_FN PK_NOINLINE void exact_decimal(double a, Decimal* out) {
    int e;
    const double mant = ::frexp(a, &e);
    unsigned long long s = (unsigned long long)::ldexp(mant, 53);
    int E = e - 53;
    while ((s & 1ULL) == 0) { s >>= 1; ++E; }
    unsigned int limb[90];
    int nl = 0;
    while (s) { limb[nl++] = (unsigned int)(s % 1000000000ULL); s /= 1000000000ULL; }
    int k = E >= 0 ? E : -E;
    while (k > 0) {
        const int step = E >= 0 ? (k < 29 ? k : 29) : (k < 13 ? k : 13);
        unsigned long long factor = 1;
        for (int i = 0; i < step; ++i) factor *= E >= 0 ? 2 : 5;
        unsigned long long carry = 0;
        for (int i = 0; i < nl; ++i) {
            const unsigned long long x = limb[i] * factor + carry;
            limb[i] = (unsigned int)(x % 1000000000ULL);
            carry = x / 1000000000ULL;
        }
        while (carry) {
            limb[nl++] = (unsigned int)(carry % 1000000000ULL);
            carry /= 1000000000ULL;
        }
        k -= step;
    }
    int n = 0;
    for (int i = nl - 1; i >= 0; --i) {
        char group[9];
        unsigned int x = limb[i];
        for (int j = 8; j >= 0; --j) { group[j] = (char)('0' + x % 10); x /= 10; }
        int j = 0;
        if (i == nl - 1) while (j < 8 && group[j] == '0') ++j;  // no leading zeros
        for (; j < 9; ++j) out->d[n++] = group[j];
    }
    out->point = E >= 0 ? n : n + E;  // E < 0: the last -E digits are decimals
    while (n > 0 && out->d[n - 1] == '0') --n;
    out->n = n;
}

// Rounds x to its first `keep` digits (as printf: half to even, on the exact value).
PK_FN PK_NOINLINE void round_decimal(Decimal* x, int keep) {
    if (keep >= x->n) return;
    if (keep < 0) { x->n = 0; x->point = 0; return; }
    const char next = x->d[keep];
    const bool odd = keep > 0 && ((x->d[keep - 1] - '0') & 1);
    const bool up = next > '5' || (next == '5' && (keep + 1 < x->n || odd));
    x->n = keep;
    if (up) {
        int i = keep - 1;
        while (i >= 0 && x->d[i] == '9') --i;
        if (i < 0) {  // 99.9 -> 100
            x->d[0] = '1';
            x->n = 1;
            ++x->point;
        } else {
            ++x->d[i];
            x->n = i + 1;
        }
    }
    while (x->n > 0 && x->d[x->n - 1] == '0') --x->n;
    if (x->n == 0) x->point = 0;
}

// The decimal exponent of x rounded to `keep` digits: one more where rounding carries
// into a new digit (9.96 to two digits: 10).
PK_FN int rounded_exponent(const Decimal& x, int keep) {
    if (x.n == 0) return 0;
    if (keep >= x.n) return x.point - 1;
    for (int i = 0; i < keep; ++i)
        if (x.d[i] != '9') return x.point - 1;
    const char next = x.d[keep];
    const bool odd = keep > 0;  // the kept digits are all 9s
    const bool up = next > '5' || (next == '5' && (keep + 1 < x.n || odd));
    return x.point - 1 + (up ? 1 : 0);
}

PK_FN char decimal_digit(const Decimal& x, int i) {
    return i >= 0 && i < x.n ? x.d[i] : '0';
}
"""

_SHARED_PRINTER_METHODS = r"""
    // f"{v:x}": Python writes a negative integer's sign, then its magnitude's digits.
    PK_METHOD Printer& in_base(long long v, char base) {
        if (v < 0) raw("-");
        return in_base(v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v, base);
    }
    PK_METHOD Printer& in_base(unsigned long long v, char base) {
        const unsigned radix = base == 'o' ? 8 : (base == 'x' || base == 'X') ? 16 : 10;
        const char* glyphs = base == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
        char d[32];
        int n = 0;
        do { d[n++] = glyphs[v % radix]; v /= radix; } while (v);
        char out[32];
        for (int k = 0; k < n; ++k) out[k] = d[n - 1 - k];
        out[n] = 0;
        return raw(out);
    }
    // Where the value that finish() pads starts.
    PK_METHOD Printer& mark() {
        mark_at = len;
        return *this;
    }
    PK_METHOD Printer& finish(char sign, int width, char align, bool zero) {
        pad(mark_at, sign, width, align, zero);
        return *this;
    }
    // Pads what was written since `start` to `width` as Python's format spec says: the
    // sign first (`sign` '+' or ' ' for one before non-negative numbers), then zeros, or
    // spaces on the side `align` (< > ^) leaves open.
    PK_METHOD void pad(int start, char sign, int width, char align, bool zero) {
        if (sign != '-' && buf[start] != '-') insert(start, 1, sign);
        const int pad = width - (len - start);
        if (pad <= 0) return;
        if (zero) {
            const bool signed_ = buf[start] == '-' || buf[start] == '+' || buf[start] == ' ';
            insert(start + (signed_ ? 1 : 0), pad, '0');
        } else if (align == '<') {
            insert(len, pad, ' ');
        } else if (align == '^') {
            insert(start, pad / 2, ' ');
            insert(len, pad - pad / 2, ' ');
        } else {
            insert(start, pad, ' ');
        }
    }
    PK_METHOD void insert(int at, int n, char c) {
        if (len + n >= (int)sizeof buf) n = (int)sizeof buf - 1 - len;
        if (n <= 0) return;
        for (int k = len - 1; k >= at; --k) buf[k + n] = buf[k];
        for (int k = 0; k < n; ++k) buf[at + k] = c;
        len += n;
        buf[len] = 0;
    }
    PK_METHOD void ch(char c) {
        const char s[2] = {c, 0};
        raw(s);
    }

    // printf's f/e/g conversions (with flags, width and precision) of v, as Python writes
    // them: from the exact decimal value, rounded half to even.
    PK_METHOD PK_NOINLINE Printer& cformat(const char* conversion, double v) {
        bool left = false, zero = false, alt = false;
        char sign = '-';
        const char* p = conversion + 1;
        for (; *p == '-' || *p == '+' || *p == ' ' || *p == '#' || *p == '0'; ++p) {
            if (*p == '-') left = true;
            else if (*p == '0') zero = true;
            else if (*p == '#') alt = true;
            else if (sign != '+') sign = *p;
        }
        int width = 0, precision = 6;
        for (; *p >= '0' && *p <= '9'; ++p) width = width * 10 + (*p - '0');
        if (*p == '.') {
            precision = 0;
            for (++p; *p >= '0' && *p <= '9'; ++p) precision = precision * 10 + (*p - '0');
        }
        const char type = *p;
        const bool upper = type == 'F' || type == 'E' || type == 'G';
        const int start = len;
        if (PK_MATH::isnan(v)) {
            raw(upper ? "NAN" : "nan");
        } else if (PK_MATH::isinf(v)) {
            raw(v < 0 ? (upper ? "-INF" : "-inf") : (upper ? "INF" : "inf"));
        } else {
            if (PK_MATH::copysign(1.0, v) < 0) raw("-");
            Decimal x;
            x.n = 0;
            x.point = 0;
            if (v != 0) exact_decimal(v < 0 ? -v : v, &x);
            if (type == 'f' || type == 'F') {
                fixed(&x, precision, alt, false);
            } else if (type == 'e' || type == 'E') {
                scientific(&x, precision, alt, upper, false);
            } else {  // g: the shorter of the two for `precision` significant digits
                const int digits = precision == 0 ? 1 : precision;
                const int exponent = rounded_exponent(x, digits);
                if (exponent >= -4 && exponent < digits)
                    fixed(&x, digits - 1 - exponent, alt, !alt);
                else
                    scientific(&x, digits - 1, alt, upper, !alt);
            }
        }
        pad(start, sign, width, left ? '<' : '>', zero && !left);
        return *this;
    }

    // (The Decimal by pointer: a copy of its 800 digits, or one passed by value, took
    // ptxas seconds.)
    PK_METHOD PK_NOINLINE void fixed(Decimal* x, int precision, bool alt, bool strip) {
        round_decimal(x, x->point + precision);
        if (x->point <= 0) ch('0');
        for (int i = 0; i < x->point; ++i) ch(decimal_digit(*x, i));
        if (precision > 0 || alt) ch('.');
        for (int i = x->point; i < x->point + precision; ++i) ch(decimal_digit(*x, i));
        if (strip) strip_zeros();
    }

    PK_METHOD PK_NOINLINE void scientific(
        Decimal* x, int precision, bool alt, bool upper, bool strip) {
        round_decimal(x, precision + 1);
        const int exponent = x->n == 0 ? 0 : x->point - 1;
        ch(decimal_digit(*x, 0));
        if (precision > 0 || alt) ch('.');
        for (int i = 1; i <= precision; ++i) ch(decimal_digit(*x, i));
        if (strip) strip_zeros();
        ch(upper ? 'E' : 'e');
        ch(exponent < 0 ? '-' : '+');
        const int magnitude = exponent < 0 ? -exponent : exponent;
        if (magnitude >= 100) ch((char)('0' + magnitude / 100));
        ch((char)('0' + magnitude / 10 % 10));
        ch((char)('0' + magnitude % 10));
    }

    // %g without '#': no trailing zeros after the point, and no point without decimals.
    PK_METHOD void strip_zeros() {
        int dot = len - 1;
        while (dot >= 0 && buf[dot] >= '0' && buf[dot] <= '9') --dot;
        if (dot < 0 || buf[dot] != '.') return;
        while (len > dot + 1 && buf[len - 1] == '0') --len;
        if (len == dot + 1) --len;
        buf[len] = 0;
    }
"""


_SHARED_ARITHMETIC = r"""
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

"""


#: The operations of ``pk.atomic_*`` updates (``atomic_add`` ...), by the name Python
#: gives them; ``div`` is C's ``/``, which :func:`atomic_update` makes Kokkos'
#: truncating division for integers.
ATOMIC_OPERATIONS = (
    "add", "sub", "mul", "div", "max", "min", "and", "or", "xor", "mod", "lshift", "rshift",
)  # fmt: skip


def atomic_update(base: str, integer: bool, old: str, value: str, where: str) -> str:
    """The new value an atomic update ``base`` (add, div, lshift, ...) computes from the
    element ``old`` and the operand ``value`` (C++ names), for the CPU's runtime and the
    GPU's alike: integer ``div`` truncates as Kokkos' does without trapping on 0, shifts
    and ``mod`` as the operators compute them; ``where`` names the Python file and line
    a failed check reports (C++ names too)."""
    if base == "div" and integer:
        return f"pk_rt::truncdiv({old}, {value}, {where})"
    return {
        "add": f"{old} + {value}", "sub": f"{old} - {value}",
        "mul": f"{old} * {value}", "div": f"{old} / {value}",
        "max": f"({old} < {value} ? {value} : {old})",
        "min": f"({value} < {old} ? {value} : {old})",
        "and": f"{old} & {value}", "or": f"{old} | {value}", "xor": f"{old} ^ {value}",
        "mod": f"pk_rt::mod({old}, {value}, {where})",
        "lshift": f"pk_rt::lshift({old}, {value})", "rshift": f"pk_rt::rshift({old}, {value})",
    }[base]  # fmt: skip


def atomic_operation_struct(base: str, integer: bool) -> str:
    """The name of the CPU runtime's struct (see :func:`atomic_operations`) that performs
    the atomic update ``base`` on integers (``integer``) or floats."""
    name = "TruncDiv" if base == "div" and integer else base.capitalize()
    return f"Atomic{name}"


def atomic_operations() -> str:
    """One struct per atomic update, ``static T apply(T old, T value, file, line)``, for
    ``atomic_apply`` (C++)."""
    out = []
    variants = [(base, False) for base in ATOMIC_OPERATIONS] + [("div", True)]
    for base, integer in variants:
        update = atomic_update(base, integer, "a", "b", "file, line")
        out.append(
            f"struct {atomic_operation_struct(base, integer)} {{\n"
            "    template <typename T>\n"
            "    static inline T apply(T a, T b, const char* file, int line) {\n"
            "        (void)file; (void)line;\n"
            f"        return (T)({update});\n"
            "    }\n"
            "};\n"
        )
    return "".join(out)


PRELUDE = (
    r"""
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
#define PK_VIEW_ARG(T, R, C) const pk_rt::View<T, R, C>&
#define PK_ACCESS static inline
#else
#define PK_KERNEL_TEMPLATE template <bool PK_NA>
#define PK_KERNEL static inline __attribute__((always_inline))
#define PK_VIEW_ARG(T, R, C) const typename pk_rt::ViewArg<PK_NA, T, R, C>::type
// View accesses are inlined before g++ computes restrict information for the body (its
// early alias pass): an access still a call then loses it, and the vectoriser versions
// the loop on run-time alias checks again.
#define PK_ACCESS static inline __attribute__((always_inline))
#endif

namespace pk_rt {

// A strided view of caller-owned memory. C: the last axis is contiguous (stride 1).
template <typename T, int R, bool C>
struct View {
    T* data;
    int64_t extent[R];
    int64_t stride[R];
    static constexpr int rank = R;
    static constexpr bool contiguous = C;
};

// A view whose memory no other view of the launch overlaps (checked by the launcher, as
// Numba and the vectorisers do at run time): stores through it cannot change what the
// other views read. Release builds only.
template <typename T, int R, bool C>
struct RView {
    T* __restrict__ data;
    int64_t extent[R];
    int64_t stride[R];
    static constexpr int rank = R;
    static constexpr bool contiguous = C;
};

template <bool NoAlias, typename T, int R, bool C>
struct ViewArg {
    using type = View<T, R, C>;
};
template <typename T, int R, bool C>
struct ViewArg<true, T, R, C> {
    using type = RView<T, R, C>;
};

template <bool NoAlias, typename T, int R, bool C>
static inline typename ViewArg<NoAlias, T, R, C>::type view_arg(const View<T, R, C>& v) {
    typename ViewArg<NoAlias, T, R, C>::type out;
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

template <typename T, int R, bool C>
static inline Span span(const View<T, R, C>& v) {
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

// A double argument of a packed entry (see emit_cpp._packed_entry): its slot holds the
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
template <typename V>
static inline auto at_checked(const V& v, const int64_t* idx, const char* name,
                              const char* file, int line) -> decltype(*v.data) {
    using T = typename NoRef<decltype(*v.data)>::type;
    constexpr int R = V::rank;
    constexpr bool C = V::contiguous;
    int64_t offset = 0;
    for (int k = 0; k < R; ++k) {
        if (idx[k] < 0 || idx[k] >= v.extent[k]) {
            char what[256];
            std::snprintf(what, sizeof what,
                          "index %lld is out of range for axis %d of view '%s' with extent %lld",
                          (long long)idx[k], k, name, (long long)v.extent[k]);
            fault(1, file, line, what);
            return fault_slot<T>();
        }
        offset += idx[k] * ((C && k == R - 1) ? 1 : v.stride[k]);
    }
    return v.data[offset];
}

// An index into a subview (whose elements are its view's): checked against the subview's
// own extent in debug builds, where the view's check would miss an index past the
// subview but inside the view.
static inline int64_t subview_index(int64_t i, int64_t extent, const char* name, int axis,
                                    const char* file, int line) {
#if PK_CHECKS
    if (i < 0 || i >= extent) {
        char what[256];
        std::snprintf(what, sizeof what,
                      "index %lld is out of range for axis %d of view '%s' with extent %lld",
                      (long long)i, axis, name, (long long)extent);
        fault(1, file, line, what);
        return 0;
    }
#else
    (void)extent; (void)name; (void)axis; (void)file; (void)line;
#endif
    return i;
}

template <int R, bool C>
PK_ACCESS int64_t offset_of(const int64_t* stride, const int64_t* idx) {
    int64_t offset = 0;
    for (int k = 0; k < R; ++k) offset += idx[k] * ((C && k == R - 1) ? 1 : stride[k]);
    return offset;
}

template <typename T, int R, bool C, typename... I>
PK_ACCESS T& at(const View<T, R, C>& v, const char* name, const char* file, int line,
                    I... indices) {
    const int64_t idx[R] = {(int64_t)indices...};
#if PK_CHECKS
    return at_checked(v, idx, name, file, line);
#else
    (void)name; (void)file; (void)line;
    return v.data[offset_of<R, C>(v.stride, idx)];
#endif
}

template <typename T, int R, bool C, typename... I>
PK_ACCESS T& at(const RView<T, R, C>& v, const char* name, const char* file, int line,
                    I... indices) {
    const int64_t idx[R] = {(int64_t)indices...};
#if PK_CHECKS
    return at_checked(v, idx, name, file, line);
#else
    (void)name; (void)file; (void)line;
    return v.data[offset_of<R, C>(v.stride, idx)];
#endif
}

// v[i - 1, j, k + 1]: the indices without their constant shifts, and the shifts. Release
// builds add the shifts' offset to the unshifted indices' one, so the neighbours of one
// point share that point's offset (g++ does not rewrite (i - 1) * s0 + j * s1 + k as
// i * s0 + j * s1 + k - s0 itself: a stencil's seven accesses cost seven offsets).
template <typename T, int R, bool C, typename... I>
PK_ACCESS T& at_shifted(const View<T, R, C>& v, const char* name, const char* file, int line,
                        const int64_t (&shift)[R], I... indices) {
    int64_t idx[R] = {(int64_t)indices...};
#if PK_CHECKS
    for (int k = 0; k < R; ++k) idx[k] += shift[k];
    return at_checked(v, idx, name, file, line);
#else
    (void)name; (void)file; (void)line;
    return v.data[offset_of<R, C>(v.stride, idx) + offset_of<R, C>(v.stride, shift)];
#endif
}

template <typename T, int R, bool C, typename... I>
PK_ACCESS T& at_shifted(const RView<T, R, C>& v, const char* name, const char* file, int line,
                        const int64_t (&shift)[R], I... indices) {
#if PK_CHECKS
    int64_t idx[R] = {(int64_t)indices...};
    for (int k = 0; k < R; ++k) idx[k] += shift[k];
    return at_checked(v, idx, name, file, line);
#else
    (void)name; (void)file; (void)line;
    const int64_t idx[R] = {(int64_t)indices...};
    return v.data[offset_of<R, C>(v.stride, idx) + offset_of<R, C>(v.stride, shift)];
#endif
}

"""
    + shared_search("PK_ACCESS")
    + r"""
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
template <typename T, typename F>
static inline T float_to_int(F x, const char* file, int line) {
#if PK_CHECKS
    const bool is_signed = (T)-1 < (T)0;
    const int bits = 8 * (int)sizeof(T);
    const F end = std::ldexp((F)1, is_signed ? bits - 1 : bits);  // the first value past T
    const F whole = std::trunc(x);
    if (x != x) {
        fault(5, file, line, "cannot convert float NaN to integer");
    } else if (!(whole >= (is_signed ? -end : (F)0) && whole < end)) {
        char what[160];
        std::snprintf(what, sizeof what, "cannot convert %.17g to a %d-bit %s integer",
                      (double)x, bits, is_signed ? "signed" : "unsigned");
        fault(6, file, line, what);
    }
#else
    (void)file; (void)line;
#endif
    return (T)x;
}

"""
    + shared_arithmetic("static inline", "std::")
    + r"""// ---- Python's float ** (and math.pow): CPython calls the C library's pow, so does this.
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

"""
    + atomic_operations()
    + r"""

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
"""
    + shared_formatting("static inline", "", "__attribute__((noinline))", "std::")[0]
    + r"""
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
"""
    + shared_formatting("static inline", "", "__attribute__((noinline))", "std::")[1]
    + r"""};

}  // namespace pk_rt
"""
)


# The runtime of TeamPolicy kernels, added after PRELUDE only to the modules that need it.
# A team is ``team_size`` real threads of one OpenMP parallel region; the teams that run
# at once each have a TeamShared (barrier, reduction slots, scratch memory) and take a
# contiguous share of the league. Barriers carry the Python line they are called from, so
# threads of one team that reach different barriers (one in a branch others skip) are
# reported as a fault instead of hanging; once any fault is recorded, barriers no longer
# wait, so a faulting team cannot deadlock the launch.
TEAM_PRELUDE = (
    r"""
#include <sched.h>
namespace pk_rt {

enum { TEAM_END_OF_WORKUNIT = -1 };

struct TeamShared {
    int size;
    int count;       // threads arrived at the current barrier
    int generation;  // bumped when the last one arrives
    int64_t* arrival_line;  // per team rank: the line of the barrier it waits at
    unsigned char* slots;   // per team rank: 16 bytes for reductions and scans
    char* scratch[2];       // per level: one pool, PerTeam + team_size x PerThread bytes
    int64_t team_bytes[2], thread_bytes[2];
    const char* file;       // of the workunit, for messages
};

// One thread of one team: what a TeamPolicy workunit receives as its team member.
struct TeamMember {
    int64_t league_rank, league_size, team_rank, team_size;
    TeamShared* shared;
    int64_t scratch_used[2];  // of the team's pool, handed out so far, per level
};

static inline bool faulted() { return __atomic_load_n(&fault_set, __ATOMIC_ACQUIRE) != 0; }

static void barrier_mismatch(const TeamMember& tm, int line, const char* file) {
    TeamShared* s = tm.shared;
    int odd = 0;
    while (odd < s->size && s->arrival_line[odd] == s->arrival_line[0]) ++odd;
    char what[512];
    int used = std::snprintf(what, sizeof what, "team_barrier() mismatch in league %lld:",
                             (long long)tm.league_rank);
    const int ranks[2] = {0, odd};
    for (int r : ranks) {
        const int64_t at = s->arrival_line[r];
        if (at == TEAM_END_OF_WORKUNIT)
            used += std::snprintf(what + used, sizeof what - used,
                                  "%s team_rank %d at the end of the workunit", r ? "," : "", r);
        else
            used += std::snprintf(what + used, sizeof what - used,
                                  "%s team_rank %d waits at %s:%lld", r ? "," : "", r, s->file,
                                  (long long)at);
        if (used >= (int)sizeof what) break;
    }
    // Report it at a barrier a thread waits at (the last to arrive may be one finishing).
    int64_t where = line;
    for (int r = 0; r < s->size && where == TEAM_END_OF_WORKUNIT; ++r) where = s->arrival_line[r];
    fault(3, where == TEAM_END_OF_WORKUNIT ? s->file : file, (int)where, what);
}

// Wait until every thread of the team arrives; ``line`` is the Python line of the call
// (TEAM_END_OF_WORKUNIT when a thread finishes the workunit for its league rank).
static void team_barrier(TeamMember& tm, const char* file, int line) {
    TeamShared* s = tm.shared;
    if (s->size == 1 || faulted()) return;
    s->arrival_line[tm.team_rank] = line;
    const int gen = __atomic_load_n(&s->generation, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&s->count, 1, __ATOMIC_ACQ_REL) == s->size) {
        for (int r = 1; r < s->size; ++r)
            if (s->arrival_line[r] != s->arrival_line[0]) {
                barrier_mismatch(tm, line, file);
                break;
            }
        __atomic_store_n(&s->count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->generation, gen + 1, __ATOMIC_RELEASE);
        return;
    }
    for (int spins = 0; __atomic_load_n(&s->generation, __ATOMIC_ACQUIRE) == gen; ++spins) {
        if (spins > 256) {
            if (faulted()) return;
            sched_yield();  // teams may have more threads than the machine has cores
        }
    }
}

// This thread's share of [begin, end) in a TeamThreadRange: contiguous chunks in rank order.
static inline void team_chunk(const TeamMember& tm, int64_t begin, int64_t end, int64_t* lo,
                              int64_t* hi) {
    const int64_t n = end > begin ? end - begin : 0;
    const int64_t chunk = (n + tm.team_size - 1) / tm.team_size;
    *lo = begin + tm.team_rank * chunk;
    if (*lo > end) *lo = end;
    *hi = *lo + chunk < end ? *lo + chunk : end;
}

// Every thread's partial, added in team rank order: the same total, bit for bit, in all.
template <typename T>
static T team_reduce(TeamMember& tm, T partial, const char* file, int line) {
    if (tm.team_size == 1) return T(0) + partial;
    TeamShared* s = tm.shared;
    *(T*)(s->slots + 16 * tm.team_rank) = partial;
    team_barrier(tm, file, line);
    T total = 0;
    for (int r = 0; r < s->size; ++r) total += *(T*)(s->slots + 16 * r);
    team_barrier(tm, file, line);  // the slots are reused by the next collective
    return total;
}

"""
    + shared_team_combine("static", 16)
    + r"""
// The sum of the partials of the threads before this one (an exclusive scan in team rank
// order); ``*total``: the sum of all.
template <typename T>
static T team_scan(TeamMember& tm, T partial, T* total, const char* file, int line) {
    TeamShared* s = tm.shared;
    *(T*)(s->slots + 16 * tm.team_rank) = partial;
    team_barrier(tm, file, line);
    T before = 0, all = 0;
    for (int r = 0; r < s->size; ++r) {
        if (r == tm.team_rank) before = all;
        all += *(T*)(s->slots + 16 * r);
    }
    team_barrier(tm, file, line);
    *total = all;
    return before;
}

// The next piece of the team's (or this thread's) scratch memory at ``level``, as a view.
// As in Kokkos, a level's PerTeam and PerThread bytes are one pool, handed out in the
// order of the allocations: a team piece once, a thread piece once per team rank (side
// by side). Every thread of a team makes the same allocations, so they agree on where.
template <typename T, int R>
static View<T, R, true> scratch_view(TeamMember& tm, int level, bool per_thread,
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
        std::snprintf(what, sizeof what,
                      "ScratchView%dD '%s' needs %lld bytes of level-%d %s scratch but only %lld "
                      "are left: reserve more with policy.set_scratch_size(%d, pk.%s(...))",
                      R, name, (long long)bytes, level, per_thread ? "thread" : "team",
                      (long long)left, level, per_thread ? "PerThread" : "PerTeam");
        fault(4, file, line, what);
        v.data = (T*)std::calloc(count > 0 ? count : 1, sizeof(T));  // the launch has failed
        return v;
    }
    v.data = (T*)(s->scratch[level] + used + (per_thread ? tm.team_rank * bytes : 0));
    used += bytes * copies;
    return v;
}

// The teams of one launch: how many run at once, their shared state, their leagues.
struct TeamLaunch {
    int64_t league, team_size, teams;
    TeamShared* shared;

    TeamLaunch(const int64_t* spec, bool parallel, const char* file) {
        league = spec[0];
        team_size = spec[1];
#ifdef _OPENMP
        const int64_t threads = parallel ? omp_get_max_threads() : 1;
#else
        const int64_t threads = 1;
        (void)parallel;
#endif
        teams = threads / team_size;
        if (teams < 1) teams = 1;  // a team larger than the machine still runs, oversubscribed
        if (teams > league) teams = league > 0 ? league : 1;
        shared = (TeamShared*)std::calloc(teams, sizeof(TeamShared));
        for (int64_t t = 0; t < teams; ++t) {
            TeamShared& s = shared[t];
            s.size = (int)team_size;
            s.arrival_line = (int64_t*)std::calloc(team_size, sizeof(int64_t));
            s.slots = (unsigned char*)std::aligned_alloc(16, 16 * team_size);
            s.file = file;
            for (int level = 0; level < 2; ++level) {
                s.team_bytes[level] = spec[3 + level];
                s.thread_bytes[level] = spec[5 + level];
                const int64_t bytes = s.team_bytes[level] + team_size * s.thread_bytes[level];
                s.scratch[level] = (char*)std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
            }
        }
    }
    ~TeamLaunch() {
        for (int64_t t = 0; t < teams; ++t) {
            std::free(shared[t].arrival_line);
            std::free(shared[t].slots);
            std::free(shared[t].scratch[0]);
            std::free(shared[t].scratch[1]);
        }
        std::free(shared);
    }
    int64_t threads() const { return teams * team_size; }

    // Thread ``tid`` of ``nthreads`` as a team member, and the league ranks its team runs;
    // false for a thread left over when OpenMP gave fewer threads than asked.
    bool member(int tid, int nthreads, TeamMember* tm, int64_t* lo, int64_t* hi) {
        const int64_t running = nthreads / team_size;
        if (running == 0 && tid == 0) {
            char what[160];
            std::snprintf(what, sizeof what, "OpenMP started %d threads, fewer than the team "
                          "size %lld (is OMP_THREAD_LIMIT set?)", nthreads, (long long)team_size);
            fault(3, shared[0].file, 0, what);
        }
        const int64_t team = tid / team_size;
        if (team >= running || team >= teams) return false;
        *tm = TeamMember{0, league, tid % team_size, team_size, &shared[team], {0, 0}};
        const int64_t q = league / running, extra = league % running;
        *lo = team * q + (team < extra ? team : extra);
        *hi = *lo + q + (team < extra ? 1 : 0);
        return true;
    }

    static void start(TeamMember& tm, int64_t league_rank) {
        tm.league_rank = league_rank;
        tm.scratch_used[0] = tm.scratch_used[1] = 0;
    }
};

}  // namespace pk_rt
"""
)
