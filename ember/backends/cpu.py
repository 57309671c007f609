"""``ember.backends.cpu``."""

from __future__ import annotations


def get_cpu_capability() -> str:
    """The widest SIMD level the CPU offers NumPy's kernels, in torch's names: ``'AVX512'``,
    ``'AVX2'``, ``'VSX'``, ``'Z VECTOR'`` or ``'DEFAULT'`` (NumPy does not report
    the SVE vector length torch's ``'SVE256'`` needs)
    (``torch.backends.cpu.get_cpu_capability``, which reports what torch's kernels use)."""
    from .._backend import host  # lazy: NumPy's CPU feature table is read on demand
    try:
        features = host._core._multiarray_umath.__cpu_features__
    except AttributeError:  # a NumPy without the table: claim nothing
        return "DEFAULT"
    for capability, needs in (("AVX512", ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ")),
                              ("AVX2", ("AVX2", "FMA3")),
                              ("VSX", ("VSX",)), ("Z VECTOR", ("VX",))):
        if all(features.get(name) for name in needs):
            return capability
    return "DEFAULT"
