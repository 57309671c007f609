"""Op-table rows for ember/ops/complex.py and the complex paths of the ops it makes
complex-aware (the table's inputs are real: each row builds complex values with
``complex``/``polar``, runs the op, and returns a real result, so the shared harness compares
values, gradients, gradcheck and forward-mode tangents with torch). ember.fft's own tests
(torch's values, gradients, tangents) are in tests/test_fft.py."""

from __future__ import annotations

from op_table import F32, FLOAT, OpCase, S, positive

TWO = [S((3, 4), (3, 4)), S((5,), (5,))]


def _z(m, x, y):
    return m.complex(x, y)


OPS = [
    OpCase("complex", lambda m, x, y: m.view_as_real(m.complex(x, y) * (1 + 2j)), TWO, FLOAT,
           gradgrad=True),
    OpCase("polar", lambda m, r, t: m.view_as_real(m.polar(r, t)), TWO, FLOAT, domain=positive,
           gradgrad=True),
    OpCase("real", lambda m, x, y: m.real(_z(m, x, y) * _z(m, y, x)), TWO, FLOAT,
           gradgrad=True),
    OpCase("imag", lambda m, x, y: m.imag(_z(m, x, y) * _z(m, y, x)), TWO, FLOAT,
           gradgrad=True),
    OpCase("angle", lambda m, x, y: m.angle(_z(m, x, y)), TWO, FLOAT, domain=positive,
           gradgrad=True),
    OpCase("angle_real", lambda m, x: m.angle(x), [S((3, 4))], F32, grad=False),
    OpCase("sgn", lambda m, x, y: m.view_as_real(m.sgn(_z(m, x, y))), TWO, FLOAT,
           domain=positive, gradgrad=True, node=False),
    OpCase("conj", lambda m, x, y: (m.conj(_z(m, x, y)) * _z(m, y, x)).real, TWO, FLOAT,
           gradgrad=True),
    OpCase("conj_physical", lambda m, x, y: m.view_as_real(m.conj_physical(_z(m, x, y)) * 2j),
           TWO, FLOAT, gradgrad=True),
    OpCase("resolve_conj", lambda m, x, y: m.view_as_real(m.resolve_conj(_z(m, x, y))), TWO,
           FLOAT, gradgrad=True),
    OpCase("resolve_neg", lambda m, x: m.resolve_neg(x) * 2, [S((3, 4))], F32, gradgrad=True),
    OpCase("is_conj", lambda m, x: m.is_conj(x), [S((3, 4))], F32, grad=False),
    OpCase("is_complex", lambda m, x, y: m.is_complex(_z(m, x, y)), TWO, F32, grad=False),
    OpCase("view_as_real", lambda m, x, y: m.view_as_real(_z(m, x, y).exp()), TWO, FLOAT,
           gradgrad=True),
    OpCase("view_as_complex", lambda m, x: m.view_as_complex(x).abs(), [S((3, 2)), S((2, 4, 2))],
           FLOAT, domain=positive, gradgrad=True),
    OpCase("complex_arithmetic",
           lambda m, x, y: m.view_as_real((_z(m, x, y) ** 2 / (_z(m, y, x) + 3) - x).tanh()),
           TWO, FLOAT, domain=positive, gradgrad=True, node=False),
    OpCase("complex_matmul", lambda m, x, y: m.view_as_real(_z(m, x, y) @ _z(m, y, x).mT),
           [S((3, 4), (3, 4))], FLOAT, gradgrad=True, node=False),
    OpCase("complex_abs_log", lambda m, x, y: (m.log(_z(m, x, y)).sqrt() * 1j).abs().mean(0),
           TWO, FLOAT, domain=positive, gradgrad=True),
]
