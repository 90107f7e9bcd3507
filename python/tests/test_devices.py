"""Devices from Python: device_put commits an array, .device names where it lives, block_until_ready,
default_device as a context, and clear errors for devices that do not exist here."""
import shutil
import subprocess

import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp


def have_gpu():
    return shutil.which("nvidia-smi") is not None and subprocess.run(["nvidia-smi"], capture_output=True).returncode == 0


def test_device_put_and_device():
    x = gnp.arange(6.0).reshape(2, 3)
    assert x.device == "cpu:0"
    y = gf.device_put(x, "cpu")
    assert y.device == "cpu:0"
    assert y.block_until_ready() is not None
    np.testing.assert_array_equal(np.asarray(y), np.arange(6.0).reshape(2, 3))
    tree = gf.device_put({"a": x, "b": [x, x]}, "cpu")
    assert tree["b"][1].device == "cpu:0"
    assert gf.device_put(x).device == "cpu:0"  # the default device


def test_unknown_and_unavailable_devices():
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        gf.device_put(gnp.ones(3), "tpu")
    if not have_gpu():
        with pytest.raises(ValueError, match="cuda:0 is not available"):
            gf.device_put(gnp.ones(3), "cuda")


def test_default_device_context():
    with gf.default_device("cpu"):
        z = gnp.zeros(3)
        assert z.device == "cpu:0"
    with pytest.raises(ValueError, match="unknown device"):
        gf.default_device("nowhere")


@pytest.mark.skipif(not have_gpu(), reason="no GPU")
def test_on_a_gpu():
    x = gf.device_put(gnp.arange(8.0), "cuda")
    assert x.device == "cuda:0"
    y = gf.jit(lambda a: gnp.tanh(a) * 2.0)(x)
    assert y.device == "cuda:0"
    np.testing.assert_allclose(np.asarray(y), np.tanh(np.arange(8.0)) * 2.0, rtol=1e-6)
    with gf.default_device("cuda"):
        assert gnp.ones(2).device == "cuda:0"
