// Shared by cpu.hpp and cuda_print.hpp: the methods of struct Printer that
// print(f"{v:spec}") needs, included inside each runtime's `struct Printer`. The includer
// defines PK_METHOD (their qualifier: empty on the CPU, __device__ on the GPU),
// PK_NOINLINE and PK_MATH (as for decimal.hpp).
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
    // print(z) of a complex number, as NumPy's str() of its complex scalar writes it
    // (for a complex128, CPython's repr of complex too: complex_repr): a real part of +0
    // is left out ("1j", "-0j", "nanj"), else "(re±imj)"; each part as print() writes a
    // float (a complex64's as a float32), without a trailing ".0"; a NaN without its
    // sign, the imaginary part's as "+nan".
    template <typename T>
    PK_METHOD Printer& value(complex<T> z) {
        const bool single = sizeof(T) == 4;
        if (z.re == 0 && PK_MATH::copysign(1.0, (double)z.re) > 0) {
            complex_part((double)z.im, single, false);
            return raw("j");
        }
        raw("(");
        complex_part((double)z.re, single, false);
        complex_part((double)z.im, single, true);
        return raw("j)");
    }
    PK_METHOD void complex_part(double v, bool single, bool sign) {
        if (sign && (v != v || PK_MATH::copysign(1.0, v) > 0)) raw("+");
        floating(v, single);
        if (len >= 2 && buf[len - 2] == '.' && buf[len - 1] == '0') buf[len -= 2] = 0;
    }
