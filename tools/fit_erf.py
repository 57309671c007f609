"""The fits behind the erf family's coefficient tables in ``ember/ops/unary.py``.

A development tool, not part of the package: it needs mpmath (``pip install mpmath``; torch's
sympy brings it). Each fit is a rational function P(v)/Q(v) (Q = 1 with n = 0) found in 40-digit
arithmetic by linearised least squares (Sanathanan-Koerner) with Lawson reweighting towards the
minimax relative error, on Chebyshev nodes of [lo, hi]; it prints the relative error reached and
the monomial coefficients of P and Q in v, Q's constant term 1.

    python tools/fit_erf.py erf_small erfcx_mid ...    # one or more of TABLES' names

The printed coefficients are the tables as committed. ``_ERFCX_TAIL`` is kept as
``(c0, N, Q)`` with x erfcx(x) = c0 + s N(s) / Q(s), c0 = P(0) (1/sqrt(pi)) and N's
coefficients P[k + 1] - c0 Q[k + 1]: the constant added apart, so that rounding N and Q counts
less; this prints it so.
"""

from __future__ import annotations

import json
import sys

import mpmath as mp

mp.mp.dps = 40


def _erfcx(x):
    return mp.erfc(x) * mp.exp(x * x)


def _erf_over_x(t):  # erf(sqrt t) / sqrt t, t = x*x
    return mp.erf(mp.sqrt(t)) / mp.sqrt(t) if t > 0 else 2 / mp.sqrt(mp.pi)


def _x_erfcx(s):  # x erfcx(x) in s = 1/x**2
    return _erfcx(1 / mp.sqrt(s)) / mp.sqrt(s)


# table in unary.py -> (function of v, lo, hi, numerator degree m, denominator degree n)
TABLES = {
    "erf_small": (_erf_over_x, 0, 0.25, 8, 0),            # _ERF_SMALL: |x| < 1/2
    "erfcx_mid": (_erfcx, 0.5, 2.0, 7, 7),                 # _ERFCX_MID: 1/2 <= x < 2
    "erfcx_tail": (_x_erfcx, 1 / 27.0 ** 2, 0.25, 8, 8),   # _ERFCX_TAIL: 2 <= x <= 27
    "erf_f32": (_erf_over_x, 0, 16.0, 6, 5),               # _ERF_F32: float32, |x| <= 4
    "erfcx_f32": (_x_erfcx, 1 / 10.5 ** 2, 4.0, 7, 7),     # _ERFCX_F32: 1/2 <= x <= 10.5
}


def fit(f, lo, hi, m, n, N=None, iters=25):
    N = N or 6 * (m + n + 2)
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    # nodes clustered at the ends (Chebyshev), mapped to u in [-1, 1]
    us = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / N) for j in range(N)]
    vs = [(lo + hi) / 2 + (hi - lo) / 2 * u for u in us]
    fv = [f(v) for v in vs]
    def cheb(u, k):
        T = [mp.mpf(1), u]
        for _ in range(2, k + 1):
            T.append(2 * u * T[-1] - T[-2])
        return T[:k + 1]
    Tp = [cheb(u, max(m, n)) for u in us]
    w = [mp.mpf(1)] * N
    lw = [mp.mpf(1)] * N
    best = None
    for it in range(iters):
        rows, rhs = [], []
        for j in range(N):
            s = w[j] * mp.sqrt(lw[j]) / abs(fv[j])
            rows.append([Tp[j][k] * s for k in range(m + 1)] +
                        [-fv[j] * Tp[j][k] * s for k in range(1, n + 1)])
            rhs.append(fv[j] * s)
        c = mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))[0]
        p = [c[k] for k in range(m + 1)]
        q = [mp.mpf(1)] + [c[m + k] for k in range(1, n + 1)]
        errs = []
        for j in range(N):
            P = mp.fsum(p[k] * Tp[j][k] for k in range(m + 1))
            Q = mp.fsum(q[k] * Tp[j][k] for k in range(n + 1))
            w[j] = 1 / abs(Q)
            errs.append(abs(P / Q / fv[j] - 1))
        e = max(errs)
        if best is None or e < best[0]:
            best = (e, p, q)
        mean = mp.fsum(errs) / N
        lw = [lw[j] * (errs[j] / mean) + mp.mpf(10) ** -30 for j in range(N)]
        tot = mp.fsum(lw) / N
        lw = [v / tot for v in lw]
    e, p, q = best
    # to monomials in v: u = (2v - lo - hi)/(hi - lo)
    def to_mono(c):
        # Chebyshev -> monomial in u, then substitute u = a v + b
        k = len(c) - 1
        Tm = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
        for i in range(2, k + 1):
            a = [mp.mpf(0)] + [2 * v for v in Tm[-1]]
            b = Tm[-2] + [mp.mpf(0)] * (len(a) - len(Tm[-2]))
            Tm.append([x - y for x, y in zip(a, b)])
        mono_u = [mp.mpf(0)] * (k + 1)
        for i in range(k + 1):
            for j, v in enumerate(Tm[i]):
                mono_u[j] += c[i] * v
        A, B = 2 / (hi - lo), -(lo + hi) / (hi - lo)
        out = [mp.mpf(0)] * (k + 1)
        for j, cj in enumerate(mono_u):  # cj (A v + B)^j
            for i in range(j + 1):
                out[i] += cj * mp.binomial(j, i) * A ** i * B ** (j - i)
        return out
    pm, qm = to_mono(p), to_mono(q)
    q0 = qm[0]
    return [v / q0 for v in pm], [v / q0 for v in qm], e


def main() -> None:
    for name in sys.argv[1:] or TABLES:
        f, lo, hi, m, n = TABLES[name]
        p, q, e = fit(f, lo, hi, m, n)
        table = [[float(v) for v in p], [float(v) for v in q]]
        if name == "erfcx_tail":
            c0 = p[0]
            table = [float(c0), [float(p[k + 1] - c0 * q[k + 1]) for k in range(n)], table[1]]
        print(name, m, n, mp.nstr(e, 3), json.dumps(table), flush=True)


if __name__ == "__main__":
    main()
