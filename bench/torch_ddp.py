"""The peer of bench_distributed's data-parallel step: PyTorch's DistributedDataParallel over gloo,
2 processes x 1 thread, the MLP 784-512-512-10 with Adam on the same global batch (128), the loss read
every step; median step time over 200 steps after 20 of warm-up. Prints one JSON line."""
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

GLOBAL, WARM, STEPS = 128, 20, 200


def worker(rank, world, port, queue):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10))
    ddp = DDP(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    share = GLOBAL // world
    x = torch.randn(GLOBAL, 784)[rank * share:(rank + 1) * share].contiguous()
    y = torch.randint(0, 10, (GLOBAL,))[rank * share:(rank + 1) * share].contiguous()
    times = []
    for i in range(WARM + STEPS):
        if i == WARM:
            dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        loss.item()
        if i >= WARM:
            times.append(time.perf_counter() - t0)
    if rank == 0:
        queue.put(statistics.median(times))
    dist.destroy_process_group()


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, port, queue)) for r in range(world)]
    for p in procs:
        p.start()
    step = queue.get()
    for p in procs:
        p.join()
    print(json.dumps({"name": "torch_ddp_mlp_step", "ranks": world, "global_batch": GLOBAL,
                      "step_us": round(step * 1e6, 1), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
