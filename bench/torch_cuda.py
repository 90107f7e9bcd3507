# The PyTorch peer of bench/bench_cuda.cpp: the same figures on the same GPU, one line each.
import os
import time
import torch

COMPILE = os.environ.get("TORCH_COMPILE", "1") != "0"  # torch.compile's peers take a minute to compile

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

# ---- issue 18: jitted fused loops and the main job's training step ----------------------------------
import torch.nn.functional as F

n = 1 << 28
x = torch.randn(n, device=dev)
chain = lambda x: torch.tanh(x) * 0.5 + x * x - 1
print(f"torch_chain_eager_gbs {2.0 * n * 4 / time_it(lambda: chain(x), 20) / 1e9:.0f}")
if COMPILE:
    cchain = torch.compile(chain)
    print(f"torch_chain_compile_gbs {2.0 * n * 4 / time_it(lambda: cchain(x), 20) / 1e9:.0f}")
del x
R = 8192
m = torch.randn(R, R, device=dev)
print(f"torch_softmax_gbs {2.0 * R * R * 4 / time_it(lambda: torch.softmax(m, -1), 20) / 1e9:.0f}")
if COMPILE:
    csm = torch.compile(lambda m: torch.softmax(m, -1))
    print(f"torch_softmax_compile_gbs {2.0 * R * R * 4 / time_it(lambda: csm(m), 20) / 1e9:.0f}")
del m


class Block(torch.nn.Module):
    """A pre-norm transformer block as graft's nn::TransformerBlock (GELU tanh MLP x4, causal attention)."""

    def __init__(self, d, h):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.h = h

    def forward(self, x):
        b, t, d = x.shape
        y = self.ln1(x)
        split = lambda z: z.view(b, t, self.h, d // self.h).transpose(1, 2)
        o = F.scaled_dot_product_attention(split(self.q(y)), split(self.k(y)), split(self.v(y)), is_causal=True)
        x = x + self.o(o.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class LM(torch.nn.Module):
    """The main job's byte-level transformer: vocab 256, width 128, 4 heads, 2 blocks, learned positions."""

    def __init__(self, vocab=256, d=128, h=4, layers=2, t=128):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Embedding(t, d)
        self.blocks = torch.nn.ModuleList(Block(d, h) for _ in range(layers))
        self.ln, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x)).flatten(0, 1)


def model_and_batch(name, b):
    if name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 10))
        return model, torch.randn(b, 784, device=dev), torch.randint(0, 10, (b,), device=dev)
    if name == "cnn":
        model = torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Conv2d(32, 64, 3),
                                    torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(1600, 128),
                                    torch.nn.ReLU(), torch.nn.Linear(128, 10))
        return model, torch.randn(b, 1, 28, 28, device=dev), torch.randint(0, 10, (b,), device=dev)
    return LM(), torch.randint(0, 256, (b, 128), device=dev), torch.randint(0, 256, (b * 128,), device=dev)


def step_ms(name, b, mode):
    torch.manual_seed(0)
    model, x, y = model_and_batch(name, b)
    model = model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=mode == "graph")

    def step():
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = step
    if mode == "compile":
        run = torch.compile(step)
    if mode == "graph":
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        run = g.replay
    times = []
    for i in range(220):
        t = time.perf_counter()
        run()
        torch.cuda.synchronize()
        if i >= 20:
            times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2]


# eager and CUDA graphs for every model first; torch.compile's (a minute of compiling each) last
for modes in (("eager", "graph"), ("compile",) if COMPILE else ()):
    for name, sizes in (("mlp", (128, 4096)), ("cnn", (128,)), ("transformer", (8, 64))):
        for tf32 in (False, True):  # f32 products, then TF32's (torch.backends.cuda.matmul.allow_tf32)
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            tag = "_tf32" if tf32 else ""
            for b in sizes:
                for mode in modes:
                    try:
                        print(f"torch_{name}_step_b{b}{tag}_{mode}_ms {step_ms(name, b, mode):.4f}")
                    except Exception as e:  # a mode this PyTorch cannot run is reported, not fatal
                        print(f"torch_{name}_step_b{b}{tag}_{mode}_ms failed: {type(e).__name__}: {e}")
torch.backends.cuda.matmul.allow_tf32 = False
