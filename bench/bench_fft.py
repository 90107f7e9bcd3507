"""FFTs beside NumPy and PyTorch in one process (issue 33's figures): one long complex transform, a batch of
real ones, a 2-D one and a batch of prime-length ones, f32 and f64, eager. graft, NumPy (pocketfft) and
PyTorch (torch.fft, MKL or pocketfft) are timed interleaved, call for call, and the medians compared; one
JSON object per line (ratio = graft / the faster peer). Then a complex elementwise chain of the kind spectral
methods and rotary embeddings apply between transforms, (z * w + conj(z)) * 2 - w on 2^20 points, under jit (one
generated loop over de-interleaved parts) beside NumPy's and PyTorch's eager operations.

    PYTHONPATH=build/python python3 bench/bench_fft.py [--quick]
"""
import json
import statistics
import sys
import time

import numpy as np

import graft
import graft.numpy as gnp

try:
    import torch
except ImportError:  # NumPy alone then
    torch = None

graft.config.update("jax_enable_x64", True)  # f64 rows beside NumPy's

RNG = np.random.default_rng(0)


def timed(fns, reps):
    for f in fns:
        f()
    times = [[] for _ in fns]
    for _ in range(reps):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            f()
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def report(name, shape, dtype, times):
    row = {"name": name, "shape": list(shape), "dtype": str(dtype), "graft_ms": round(times[0] * 1e3, 3),
           "numpy_ms": round(times[1] * 1e3, 3)}
    if torch is not None:
        row["torch_ms"] = round(times[2] * 1e3, 3)
    row["ratio_numpy"] = round(times[0] / times[1], 3)   # the goal: <= 1.2
    row["ratio"] = round(times[0] / min(times[1:]), 3)
    print(json.dumps(row), flush=True)


def main():
    quick = "--quick" in sys.argv
    cases = [("fft", (1 << 20,), True), ("rfft", (1 << 20,), False), ("rfft", (1024, 1024), False), ("fft2", (1024, 1024), True),
             ("fft", (512, 1009), True)]
    if quick:
        cases = [(n, tuple(max(8, d // 16) for d in s), c) for n, s, c in cases]
    for name, shape, is_complex in cases:
        for dtype in (np.float32, np.float64):
            x = RNG.standard_normal(shape).astype(dtype)
            if is_complex:
                x = (x + 1j * RNG.standard_normal(shape).astype(dtype)).astype(np.result_type(dtype, np.complex64))
            gx = gnp.asarray(x)
            ours = getattr(gnp.fft, name)
            ref = getattr(np.fft, name)
            fns = [lambda: ours(gx).block_until_ready(), lambda: ref(x)]
            if torch is not None:
                tx = torch.from_numpy(x)
                tref = getattr(torch.fft, name)
                fns.append(lambda: tref(tx))
            report(name, shape, x.dtype, timed(fns, 7 if quick else 15))
    n = 1 << 16 if quick else 1 << 20
    for dtype in (np.complex64, np.complex128):
        z = (RNG.standard_normal(n) + 1j * RNG.standard_normal(n)).astype(dtype)
        w = (RNG.standard_normal(n) + 1j * RNG.standard_normal(n)).astype(dtype)
        gz, gw = gnp.asarray(z), gnp.asarray(w)
        chain = graft.jit(lambda a, b: (a * b + gnp.conj(a)) * 2.0 - b)
        fns = [lambda: chain(gz, gw).block_until_ready(), lambda: (z * w + np.conj(z)) * 2.0 - w]
        if torch is not None:
            tz, tw = torch.from_numpy(z), torch.from_numpy(w)
            fns.append(lambda: (tz * tw + torch.conj(tz)) * 2.0 - tw)
        report("complex chain (jit)", (n,), z.dtype, timed(fns, 7 if quick else 15))


if __name__ == "__main__":
    main()
