// Shared by cpu.hpp and cuda_print.hpp (one text: the same output): the free functions
// print(f"{v:spec}") needs. The includer defines PK_FN (how they are declared),
// PK_NOINLINE (the digit loops are not inlined: inlined into each of a print's values
// they took nvcc a minute) and PK_MATH (the namespace of the math functions).
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
