#!/usr/bin/env python3
"""vmath_fit.py - the coefficients of vmath_erff (templates/eltwise_rows.h), printed as C.

Run by hand when the approximation changes; the build does not run it. Needs Python 3 and mpmath
(Debian: python3-mpmath). Each piece is the Chebyshev interpolant of its function (within a small
factor of the best polynomial of its degree), computed with 50 digits, re-expanded as a polynomial
around a centre that is exact in f32, and rounded to f32:

  |x| <  1     erf(x) = x + x * S(x^2),  S(u) = erf(sqrt u) / sqrt u - 1, degree 6 in u on [0, 1]
  |x| <  3.85  erf(x) = 1 - L(|x| - 2.5), L(t) = erfc(t + 2.5),            degree 14 in t on [-1.5, 1.35]
  otherwise    erf(x) = +-1 (erfc(3.85) = 2.5e-8, under half an f32 ULP of 1: 2^-25)

The interpolants' own errors are 1.3e-9 (S) and 5.2e-9 (L); what tests/test_vmath.c measures is
the rest: rounding the coefficients and evaluating in f32.
"""
import struct

import mpmath as mp

mp.mp.dps = 50


def chebyshev(f, a, b, n):
    """Coefficients c[j] of sum c[j] T_j((2x - a - b) / (b - a)) interpolating f at n + 1 Chebyshev nodes."""
    h, m = (b - a) / 2, (a + b) / 2
    theta = [mp.pi * (k + mp.mpf(1) / 2) / (n + 1) for k in range(n + 1)]
    fx = [f(h * mp.cos(t) + m) for t in theta]
    c = [2 * sum(fx[k] * mp.cos(j * theta[k]) for k in range(n + 1)) / (n + 1) for j in range(n + 1)]
    c[0] /= 2
    return c


def monomials(c, a, b, centre):
    """The polynomial sum c[j] T_j(y), y = (2x - a - b) / (b - a), as coefficients of (x - centre)^i."""
    n = len(c) - 1
    t = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for j in range(2, n + 1):
        nxt = [mp.mpf(0)] * (j + 1)
        for i, v in enumerate(t[j - 1]):
            nxt[i + 1] += 2 * v
        for i, v in enumerate(t[j - 2]):
            nxt[i] -= v
        t.append(nxt)
    in_y = [sum(c[j] * t[j][i] for j in range(i, n + 1) if i < len(t[j])) for i in range(n + 1)]
    # y = (x - m) / h, and x - m = (x - centre) + d
    h, m = (b - a) / 2, (a + b) / 2
    in_xm = [in_y[i] / h**i for i in range(n + 1)]
    d = centre - m
    return [sum(mp.binomial(i, k) * in_xm[i] * d ** (i - k) for i in range(k, n + 1)) for k in range(n + 1)]


def c_array(name, coeffs):
    f32 = [struct.unpack("f", struct.pack("f", float(v)))[0] for v in coeffs]  # round to nearest f32
    def lit(v):  # 0x1.81273ep-2f: the f32's hex digits, no trailing zeros
        mant, exp = float.hex(v).split("p")
        return mant.rstrip("0").rstrip(".") + "p" + exp + "f"

    rows = [", ".join(lit(v) for v in f32[i : i + 5]) for i in range(0, len(f32), 5)]
    return "static const float %s[%d] = {\n    %s};" % (name, len(coeffs), ",\n    ".join(rows))


def main():
    def s(u):
        return mp.erf(mp.sqrt(u)) / mp.sqrt(u) - 1 if u > 0 else 2 / mp.sqrt(mp.pi) - 1

    S = monomials(chebyshev(s, mp.mpf(0), mp.mpf(1), 6), mp.mpf(0), mp.mpf(1), mp.mpf(0))
    L = monomials(chebyshev(mp.erfc, mp.mpf(1), mp.mpf("3.85"), 14), mp.mpf(1), mp.mpf("3.85"), mp.mpf("2.5"))
    print(c_array("vmath_erf_s", S))
    print(c_array("vmath_erf_l", L))


if __name__ == "__main__":
    main()
