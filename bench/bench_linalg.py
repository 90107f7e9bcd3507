"""Linear algebra beside NumPy in one process (issue 33's figures): solve, cholesky, eigh and svd at 512 and
2048 (one matrix) and on a batch of 64 small matrices, f64 and f32, eager. graft and NumPy are timed
interleaved, call for call, and the medians compared; one JSON object per line (ratio = graft / NumPy).

    PYTHONPATH=build/python python3 bench/bench_linalg.py [--quick]
"""
import json
import statistics
import sys
import time

import numpy as np

import graft
import graft.numpy as gnp
import graft.numpy.linalg as gla

graft.config.update("jax_enable_x64", True)  # f64 rows beside NumPy's

RNG = np.random.default_rng(0)


def spd(shape, dtype):
    b = RNG.uniform(-1, 1, shape)
    a = b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])
    return a.astype(dtype)


def paired(fg, fn, reps):
    fg()
    fn()
    tg, tn = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        fg()
        t1 = time.perf_counter()
        fn()
        t2 = time.perf_counter()
        tg.append(t1 - t0)
        tn.append(t2 - t1)
    return statistics.median(tg), statistics.median(tn)


def main():
    quick = "--quick" in sys.argv
    cases = [((512, 512), 15), ((64, 32, 32), 15)] + ([] if quick else [((2048, 2048), 3)])
    for shape, reps in cases:
        for dtype in (np.float64, np.float32):
            a = spd(shape, dtype)
            b = RNG.uniform(-1, 1, shape[:-1] + (1,)).astype(dtype)
            ga, gb = gnp.asarray(a), gnp.asarray(b)
            ops = {
                "solve": (lambda: gla.solve(ga, gb).block_until_ready(), lambda: np.linalg.solve(a, b)),
                "cholesky": (lambda: gla.cholesky(ga).block_until_ready(), lambda: np.linalg.cholesky(a)),
                "eigh": (lambda: gla.eigh(ga)[1].block_until_ready(), lambda: np.linalg.eigh(a)),
                "svd": (lambda: gla.svd(ga, full_matrices=False)[0].block_until_ready(),
                        lambda: np.linalg.svd(a, full_matrices=False)),
            }
            for name, (fg, fn) in ops.items():
                tg, tn = paired(fg, fn, reps)
                print(json.dumps({"name": name, "shape": list(shape), "dtype": np.dtype(dtype).name,
                                  "graft_ms": round(tg * 1e3, 3), "numpy_ms": round(tn * 1e3, 3),
                                  "ratio": round(tg / tn, 3)}), flush=True)


if __name__ == "__main__":
    main()
