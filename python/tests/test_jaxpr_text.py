"""make_jaxpr's text for the higher-order primitives, as JAX 0.11 prints them: jit with its name first and
the inner jaxpr's binders named like the call's operands and results (JAX's _pjit_pp_rule and
suggest_same_var_names), custom_jvp_call / custom_vjp_call with the function's name and their rules by
name (_custom_jvp_call_pp_rule / _custom_vjp_call_pp_rule), cond's branches, while's four parameters."""
import graft as gf
import graft.numpy as gnp
from graft import lax


def test_jit_prints_its_name_first_and_shares_names():
    j = gf.make_jaxpr(gf.jit(lambda x: x * 2.0))(gnp.ones(3, gnp.float32))
    assert str(j) == """{ lambda ; a:f32[3]. let
    b:f32[3] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0:f32[] in (b,) }
    ] a
  in (b,) }"""

    def inner(x, y):
        return gnp.sin(x) * y

    k = gf.make_jaxpr(lambda x: gf.jit(inner)(x, gnp.float32(2.0)) + 1.0)(gnp.ones(2, gnp.float32))
    assert str(k) == """{ lambda ; a:f32[2]. let
    b:f32[2] = jit[
      name=inner
      jaxpr={ lambda ; a:f32[2] c:f32[]. let
          d:f32[2] = sin a
          b:f32[2] = mul d c
        in (b,) }
    ] a 2.0:f32[]
    e:f32[2] = add b 1.0:f32[]
  in (e,) }"""


def test_custom_derivative_calls_print_as_jax():
    @gf.custom_jvp
    def softplus(x):
        return gnp.log1p(gnp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * gf.nn.sigmoid(p[0])))
    assert str(gf.make_jaxpr(softplus)(gnp.float32(1.0))) == """{ lambda ; a:f32[]. let
    b:f32[] = custom_jvp_call[
      name=softplus
      call_jaxpr={ lambda ; c:f32[]. let d:f32[] = exp c; e:f32[] = log1p d in (e,) }
      jvp=softplus_jvp
      symbolic_zeros=False
    ] a
  in (b,) }"""

    @gf.custom_vjp
    def clip_gradient(x):
        return x * 1.0

    clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (gnp.clip(g, -1.0, 1.0),))
    assert str(gf.make_jaxpr(clip_gradient)(gnp.float32(1.0))) == """{ lambda ; a:f32[]. let
    b:f32[] = custom_vjp_call[
      name=clip_gradient
      bwd=clip_gradient_bwd
      call_jaxpr={ lambda ; c:f32[]. let d:f32[] = mul c 1.0:f32[] in (d,) }
      fwd=clip_gradient_fwd
      symbolic_zeros=False
    ] a
  in (b,) }"""


def test_cond_and_while_print_their_parameters():
    c = gf.make_jaxpr(lambda x: lax.cond(x > 0, lambda y: y * 2.0, lambda y: y + 1.0, x))(gnp.float32(1.0))
    assert "cond[\n      branches=(\n        { lambda ; " in str(c)
    w = gf.make_jaxpr(lambda x: lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x))(gnp.float32(1.0))
    text = str(w)
    keys = [line.strip().split("=")[0] for line in text.splitlines() if line.strip().startswith(("body_", "cond_"))]
    assert keys == ["body_jaxpr", "body_nconsts", "cond_jaxpr", "cond_nconsts"]


def test_scan_prints_flat_tree_descriptors_and_reads_back():
    w = gnp.ones(2, gnp.float32)

    def f(c, xs):
        return lax.scan(lambda carry, x: (carry + x * w, carry * x), c, xs, unroll=2)

    j = gf.make_jaxpr(f)(gnp.zeros(2, gnp.float32), gnp.ones((4, 2), gnp.float32))
    text = str(j)
    lines = [line.strip() for line in text.splitlines()]
    keys = [ln.split("=")[0] for ln in lines if ln.split("=")[0] in ("ft_in", "ft_out", "jaxpr", "length",
                                                                     "reverse", "unroll")]
    assert keys == ["ft_in", "ft_out", "jaxpr", "length", "reverse", "unroll"], text
    assert "ft_in=((None,), (None,), (None,))" in text
    assert "ft_out=((None,), (RightsOnly(Right(None)),))" in text
    assert "length=4" in text and "unroll=1" in text


def test_scan_checks_unroll_as_jax():
    import pytest
    with pytest.raises(ValueError, match="unroll"):
        lax.scan(lambda c, x: (c, x), gnp.float32(0), gnp.ones(3), unroll=-1)
    c, ys = lax.scan(lambda c, x: (c + x, c), gnp.float32(0), gnp.ones(3, gnp.float32), unroll=True)
    assert float(c) == 3.0
