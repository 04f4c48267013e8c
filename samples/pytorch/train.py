"""A small PyTorch training job to trace with dreamscope, on a GPU or on the CPU.

    dreamscope trace -o torch.db -- python3 samples/pytorch/train.py --steps 50 --workers 2

A synthetic image dataset read through a DataLoader with worker processes, a small CNN,
SGD. As it stands it is an unmodified PyTorch script: dreamscope's Python instrumentation
records its steps, batch waits, the workers' fetch and collate, module forwards, backward
and the optimizer with no change (docs/tracing.md, "Python and PyTorch"). --annotate adds
dreamscope's own annotations instead (each __getitem__ a `fetch` + `prep` of one batch index
in the worker, each step with the wait for its batch, forward / backward / optimizer), as
docs/annotations.md shows. With --emit-nvtx PyTorch's own per-operator NVTX ranges are
recorded too. --amp, --optimizer fused and --cuda-graphs are the real runs that the `amp`,
`fused-optimizer` and `cuda-graphs` what-ifs predict. Without a GPU it trains on the CPU
(--device), and the options that need CUDA say so. Prints its median step time
(CUDA-synchronized on a GPU), like the other samples.
"""
import argparse
import contextlib
import inspect
import shlex
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class _NoAnnotations:
    """dreamscope's annotation calls as no-ops: the script as a user would write it."""

    def __getattr__(self, _name):
        return lambda *a, **k: contextlib.nullcontext()

    @staticmethod
    def data_loader(iterable, first_batch_id=0):
        return iterable


dreamscope = _NoAnnotations()


def use_annotations():
    global dreamscope
    try:
        import dreamscope as annotations
    except ImportError:  # not traced and not on PYTHONPATH: annotations stay no-ops
        return
    dreamscope = annotations


class SyntheticImages(Dataset):
    """Each item is a whole batch, so the batch id is the index: fetch and prep are per batch."""

    def __init__(self, batches, batch_size, fetch_delay_s, augment=0):
        self.batches, self.batch_size, self.fetch_delay_s = batches, batch_size, fetch_delay_s
        self.augment = augment

    def __len__(self):
        return self.batches

    def __getitem__(self, index):
        with dreamscope.fetch(index):
            g = torch.Generator().manual_seed(index)
            raw = torch.randint(0, 256, (self.batch_size, 3, 64, 64), dtype=torch.uint8, generator=g)
            if self.fetch_delay_s:
                time.sleep(self.fetch_delay_s)
        with dreamscope.prep(index):
            x = raw.float().div_(255).sub_(0.5).div_(0.25)
            if index % 2:
                x = x.flip(3)
            # CPU-bound augmentation, as decoding and augmenting real images are: random
            # shifts and a jitter of brightness, `augment` times over the batch.
            for _ in range(self.augment):
                shift = int(torch.randint(-2, 3, (1,), generator=g))
                x = torch.roll(x, shifts=shift, dims=3).mul_(1.001).add_(-0.0005)
            y = (raw[:, 0, 0, 0] % 10).long()
        return x, y


class SmallCnn(nn.Module):
    """Two convolutions and a linear layer; `width` multiplies the channels (the GPU work grows
    as its square), `depth` adds 3x3 convolutions at the last resolution (more parameters, so
    more optimizer work per step)."""

    def __init__(self, width=1, depth=0):
        super().__init__()
        c1, c2 = 32 * width, 64 * width
        self.conv1 = nn.Conv2d(3, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.extra = nn.ModuleList(nn.Conv2d(c2, c2, 3, padding=1) for _ in range(depth))
        self.fc = nn.Linear(c2 * 16 * 16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        for conv in self.extra:
            x = F.relu(conv(x))
        return self.fc(x.flatten(1))


def make_optimizer(params, kind):
    # foreach (PyTorch's default on CUDA): a few multi-tensor kernels; for-loop: kernels per
    # parameter, launched one by one from Python; fused: one kernel per step.
    options = {"for-loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}[kind]
    accepted = inspect.signature(torch.optim.SGD).parameters
    options = {k: v for k, v in options.items() if k in accepted}
    return torch.optim.SGD(params, lr=0.01, momentum=0.9, **options)


class CapturedStep:
    """The whole training step (forward, loss, backward, optimizer) captured once in a CUDA
    graph, as PyTorch's documentation does for whole-network capture: each step copies the
    batch into static tensors and replays the graph, one launch instead of one per kernel."""

    def __init__(self, model, opt, batch_size, device, amp):
        self.x = torch.randn(batch_size, 3, 64, 64, device=device)
        self.y = torch.randint(0, 10, (batch_size,), device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm-up outside the capture: cuDNN's choices, optimizer state
                opt.zero_grad(set_to_none=True)
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                    loss = F.cross_entropy(model(self.x), self.y)
                loss.backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                self.loss = F.cross_entropy(model(self.x), self.y)
            self.loss.backward()
            opt.step()

    def __call__(self, x, y):
        self.x.copy_(x, non_blocking=True)
        self.y.copy_(y, non_blocking=True)
        with dreamscope.operation("graph_replay"):
            self.graph.replay()
        return self.loss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--fetch-delay-ms", type=float, default=0, help="emulated storage latency per batch")
    p.add_argument("--prefetch-factor", type=int, default=2,
                   help="batches each DataLoader worker prepares ahead (PyTorch's prefetch_factor; with --workers)")
    p.add_argument("--augment", type=int, default=0,
                   help="passes of CPU-bound augmentation per batch (random shifts, brightness jitter)")
    p.add_argument("--emit-nvtx", action="store_true", help="also record PyTorch's per-operator NVTX ranges")
    p.add_argument("--amp", action="store_true", help="forward and loss under torch.autocast (bfloat16)")
    p.add_argument("--optimizer", choices=["foreach", "for-loop", "fused"], default="foreach",
                   help="SGD's implementation: multi-tensor (default), a loop over parameters, or fused")
    p.add_argument("--cuda-graphs", action="store_true",
                   help="capture the whole step in a CUDA graph and replay it each step")
    p.add_argument("--width", type=int, default=1, help="channel multiplier: GPU work grows as its square")
    p.add_argument("--depth", type=int, default=0, help="extra 3x3 convolutions: more parameters")
    p.add_argument("--torch-profiler", metavar="FILE",
                   help="run under torch.profiler (CPU and CUDA activities) and export its trace to FILE: the "
                        "PyTorch profiler's own cost, for comparison with dreamscope's")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                   help="where to train: auto (CUDA where a GPU is, else the CPU)")
    p.add_argument("--no-loading", action="store_true",
                   help="no DataLoader: one batch made once and reused every step")
    p.add_argument("--annotate", action="store_true",
                   help="add dreamscope's own annotations (steps, the data pipeline, forward/backward/optimizer)")
    p.add_argument("--alternate", metavar="OPTIONS",
                   help="for benches: run blocks of --block steps alternately as given and with these data "
                        "loading options instead (e.g. '--workers 2'; --workers, --fetch-delay-ms, "
                        "--prefetch-factor, --augment, --no-loading), recording paused in the second kind "
                        "(dreamscope.pause), and print each step as 'step_ns STEP a|b NS'")
    p.add_argument("--block", type=int, default=20, help="steps in a block of --alternate")
    a = p.parse_args()
    configs = [a]
    if a.alternate is not None:
        other = p.parse_args(sys.argv[1:] + shlex.split(a.alternate))
        loading = ("workers", "fetch_delay_ms", "prefetch_factor", "augment", "no_loading", "alternate", "block")
        changed = [k for k in vars(a) if k not in loading and getattr(a, k) != getattr(other, k)]
        if changed:
            raise SystemExit("train.py: --alternate takes data loading options only, not --%s"
                             % changed[0].replace("_", "-"))
        if a.block < 1:
            raise SystemExit("train.py: --block must be at least 1")
        configs.append(other)
    cuda = torch.cuda.is_available() if a.device == "auto" else a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("train.py: --device cuda: no CUDA device here")
    if not cuda:
        needs_cuda = [o for o, on in (("--cuda-graphs", a.cuda_graphs), ("--emit-nvtx", a.emit_nvtx),
                                      ("--optimizer fused", a.optimizer == "fused")) if on]
        if needs_cuda:
            raise SystemExit("train.py: %s needs a CUDA device, and this run is on the CPU" % ", ".join(needs_cuda))
    if a.optimizer == "fused" and "fused" not in inspect.signature(torch.optim.SGD).parameters:
        raise SystemExit("train.py: --optimizer fused: this PyTorch's SGD has no fused implementation")
    if a.annotate:
        use_annotations()
    device = torch.device("cuda" if cuda else "cpu")
    if any(c.prefetch_factor < 1 for c in configs):
        raise SystemExit("train.py: --prefetch-factor must be at least 1")

    def batches_of(c):
        if c.no_loading:
            # The run a `data synthetic=true` what-if predicts: one batch, made once, every step.
            batch = SyntheticImages(1, c.batch_size, 0)[0]
            return iter(lambda: batch, None)
        loader_options = {"prefetch_factor": c.prefetch_factor} if c.workers else {}
        loader = DataLoader(SyntheticImages(a.steps, c.batch_size, c.fetch_delay_ms / 1000, c.augment),
                            batch_size=None, num_workers=c.workers, pin_memory=cuda, **loader_options)
        return iter(dreamscope.data_loader(loader))

    recording = _NoAnnotations()
    if a.alternate is not None:
        try:
            import dreamscope as recording  # traced: pause and resume the tracer
        except ImportError:
            pass
    model = SmallCnn(a.width, a.depth).to(device)
    opt = make_optimizer(model.parameters(), a.optimizer)
    captured = CapturedStep(model, opt, a.batch_size, device, a.amp) if a.cuda_graphs else None
    step_ns = []
    # Made at first use: the second kind's workers fork while recording is paused, and stay so.
    batches = [None] * len(configs)
    profiler = contextlib.nullcontext()
    if a.torch_profiler:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if cuda:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        profiler = torch.profiler.profile(activities=activities)
    with profiler as prof, torch.autograd.profiler.emit_nvtx(enabled=a.emit_nvtx):
        for i in range(a.steps):
            kind = (i // a.block) % len(configs)
            if len(configs) > 1 and i % a.block == 0:
                (recording.pause if kind else recording.resume)()
            if batches[kind] is None:
                batches[kind] = batches_of(configs[kind])
            # A step is one iteration, as PyTorch's profiler counts it: the wait for its batch
            # included, so that a data-bound job's steps show the stall.
            t0 = time.perf_counter_ns()
            with dreamscope.step(i):
                x, y = next(batches[kind])
                if captured:
                    loss = captured(x, y)
                else:
                    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                    with dreamscope.operation("forward"), torch.autocast(device.type, dtype=torch.bfloat16,
                                                                         enabled=a.amp):
                        loss = F.cross_entropy(model(x), y)
                    with dreamscope.operation("backward"):
                        opt.zero_grad(set_to_none=True)
                        loss.backward()
                    with dreamscope.operation("optimizer"):
                        opt.step()
                if cuda:
                    torch.cuda.synchronize()
            step_ns.append(time.perf_counter_ns() - t0)
            if len(configs) > 1:
                print("step_ns %d %s %d" % (i, "ab"[kind], step_ns[-1]))
            if a.torch_profiler:
                prof.step()
    if a.torch_profiler:
        prof.export_chrome_trace(a.torch_profiler)
    print(f"train.py: {len(step_ns)} steps, loss {loss.item():.4f}")
    print(f"median_step_ns {statistics.median(step_ns):.0f}")


if __name__ == "__main__":
    main()
