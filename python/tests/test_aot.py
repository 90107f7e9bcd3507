"""jit's ahead-of-time stages: jit(f).lower(*args) -> Lowered (as_text, cost_analysis, compile) ->
Compiled (callable, as_text, cost_analysis, memory_analysis), and jit(f).trace(*args)."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft import lax


def _mlp(w, x):
    return gnp.sum(gnp.tanh(x @ w))


def test_lower_compile_call_and_cache():
    traces = []

    def f(w, x):
        traces.append(1)
        return _mlp(w, x)

    jf = gf.jit(f)
    w, x = gnp.asarray(np.random.randn(16, 8)), gnp.asarray(np.random.randn(4, 16))
    lowered = jf.lower(w, x)
    assert "dot_general" in lowered.as_text() and "tanh" in lowered.as_text()
    compiled = lowered.compile()
    np.testing.assert_allclose(float(compiled(w, x)), float(_mlp(w, x)), rtol=1e-12)
    np.testing.assert_allclose(float(jf(w, x)), float(_mlp(w, x)), rtol=1e-12)
    assert len(traces) == 1  # lowering filled the cache
    with pytest.raises(TypeError, match="compiled for"):
        compiled(w, gnp.ones((5, 16)))
    with pytest.raises(TypeError, match="structure"):
        compiled(w)
    info = compiled.out_info
    assert info.shape == () and str(info.dtype) == "float64"


def test_cost_analysis_counts_by_hand():
    B, K, N = 4, 16, 8
    c = gf.jit(_mlp).lower(gnp.ones((K, N), gnp.float32), gnp.ones((B, K), gnp.float32)).cost_analysis()
    assert c["flops"] == 2 * B * K * N + 2 * B * N
    assert c["transcendentals"] == B * N
    assert c["bytes accessed"] == 4 * ((K * N + B * K + B * N) + 2 * B * N + (B * N + 1))


def test_compiled_program_is_fused_and_cheaper_to_move():
    f = gf.jit(lambda x: gnp.exp(x * 2.0 + 1.0) - x)
    x = gnp.ones((256, 256), gnp.float32)
    lowered = f.lower(x)
    compiled = lowered.compile()
    assert "fusion" in compiled.as_text()
    lc, cc = lowered.cost_analysis(), compiled.cost_analysis()
    assert cc["flops"] == lc["flops"]
    assert cc["bytes accessed"] == 2 * 4 * 256 * 256 and lc["bytes accessed"] >= 4 * cc["bytes accessed"]
    m = compiled.memory_analysis()
    assert m.argument_size_in_bytes == m.output_size_in_bytes == 4 * 256 * 256
    np.testing.assert_allclose(np.asarray(compiled(x)), np.asarray(gnp.exp(x * 2.0 + 1.0) - x))


def test_static_arguments_are_baked_in_and_pytrees_flow():
    def f(p, x, n):
        return {"y": (p["w"] * x) ** n, "n": x + n}

    jf = gf.jit(f, static_argnums=2)
    p, x = {"w": gnp.arange(3.0)}, gnp.ones(3)
    compiled = jf.lower(p, x, 3).compile()
    out = compiled(p, x)  # the static argument is not passed again (as in JAX)
    np.testing.assert_allclose(np.asarray(out["y"]), np.arange(3.0) ** 3)
    np.testing.assert_allclose(np.asarray(out["n"]), np.full(3, 4.0))
    assert "integer_pow" in jf.lower(p, x, 3).as_text() or "pow" in jf.lower(p, x, 3).as_text()


def test_trace_stage():
    t = gf.jit(lambda a, b: lax.mul(a, b) + 1.0).trace(gnp.ones(2), gnp.ones(2))
    assert "mul" in str(t.jaxpr) and "jit" not in str(t.jaxpr)
    assert np.asarray(t.lower().compile()(gnp.ones(2), gnp.ones(2))).tolist() == [2.0, 2.0]


def test_scan_costs_its_body_length_times():
    def rnn(w, xs):
        h, _ = lax.scan(lambda h, x: (h @ w + x, h), gnp.zeros(6), xs)
        return h

    c = gf.jit(rnn).lower(gnp.ones((6, 6)), gnp.ones((5, 6))).cost_analysis()
    assert c["flops"] == 5 * (2 * 6 * 6 + 6)
