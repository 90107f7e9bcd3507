"""PyTorch's eager peer of bench_control: the same 1,000-step RNN cell (batch 16, input 32, hidden 128),
forward only and forward + backward, as JSON lines (median of the timed runs, in ms)."""
import json, time
import torch

torch.manual_seed(0)
steps, batch, nin, hidden = 1000, 16, 32, 128
W = (torch.randn(hidden, hidden) * 0.05).requires_grad_()
U = (torch.randn(nin, hidden) * 0.1).requires_grad_()
b = torch.zeros(hidden, requires_grad=True)
h0 = torch.zeros(batch, hidden)
xs = torch.randn(steps, batch, nin)

def forward():
    h = h0
    for t in range(steps):
        h = torch.tanh(h @ W + xs[t] @ U + b)
    return h

def timed(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2] * 1e3

def fwd():
    with torch.no_grad():
        forward()

def fwd_bwd():
    W.grad = U.grad = b.grad = None
    forward().sum().backward()

for name, f in [("torch_rnn_1000_eager_forward", fwd), ("torch_rnn_1000_eager_value_and_grad", fwd_bwd)]:
    print(json.dumps({"name": name, "value": round(timed(f, 5), 4), "unit": "ms",
                      "threads": torch.get_num_threads()}), flush=True)
