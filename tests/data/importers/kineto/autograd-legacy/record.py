#!/usr/bin/python3
# Records the fixtures of this folder with Debian's python3-torch (1.13.1+dfsg, built without
# Kineto: torch.autograd.kineto_available() is False), whose export_chrome_trace writes the
# legacy exporter's bare JSON array (torch/autograd/profiler_util.py, EventList.export_chrome_trace).
#
#   cd tests/data/importers/kineto/autograd-legacy && /usr/bin/python3 record.py
#
# Times differ from run to run; the tests count what the files hold, not how long it took.
import os
import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

assert not torch.autograd.kineto_available(), "this records the exporter of builds without Kineto"
torch.manual_seed(0)

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(4, 8), torch.randn(4, 2)


def train_step():
    opt.zero_grad()
    with record_function("forward"):
        out = model(x)
    loss = ((out - y) ** 2).mean()
    with record_function("backward"):
        loss.backward()
    opt.step()


def autograd_profile_train():
    # The torch.autograd.profiler API, two training steps with user ranges.
    with torch.autograd.profiler.profile() as prof:
        for _ in range(2):
            train_step()
    prof.export_chrome_trace("autograd-profile-train.json")


def profiler_schedule():
    # torch.profiler with a schedule (ProfilerStep#N ranges), shapes, memory and stacks asked
    # for: the exporter writes none of them.
    def ready(prof):
        prof.export_chrome_trace("profiler-schedule-steps.json")

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2),
                 on_trace_ready=ready, record_shapes=True, profile_memory=True, with_stack=True) as prof:
        for _ in range(5):
            train_step()
            prof.step()


@torch.jit.script
def matmul_add(a):
    return torch.mm(a, a) + 1


@torch.jit.script
def forked(a):
    futures = [torch.jit.fork(matmul_add, a) for _ in range(3)]
    return [torch.jit.wait(f) for f in futures]


def legacy_fork_threads():
    # torch.autograd.profiler_legacy: float µs (cpu_elapsed_us, with binary-float tails such
    # as 16.446000000000005); TorchScript forks run on inter-op threads, so several tids.
    a = torch.randn(256, 256)
    forked(a)
    forked(a)
    with torch.autograd.profiler_legacy.profile() as prof:
        with record_function("forks"):
            forked(a)
    prof.export_chrome_trace("profiler-legacy-fork-threads.json")


def remote_add(a, b):
    return torch.add(a, b) * 2


def rpc_worker(rank):
    import torch.distributed.rpc as rpc
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29533"
    options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=30, _transports=["uv"])
    rpc.init_rpc(f"w{rank}", rank=rank, world_size=2, rpc_backend_options=options)
    if rank == 0:
        t = torch.ones(4)
        with torch.autograd.profiler_legacy.profile() as prof:
            with record_function("rpc_call"):
                rpc.rpc_sync("w1", remote_add, args=(t, t))
        prof.export_chrome_trace("profiler-legacy-rpc.json")
    rpc.shutdown()


def legacy_rpc():
    # An RPC to a second process: the callee's events come back as remote events, whose tid
    # the exporter writes as the string " node_id:1, thread_id:7 ".
    import torch.multiprocessing as mp
    mp.spawn(rpc_worker, nprocs=2)


def quote_in_name():
    # The exporter writes names with "%s", unescaped: a quote in a range's name makes the
    # file invalid JSON after the events before it.
    with torch.autograd.profiler.profile() as prof:
        torch.ones(2).add(1)
        with record_function('say "hi"'):
            torch.ones(2).mul(2)
    prof.export_chrome_trace("autograd-profile-quote-in-name.json")


if __name__ == "__main__":
    print("torch", torch.__version__, "python", sys.version.split()[0])
    torch.set_num_interop_threads(4)  # before any parallel work: the forks' threads
    autograd_profile_train()
    profiler_schedule()
    legacy_fork_threads()
    quote_in_name()
    legacy_rpc()
