"""ONNX export (graft/io/onnx.h): models checked by the onnx package (checker with full shape
inference) and evaluated node by node in NumPy against graft's outputs: an MLP, a small CNN, the
main job's classifier-style preprocessing, a batched dot_general."""
import numpy as np
import pytest

import graft
import graft.numpy as gnp

onnx = pytest.importorskip("onnx")  # Debian's python3-onnx (tools/test.sh installs it)
from onnx import numpy_helper  # noqa: E402


def run_onnx(model, feeds):
    """A NumPy evaluator for the operators graft emits."""
    env = dict(feeds)
    for init in model.graph.initializer:
        env[init.name] = numpy_helper.to_array(init)
    for node in model.graph.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in node.attribute}
        x = [env[i] for i in node.input]
        op = node.op_type
        binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Max": np.maximum,
                  "Min": np.minimum, "Greater": np.greater, "Less": np.less, "Equal": np.equal,
                  "GreaterOrEqual": np.greater_equal, "LessOrEqual": np.less_equal, "Pow": np.power}
        unary = {"Exp": np.exp, "Log": np.log, "Tanh": np.tanh, "Neg": np.negative, "Sqrt": np.sqrt, "Abs": np.abs,
                 "Identity": lambda v: v, "Not": np.logical_not, "Reciprocal": np.reciprocal,
                 "Sigmoid": lambda v: 1 / (1 + np.exp(-v))}
        if op in binary:
            y = binary[op](x[0], x[1]).astype(np.result_type(x[0], x[1]) if op not in (
                "Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual") else bool)
        elif op in unary:
            y = unary[op](x[0])
        elif op == "MatMul":
            y = x[0] @ x[1]
        elif op == "Einsum":
            y = np.einsum(a["equation"].decode(), *x)
        elif op == "Reshape":
            y = x[0].reshape(x[1])
        elif op == "Expand":
            y = np.broadcast_to(x[0], x[1]).copy()
        elif op == "Transpose":
            y = x[0].transpose(a["perm"])
        elif op == "Where":
            y = np.where(x[0], x[1], x[2])
        elif op == "Cast":
            y = x[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])
        elif op == "ReduceSum":
            y = x[0].sum(axis=tuple(x[1]), keepdims=bool(a["keepdims"]))
        elif op in ("ReduceMax", "ReduceMin"):
            f = np.max if op == "ReduceMax" else np.min
            y = f(x[0], axis=tuple(a["axes"]), keepdims=bool(a["keepdims"]))
        elif op in ("ArgMax", "ArgMin"):
            f = np.argmax if op == "ArgMax" else np.argmin
            y = f(x[0], axis=a["axis"]).astype(np.int64)
        elif op == "Conv":
            xs, w = x
            pads = a["pads"]
            xs = np.pad(xs, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
            win = np.lib.stride_tricks.sliding_window_view(xs, w.shape[2:], axis=(2, 3))
            s = a["strides"]
            win = win[:, :, ::s[0], ::s[1]]
            y = np.einsum("nchwkl,ockl->nohw", win, w).astype(xs.dtype)
        elif op == "MaxPool":
            k, s = a["kernel_shape"], a["strides"]
            win = np.lib.stride_tricks.sliding_window_view(x[0], k, axis=(2, 3))[:, :, ::s[0], ::s[1]]
            y = win.max(axis=(4, 5))
        else:
            raise NotImplementedError(op)
        env[node.output[0]] = np.asarray(y)
    return [env[o.name] for o in model.graph.output]


def check(exp, *inputs, rtol=1e-5, atol=1e-5):
    model = onnx.load_from_string(exp.to_onnx())
    onnx.checker.check_model(model, full_check=True)  # includes strict shape inference
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    for out, typ in zip(inferred.graph.output, exp.out_types):
        dims = [d.dim_value for d in out.type.tensor_type.shape.dim]
        assert typ.split("[")[1].rstrip("]") == ",".join(map(str, dims))
    got = run_onnx(model, {n: np.asarray(x) for n, x in zip(exp.in_names, inputs)})
    want = exp(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return model


def test_mlp_classifier_with_preprocessing():
    rng = np.random.default_rng(0)
    w1, b1 = rng.standard_normal((784, 32)).astype(np.float32) * 0.05, np.zeros(32, np.float32)
    w2, b2 = rng.standard_normal((32, 10)).astype(np.float32) * 0.1, np.ones(10, np.float32)

    def classify(images):
        x = gnp.reshape((images.astype(gnp.float32) / 255.0 - 0.3) / 0.35, (images.shape[0], 784))
        h = graft.nn.relu(gnp.dot(x, gnp.asarray(w1)) + gnp.asarray(b1))
        logits = gnp.dot(h, gnp.asarray(w2)) + gnp.asarray(b2)
        return logits, gnp.argmax(logits, axis=1)

    images = graft.numpy.asarray(rng.integers(0, 256, (6, 28, 28)).astype(np.uint8))
    exp = graft.export.export(classify, name="mlp", in_names=["images"], out_names=["logits", "labels"])(images)
    model = check(exp, images)
    assert {n.op_type for n in model.graph.node} >= {"MatMul", "Cast", "ArgMax", "Where"}


def test_cnn_and_general_dots():
    rng = np.random.default_rng(1)
    k1 = gnp.asarray(rng.standard_normal((4, 2, 3, 3)).astype(np.float32) * 0.3)

    def cnn(x):
        y = graft._graft.conv2d(x, k1, (1, 1), "SAME", (1, 1), 1)
        y = graft.nn.max_pool2d(graft.nn.relu(y), (2, 2))
        return gnp.sum(gnp.tanh(y), axis=(2, 3))

    x = gnp.asarray(rng.standard_normal((2, 2, 6, 6)).astype(np.float32))
    check(graft.export.export(cnn)(x), x)

    def batched(a, b):
        return gnp.einsum("bij,bjk->bik", a, b) * 2.0 + gnp.transpose(a, (0, 2, 1)).sum()

    a = gnp.asarray(rng.standard_normal((3, 4, 5)).astype(np.float32))
    b = gnp.asarray(rng.standard_normal((3, 5, 2)).astype(np.float32))
    check(graft.export.export(batched)(a, b), a, b)


def test_unsupported_primitives_are_named():
    exp = graft.export.export(lambda x: gnp.sort(x))(gnp.ones(3))
    with pytest.raises(NotImplementedError, match="sort"):
        exp.to_onnx()


@pytest.mark.parametrize("name,fn,arg", [
    ("complex", lambda x: gnp.abs(x * 1j), np.ones(3, np.float32)),
    ("fft", lambda x: gnp.abs(gnp.fft.rfft(x)), np.ones(4, np.float32)),
    ("cholesky", lambda x: gnp.linalg.cholesky(x), np.eye(3, dtype=np.float32)),
    ("lgamma", lambda x: graft.scipy.special.gammaln(x), np.ones(3, np.float32)),
])
def test_numerics_without_an_onnx_form_are_named(name, fn, arg):
    # complex values, the FFT, the decompositions and the special functions have no ONNX form here: the
    # export says which operation stops it rather than write a wrong graph
    exp = graft.export.export(fn)(gnp.asarray(arg))
    with pytest.raises(NotImplementedError, match=name):
        exp.to_onnx()
    np.testing.assert_allclose(np.asarray(exp.call(gnp.asarray(arg))), np.asarray(fn(gnp.asarray(arg))))
