# The PyTorch peer of bench/bench_cuda.cpp: the same figures on the same GPU, one line each.
import time
import torch

dev = "cuda"
a = torch.ones(1, device=dev)
b = torch.ones(1, device=dev)
for _ in range(1000):
    a + b
torch.cuda.synchronize()
n = 100000
t = time.perf_counter()
for _ in range(n):
    c = a + b
s = time.perf_counter() - t
torch.cuda.synchronize()
print(f"torch_eager_add_us {s / n * 1e6:.3f}")


def time_it(f, reps):
    f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / reps


N = 8192
for name, dt, tf32 in (("f32", torch.float32, False), ("tf32", torch.float32, True), ("bf16", torch.bfloat16, False)):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    x = torch.randn(N, N, device=dev, dtype=dt)
    y = torch.randn(N, N, device=dev, dtype=dt)
    s = time_it(lambda: torch.matmul(x, y), 10)
    print(f"torch_matmul_{name}_tflops {2.0 * N ** 3 / s / 1e12:.1f}")
torch.backends.cuda.matmul.allow_tf32 = False

n = 1 << 28
x = torch.ones(n, device=dev)
y = torch.empty(n, device=dev)
z = torch.ones(n, device=dev)
s = time_it(lambda: y.copy_(x), 20)
print(f"torch_copy_gbs {2.0 * n * 4 / s / 1e9:.0f}")
s = time_it(lambda: torch.neg(x), 20)
print(f"torch_neg_gbs {2.0 * n * 4 / s / 1e9:.0f}")
s = time_it(lambda: x + z, 20)
print(f"torch_add_gbs {3.0 * n * 4 / s / 1e9:.0f}")
