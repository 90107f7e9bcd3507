"""graft's .npy / .npz files against NumPy's own reader and writer."""
import numpy as np

import graft as gf
import graft.numpy as gnp


def test_numpy_reads_what_graft_writes(tmp_path):
    x = gnp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    gf.io.save_npy(tmp_path / "x.npy", x)
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), np.asarray(x))
    gf.io.save_npz(tmp_path / "m.npz", w=x, b=gnp.arange(3, dtype=gnp.int32), flag=gnp.asarray([True, False]))
    with np.load(tmp_path / "m.npz") as z:
        assert sorted(z.files) == ["b", "flag", "w"]
        np.testing.assert_array_equal(z["w"], np.asarray(x))
        assert z["b"].dtype == np.int32 and z["flag"].dtype == np.bool_


def test_graft_reads_what_numpy_writes(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"a": rng.standard_normal((4, 5)), "i": np.arange(7, dtype=np.int16), "s": np.float32(3.5),
              "f": np.asfortranarray(rng.standard_normal((3, 2))), "be": np.arange(4, dtype=">i4"),
              "h": np.arange(3, dtype=np.float16), "u": np.arange(5, dtype=np.uint64)}
    for k, v in arrays.items():
        np.save(tmp_path / f"{k}.npy", v)
        np.testing.assert_array_equal(np.asarray(gf.io.load_npy(tmp_path / f"{k}.npy")), v, err_msg=k)
    np.savez(tmp_path / "plain.npz", **arrays)
    np.savez_compressed(tmp_path / "packed.npz", **arrays)
    for f in ("plain.npz", "packed.npz"):
        got = gf.io.load_npz(tmp_path / f)
        assert sorted(got) == sorted(arrays)
        for k, v in arrays.items():
            np.testing.assert_array_equal(np.asarray(got[k]), v, err_msg=f"{f}:{k}")
