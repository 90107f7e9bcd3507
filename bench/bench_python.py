"""Python front end overheads beside PyTorch in one process (Debian's python3-torch): the eager cost of
`a + b` on 1-element arrays, a cached jitted call, grad of a small function. Medians of 7 repetitions
of N calls each (statements timed with timeit as written); one JSON object per line."""
import json
import statistics
import sys
import time
import timeit

import numpy as np
import torch

import graft as gf
import graft.numpy as gnp


def per_call_ns(f, n=20000, reps=7):
    """f: a statement (timed as written, no extra call) or a callable."""
    if isinstance(f, str):
        frame = sys._getframe(1)
        t = timeit.Timer(f, globals={**frame.f_globals, **frame.f_locals})
        t.timeit(10)
        return statistics.median(t.timeit(n) / n * 1e9 for _ in range(reps))
    f()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            f()
        times.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(times)


def emit(name, graft_ns, torch_ns=None):
    o = {"name": name, "graft_ns": round(graft_ns, 1)}
    if torch_ns is not None:
        o.update(torch_ns=round(torch_ns, 1), ratio=round(graft_ns / torch_ns, 3))
    print(json.dumps(o), flush=True)


def main():
    torch.set_num_threads(1)
    a, b = gnp.asarray(np.ones(1, np.float32)), gnp.asarray(np.ones(1, np.float32))
    ta, tb = torch.ones(1), torch.ones(1)
    # statements timed as written (timeit), so neither side pays for a wrapping Python call
    emit("a + b (1-element f32)", per_call_ns("a + b"), per_call_ns("ta + tb"))
    emit("a * 2.0 (Python scalar)", per_call_ns("a * 2.0"), per_call_ns("ta * 2.0"))
    emit("sin(a)", per_call_ns("gnp.sin(a)"), per_call_ns("torch.sin(ta)"))
    f = gf.jit(lambda x: x + 1)
    emit("jit(x + 1) cached call", per_call_ns("f(a)"))
    ident = gf.jit(lambda x: x)
    emit("jit(identity) cached call", per_call_ns("ident(a)"))
    three = gf.jit(lambda x, y, z: (x * y + z, x - z))
    emit("jit(3 args, 2 outputs) cached call", per_call_ns("three(a, b, a)"))
    g = gf.grad(lambda x: gnp.sum(gnp.sin(x)))

    def torch_grad():
        x = ta.clone().requires_grad_()
        (y,) = torch.autograd.grad(torch.sin(x).sum(), x)
        return y

    emit("grad of sum(sin(x))", per_call_ns(lambda: g(a), n=2000), per_call_ns(torch_grad, n=2000))


if __name__ == "__main__":
    main()
