#!/usr/bin/env python3
"""How every command's time, memory and output grow with its input, shape by shape (issue 38).

For each input shape (a trace that is large in one count: nesting depth, steps, overlapping
ranges, flows, threads, ranks...) and each command that reads it, this writes the input at a
size N and at 8N, runs the command on both, and prints t(N), t(8N), their ratio and the bound
an n log n path keeps to:

    bound = 8 * log2(8N) / log2(N)        (8.0 for a linear path, ~10 at N = 1000)

A quadratic path reaches 64, a cubic one 512. A row is OVER when 8N costs more than the bound
times a slack factor allows (below), in time, in peak memory or in the report's size. The
shapes are those of ../shared/data/fuzz/round2/gen_big.py and gen_db.py (the fuzzing campaign
that found the quadratic paths of issue 38), written here again so that the bench needs nothing
outside the repository, and more: deep stacks in many steps, sliding-window overlaps, a flow per
launch, threads whose long ranges may wait on each other, a folder of many ranks, many ranks in
the same collectives.

Usage:
    bench/complexity.py                    # every shape, every command: the table of docs/limits.md
    bench/complexity.py --quick            # small sizes, best of a few runs: the CTest gate
    bench/complexity.py --only nested,steps --runs 5 --json out.json
    bench/complexity.py --sizes nested=4000,flat=100000    # or --sizes 2000: every shape at N=2000

Options: --bin DIR (the folder holding `dreamscope`; default build/release/bin), --only SHAPE
(comma-separated, repeatable), --command CMD (the same, for commands), --runs R (runs a size; the
median is shown, or with --quick the best), --json FILE (every run of every row), --keep DIR
(write the inputs there and keep them), --list (the shapes, their sizes and the commands).
Progress goes to stderr when it is a terminal. Exit status: 0 all OK, 1 a row OVER or a command
failed, 2 bad usage or no `dreamscope`.

What is timed is the CPU time of the command's process (user + system, all threads, from
wait4), not its wall time: on a shared machine the wall time of a run says as much about the
neighbours as about the run (a quick run took 55 CPU-s and 113 s of wall time at a load of 6
on 2 cores), the CPU time much less. The wall time is printed beside it.

The slack. A command at 8N is OVER when
    t(8N) > SLACK * bound * t(N) + FLOOR_S        (CPU time, SLACK 1.5, FLOOR_S 0.03 s)
    rss(8N) > SLACK * bound * rss(N)              (peak resident memory of the process)
    out(8N) > bound * out(N) + 64 KiB             (the report's bytes: deterministic, no slack)
Why these: the machine this runs on in CI has 2 cores shared with compilers and other tests.
Even in CPU time a run there is slowed by a neighbour (caches, memory bandwidth), by up to ~1.3x
in either size. 1.5x on a bound of ~10 leaves a limit of ~15, a quarter of what a quadratic path
gives (64), while linear paths measure 5-9. The floor covers sizes where t(N) is a few ms of
process start-up, whose 8N would look superlinear without any work behind it. With --quick N
runs twice and 8N once, a row that looks OVER runs both once more (--retries), and each size is
judged on its best (least disturbed) time: noise only ever adds time, so it would have to
strike twice to fail a linear path. Also with --quick, a run at 8N is stopped once it has used
1.5x its limit (shown as ">"): a quadratic path costs the gate about 25 t(N), not 64 t(N).
Sizes are chosen so that the slowest command takes 0.05-0.3 s at N in the full run, and so that
in the quick one a quadratic path at 8N is well past its limit (the quadratic paths of issue 38
all stop at the cap) while the whole quick run takes about a minute of CPU.
"""
import argparse
import json
import math
import os
import shutil
import signal
import sqlite3
import statistics
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A real trace of the tracer (cuda_train on a GPU: steps, forward/backward ranges, kernels,
# copies, flows) that the .db shapes add their rows to.
BASE_DB = os.path.join(REPO, "tests", "data", "gpu", "cuda_train.db")

SLACK = 1.5
FLOOR_S = 0.03
OUT_FLOOR_BYTES = 64 * 1024
CLEARLY_OVER = 1.5  # with --quick, a run at 8N is stopped this far past its limit

# ---------------------------------------------------------------------------------------------
# Input shapes. Each writes one input of size n and returns its path (a file or a folder).
# Kineto JSON is written as text, not through json.dump: a few million events take seconds
# instead of tens of seconds.

DEVICE = ('"deviceProperties":[{"id":0,"name":"NVIDIA A100-SXM4-80GB","numSms":108,'
          '"computeMajor":8,"computeMinor":0,"totalGlobalMem":85899345920}]')


def write_kineto(path, events, extra=""):
    with open(path, "w") as f:
        f.write('{"schemaVersion":1,' + DEVICE + extra + ',"traceEvents":[')
        first = True
        for e in events:
            if not first:
                f.write(",")
            f.write(e)
            first = False
        f.write("]}\n")
    return path


def X(cat, name, pid, tid, ts, dur, args=""):
    a = ',"args":{' + args + "}" if args else ""
    return f'{{"ph":"X","cat":"{cat}","name":"{name}","pid":{pid},"tid":{tid},"ts":{ts},"dur":{dur}{a}}}'


def step(i, ts, dur, tid=1):
    return X("user_annotation", f"ProfilerStep#{i}", 1, tid, ts, dur)


def launch(ts, corr, dur=5, tid=1):
    return X("cuda_runtime", "cudaLaunchKernel", 1, tid, ts, dur, f'"correlation":{corr},"cbid":211')


def kernel(name, ts, corr, stream=7, dur=10):
    return X("kernel", name, 0, stream, ts, dur,
             f'"stream":{stream},"device":0,"correlation":{corr},"grid":[1,1,1],"block":[128,1,1]')


def flow(fid, ts_from, ts_to, stream=7):
    return (f'{{"ph":"s","cat":"ac2g","name":"ac2g","id":{fid},"pid":1,"tid":1,"ts":{ts_from}}},'
            f'{{"ph":"f","cat":"ac2g","name":"ac2g","id":{fid},"pid":0,"tid":{stream},"ts":{ts_to},"bp":"e"}}')


def g_flat(n):  # n short sequential operators in one step
    yield step(1, 0, 3 * n + 10)
    for i in range(n):
        yield X("cpu_op", "aten::add", 1, 1, 1 + 3 * i, 2)


def g_nested(n):  # one stack n deep: each range inside the one before
    for i in range(n):
        yield X("cpu_op", f"op{i % 7}", 1, 1, i, 2 * n - 2 * i)


DEPTH = 100


def g_deep(n):  # n/100 steps, each one stack 100 deep (Python frames) whose leaf launches a kernel
    for s in range(max(1, n // DEPTH)):
        t0 = s * 1000
        yield step(s, t0, 999)
        for d in range(DEPTH):
            yield X("python_function", f"f{d}", 1, 1, t0 + 1 + d, 2 * DEPTH - 2 * d + 100)
        corr = s + 1
        yield launch(t0 + DEPTH + 2, corr)
        yield kernel("sgemm", t0 + DEPTH + 20, corr)
        yield flow(corr, t0 + DEPTH + 2, t0 + DEPTH + 20)


def g_overlap(n):  # n ranges, each overlapping all the ones after it (none nested)
    for i in range(n):
        yield X("cpu_op", "op", 1, 1, i, n)


def g_overlap_window(n):  # n ranges, each overlapping the next 63 (a sliding window, as async work is)
    for i in range(n):
        yield X("cpu_op", f"op{i % 5}", 1, 1, 10 * i, 640 - 1)


def g_steps(n):  # n ProfilerSteps of one operator each
    for i in range(n):
        yield step(i, 10 * i, 9)
        yield X("cpu_op", "aten::mm", 1, 1, 10 * i + 1, 5)


def g_flows(n):  # n launches, each with its own kernel and its own flow arrow, in 100-launch steps
    for i in range(n):
        if i % 100 == 0:
            yield step(i // 100, 20 * i, 2000)
        yield launch(1 + 20 * i, i + 1)
        yield kernel("sgemm", 8 + 20 * i, i + 1)
        yield flow(i + 1, 1 + 20 * i, 8 + 20 * i)


def g_flows1(n):  # n launches whose flows (distinct ids) all end at one kernel
    yield kernel("k", 10 * n + 10, 1, dur=5)
    for i in range(n):
        yield launch(10 * i, i + 2)
        yield flow(i + 2, 10 * i, 10 * n + 10)


def g_corr1(n):  # n launches sharing one correlation id with one kernel
    yield kernel("k", 10 * n + 10, 1, dur=5)
    for i in range(n):
        yield launch(10 * i, 1)


def g_syncs(n):  # n launches, kernels and a cudaDeviceSynchronize after each
    yield step(1, 0, 20 * n + 100)
    for i in range(n):
        yield launch(1 + 20 * i, i + 1)
        yield kernel("sgemm", 8 + 20 * i, i + 1)
        yield X("cuda_runtime", "cudaDeviceSynchronize", 1, 1, 6 + 20 * i, 1,
                f'"correlation":{10 ** 8 + i},"cbid":165')


def g_device_syncs(n):  # n streams, one kernel each, and a cudaDeviceSynchronize after each launch
    # Each device-wide sync waits for every stream of its process (graph/passes/cuda_sync.cpp,
    # the simulator's WaitStreams): n syncs over n streams, of which one changed since the
    # sync before.
    yield step(1, 0, 20 * n + 100)
    for i in range(n):
        yield launch(1 + 20 * i, i + 1)
        yield kernel("sgemm", 8 + 20 * i, i + 1, stream=100 + i, dur=5)
        yield X("cuda_runtime", "cudaDeviceSynchronize", 1, 1, 7 + 20 * i, 8,
                f'"correlation":{10 ** 8 + i},"cbid":165')


def g_left_out_syncs(n):  # n streams, one kernel each, and a device sync after each launch that returns too early
    # Sync i returns 2 us before kernel i ends: the builder counts that (sync_target_after_return)
    # and leaves stream i out of the sync, which still waits for the other n - 1 streams
    # (graph/passes/cuda_sync.cpp); no two syncs leave out the same stream.
    yield step(1, 0, 20 * n + 100)
    for i in range(n):
        yield launch(1 + 20 * i, i + 1)
        yield kernel("sgemm", 8 + 20 * i, i + 1, stream=100 + i, dur=5)
        yield X("cuda_runtime", "cudaDeviceSynchronize", 1, 1, 7 + 20 * i, 4,
                f'"correlation":{10 ** 8 + i},"cbid":165')


def g_running_syncs(n):  # n streams, each a kernel queued behind a long one, and n threads syncing meanwhile
    # When the syncs begin (1 ns apart, one a thread), every stream's last issued kernel is the
    # queued one, which starts only as the long one ends: each sync finds n streams' last
    # tasks still running (the simulator's WaitStreams).
    for i in range(n):
        yield launch(10 * i, 2 * i + 1)
    for i in range(n):
        yield launch(10 * (n + i), 2 * i + 2)
    t1 = 20 * n + 10
    for i in range(n):
        yield kernel("long", 10 * i + 6, 2 * i + 1, stream=100 + i, dur=t1 + 100 - (10 * i + 6))
        yield kernel("queued", t1 + 100, 2 * i + 2, stream=100 + i, dur=5)
    for j in range(n):
        yield X("cuda_runtime", "cudaDeviceSynchronize", 1, j + 2, f"{t1 + j / 1000:.3f}", 200,
                f'"correlation":{10 ** 8 + j},"cbid":165')


def g_knames(n):  # n kernels of n distinct names
    yield step(1, 0, 20 * n + 100)
    for i in range(n):
        yield launch(1 + 20 * i, i + 1)
        yield kernel(f"k{i}", 8 + 20 * i, i + 1)


def g_threads(n):  # n threads, one operator each
    for i in range(n):
        yield X("cpu_op", "op", 1, i + 1, i, 5)


def g_waiting_threads(n):  # n threads, each with a 1 ms operator: a wait that another thread may serve
    for i in range(n):
        yield X("cpu_op", "op", 1, i + 1, 10 * i, 1000)


def g_overlap_waits(n):  # n threads, each with a 1 ms operator, all of them overlapping
    # Each starts 1 ns after the one before: every operator is a wait (0.5 ms or more,
    # graph/passes/inferred_waits.cpp) with every later thread's operator starting inside it
    # (in waiting_threads, 10 us apart, only the next 100 do).
    for i in range(n):
        yield X("cpu_op", "op", 1, i + 1, f"{i / 1000:.3f}", 1000)


def g_busy_handoffs(n):  # n/2 threads busy as n/2 long waits begin, each ending a later run just before they end
    # The waits: 0.95 ms operators 1 ns apart (slack 200 us). The other threads: a 200 us
    # operator across every wait's start, then a 400 us one ending 50 us before the waits end:
    # a run that ends where a wait's burst would, on a thread busy when the wait began, so no
    # burst (graph/passes/inferred_waits.cpp).
    waits = n // 2
    for i in range(waits):
        yield X("cpu_op", "op", 1, i + 1, f"{100 + i / 1000:.3f}", 950)
    for j in range(n - waits):
        yield X("cpu_op", "op", 1, waits + j + 1, 0, 200)
        yield X("cpu_op", "op", 1, waits + j + 1, 600, 400)


LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def g_shared_cores(n):  # n CPU ranges on n/4 threads, a quarter of them running at once
    # The loader operator is what `whatif -s data -p workers=1` moves: that turns on sharing
    # the cores (`cores`) for every thread. Each range is 90 us, under the 0.5 ms from which a
    # range may be taken for a wait handed to another thread (graph/passes/inferred_waits.cpp).
    yield X("cpu_op", LOADER, 1, 1, 0, 5)
    threads = max(1, n // 4)
    for k in range(4):
        for j in range(threads):
            yield X("cpu_op", f"op{j % 5}", 1, j + 2, f"{10 + 100 * k + j / 1000:.3f}", 90)


def g_streams(n):  # n streams, one kernel each
    for i in range(n):
        yield launch(10 * i, i + 1)
        yield kernel("k", 10 * i + 6, i + 1, stream=100 + i, dur=3)


def g_thread_streams(n):  # n threads, each with its own stream: a slow launch and a stream sync
    # The launch takes 100 us and returns as its kernel ends (a wait on a full launch queue,
    # graph/passes/inferred_waits.cpp); the sync names the thread's stream (cuda_sync.cpp).
    for i in range(n):
        yield launch(20 * i, i + 1, dur=100, tid=i + 1)
        yield kernel("k", 20 * i + 5, i + 1, stream=100 + i, dur=90)
        yield X("cuda_runtime", "cudaStreamSynchronize", 1, i + 1, 20 * i + 101, 5, f'"cbid":131,"stream":{100 + i}')


COLL_ARGS = ('"Collective name":"allreduce","In msg nelems":1024,"Out msg nelems":1024,"dtype":"Float",'
             '"Group size":2,"Process Group Name":"0","Process Group Ranks":"[0, 1]"')


def g_collectives(n):  # n all-reduces: the operator, its launch and its NCCL kernel
    yield step(1, 0, 20 * n + 100)
    for i in range(n):
        yield X("cpu_op", "record_param_comms", 1, 1, 1 + 20 * i, 10, COLL_ARGS + f',"Seq":{i}')
        yield launch(2 + 20 * i, i + 1)
        yield X("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 0, 7, 8 + 20 * i, 10,
                f'"stream":7,"device":0,"correlation":{i + 1},"Collective name":"allreduce",'
                '"In msg nelems":1024,"Out msg nelems":1024,"Group size":2,"dtype":"Float"')


RANK_STEPS = 32


def g_rank_small():  # a rank's trace: 32 steps of three kernels
    for s in range(RANK_STEPS):
        t0 = 1000 * s
        yield step(s, t0, 900)
        for i in range(3):
            c = 3 * s + i + 1
            yield launch(t0 + 1 + 100 * i, c)
            yield kernel("sgemm", t0 + 20 + 100 * i, c)


def rank_extra(r, world):
    return f',"distributedInfo":{{"rank":{r},"world_size":{world},"backend":"nccl"}}'


def json_shape(gen):
    def make(n, path):
        return write_kineto(path + ".json", gen(n))
    return make


def make_ranks(n, path):  # a folder of n rank traces, each small
    os.makedirs(path)
    for r in range(n):
        write_kineto(os.path.join(path, f"rank{r}.json"), g_rank_small(), rank_extra(r, n))
    return path


COLL_MANY = 4  # all-reduces over every rank, per rank of coll_many


def g_coll_many(world):  # a rank's trace of coll_many: COLL_MANY all-reduces over every rank
    args = ('"Collective name":"allreduce","In msg nelems":1024,"Out msg nelems":1024,"dtype":"Float",'
            f'"Group size":{world},"Process Group Name":"0"')
    yield step(1, 0, 20 * COLL_MANY + 100)
    for i in range(COLL_MANY):
        yield X("cpu_op", "record_param_comms", 1, 1, 1 + 20 * i, 10, args + f',"Seq":{i}')
        yield launch(2 + 20 * i, i + 1)
        yield X("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 0, 7, 8 + 20 * i, 10,
                f'"stream":7,"device":0,"correlation":{i + 1},"Collective name":"allreduce",'
                f'"In msg nelems":1024,"Out msg nelems":1024,"Group size":{world},"dtype":"Float"')


def make_collmany(n, path):  # a folder of n rank traces, each in the same few all-reduces
    os.makedirs(path)
    for r in range(n):
        write_kineto(os.path.join(path, f"rank{r}.json"), g_coll_many(n), rank_extra(r, n))
    return path


def make_collranks(n, path):  # a folder of 2 rank traces with n collectives each
    os.makedirs(path)
    for r in range(2):
        write_kineto(os.path.join(path, f"rank{r}.json"), g_collectives(n), rank_extra(r, 2))
    return path


def db_shape(kind):
    """A copy of BASE_DB with n more annotation rows (the shapes of ../shared/data/fuzz/round2/gen_db.py)."""
    def make(n, path):
        out = path + ".db"
        shutil.copy(BASE_DB, out)
        c = sqlite3.connect(out)
        rows = c.execute("select a.track, a.start, a.id, a.dur, a.name, a.domain, a.category, a.payload, "
                         "a.external_id, s.value from annotation a join string s on s.id = a.name "
                         "order by a.start").fetchall()
        first = {}
        for r in rows:
            first.setdefault(r[9], r)
        st, fwd = first["step"], first["forward"]
        meta = dict(c.execute("select key, value from meta"))
        end = int(meta["end"])
        ins = []
        for i in range(n):
            r = list(fwd if kind == "overlap_fwd" else st)
            r[2] = 10_000_000 + i
            if kind != "overlap_fwd":
                r[7] = 1000 + i  # the step's batch id
            if kind in ("overlap_steps", "overlap_fwd"):  # each a ns after the last: all overlap
                r[1] += i + 1
            elif kind == "seq_steps":  # one after the other past the end, 0.9 us each
                r[1], r[3] = end + 10 + i * 1000, 900
            elif kind == "nested_steps":  # each inside the one before
                r[1], r[3] = end + 10 + i, 2 * n - 2 * i
            ins.append(r[:9])
        c.executemany("insert into annotation values (?,?,?,?,?,?,?,?,?)", ins)
        if kind in ("seq_steps", "nested_steps"):
            c.execute("update meta set value = ? where key = 'end'", (str(end + 10 + n * 1000 + 2 * n),))
        c.execute("update meta set value = ? where key = 'rows.annotation'", (str(len(rows) + n),))
        c.commit()
        c.close()
        return out
    return make


# name: (maker, N of the full run, N of --quick, what it is). Full N: t(N) of the slowest
# command 0.05-0.3 s on the 2-core machine of docs/limits.md (with every path n log n); quick N:
# small enough that the whole quick run stays near a minute, large enough that a quadratic path
# at 8N costs seconds.
SHAPES = {
    "flat": (json_shape(g_flat), 40000, 10000, "N operators in one step"),
    "nested": (json_shape(g_nested), 5000, 3000, "one stack N deep"),
    "deep_stacks": (json_shape(g_deep), 10000, 5000, "N/100 steps, each a stack 100 deep ending in a launch"),
    "overlap": (json_shape(g_overlap), 4000, 3000, "N ranges, each overlapping all later ones"),
    "overlap_window": (json_shape(g_overlap_window), 20000, 6000, "N ranges, each overlapping the next 63"),
    "steps": (json_shape(g_steps), 4000, 2000, "N ProfilerSteps of one operator"),
    "flows": (json_shape(g_flows), 10000, 2500, "N launches, kernels and flow arrows"),
    "flows_to_one": (json_shape(g_flows1), 20000, 4000, "N flows (distinct ids) into one kernel"),
    "shared_corr": (json_shape(g_corr1), 20000, 6000, "N launches sharing one correlation id"),
    "syncs": (json_shape(g_syncs), 10000, 2500, "N launches, kernels and device syncs"),
    "device_syncs": (json_shape(g_device_syncs), 5000, 1500, "N streams, a kernel and a device sync each"),
    "left_out_syncs": (json_shape(g_left_out_syncs), 5000, 1500, "N streams, a kernel and a device sync that leaves it out each"),
    "running_syncs": (json_shape(g_running_syncs), 5000, 1500, "N threads syncing while N streams' last kernels wait to start"),
    "kernel_names": (json_shape(g_knames), 10000, 2500, "N kernels of distinct names"),
    "threads": (json_shape(g_threads), 10000, 4000, "N threads, one operator each"),
    "waiting_threads": (json_shape(g_waiting_threads), 3000, 1400, "N threads, one 1 ms operator each"),
    "overlap_waits": (json_shape(g_overlap_waits), 3000, 2000, "N threads, one 1 ms operator each, all overlapping"),
    "streams": (json_shape(g_streams), 5000, 1500, "N streams, one kernel each"),
    "thread_streams": (json_shape(g_thread_streams), 10000, 1500, "N threads, each a slow launch and a sync on its own stream"),
    "collectives": (json_shape(g_collectives), 5000, 1500, "N all-reduces (operator, launch, NCCL kernel)"),
    "ranks": (make_ranks, 250, 200, "a folder of N rank traces of 32 steps"),
    "coll_ranks": (make_collranks, 4000, 800, "2 ranks of N all-reduces each"),
    "coll_many": (make_collmany, 250, 200, f"a folder of N ranks, each in the same {COLL_MANY} all-reduces"),
    "overlap_steps": (db_shape("overlap_steps"), 1000, 500, "trace.db of cuda_train + N overlapping steps"),
    "seq_steps": (db_shape("seq_steps"), 4000, 2000, "trace.db of cuda_train + N steps in a row"),
    "nested_steps": (db_shape("nested_steps"), 1000, 400, "trace.db of cuda_train + N nested steps"),
    "overlap_fwd": (db_shape("overlap_fwd"), 5000, 3000, "trace.db of cuda_train + N overlapping forwards"),
    "shared_cores": (json_shape(g_shared_cores), 16000, 2000, "N CPU ranges, N/4 at once, shared on 2 cores"),
    "busy_handoffs": (json_shape(g_busy_handoffs), 16000, 3000,
                      "N/2 long waits, N/2 threads busy as they begin and ending a run as they end"),
    "coll_unlink": (make_collmany, 250, 200, "coll_many, and a what-if removing one link of a collective"),
}

# name: argv after `dreamscope`, with {in}, {in2} (a copy of the input, for diff) and {out}.
COMMANDS = {
    "info": ["info", "{in}", "-o", "{out}"],
    "analyze": ["analyze", "{in}", "-o", "{out}"],
    "analyze-json": ["analyze", "{in}", "--format", "json", "-o", "{out}"],
    "analyze-steps": ["analyze", "{in}", "--only", "steps", "-o", "{out}"],
    "critical-path": ["analyze", "{in}", "--only", "critical-path", "-o", "{out}"],
    "replay": ["replay", "{in}", "--report", "{out}"],
    "whatif-amp": ["whatif", "{in}", "-s", "amp", "--report", "{out}"],
    "export-chrome": ["export", "{in}", "--chrome", "{out}"],
    "diff": ["diff", "{in}", "{in2}", "-o", "{out}"],
    # Every thread of the prediction sharing 2 cores (processor sharing in the simulator).
    "whatif-cores": ["whatif", "{in}", "-s", "data", "-p", "workers=1", "-p", "cores=2", "--report", "{out}"],
    # Rank 1's first all-reduce no longer waits for rank 0's (UNLINK_SCENARIO).
    "whatif-unlink": ["whatif", "{in}", "-s", "{unlink}", "--report", "{out}"],
}
# The scenario of whatif-unlink: a remove_edge naming one link of a collective of coll_many
# (each rank's NCCL kernel is its call: its first all-reduce's starts 8 us into the trace).
UNLINK_SCENARIO = """name = "unlink"
[[transform]]
op = "remove_edge"
from = { name = "ncclKernel", rank = 0, window_ns = [8000, 8001] }
to = { name = "ncclKernel", rank = 1, window_ns = [8000, 8001] }
"""
# A job (a folder of ranks) has no per-trace steps or critical path; `analyze --only` says so.
JOB_SHAPES = {"ranks", "coll_ranks", "coll_many", "coll_unlink"}
NOT_FOR_JOBS = {"analyze-steps", "critical-path"}
# Shapes made for one path, with the commands that take it (and replay, the same without it);
# commands that need what such a shape holds run on it alone.
SHAPE_COMMANDS = {"shared_cores": ["replay", "whatif-cores"],
                  # graph building's lookup of a call's streams, which every command that builds
                  # the graph takes: replay alone shows it
                  "thread_streams": ["replay"],
                  # thread hand-offs in graph building
                  "busy_handoffs": ["replay"],
                  # a what-if's remove_edge of a collective's link
                  "coll_unlink": ["replay", "whatif-unlink"],
                  # graph building's whole-process waits and the simulator's WaitStreams: replay
                  # takes both
                  "left_out_syncs": ["replay"],
                  "running_syncs": ["replay"]}
ONLY_FOR_SHAPES = {c for commands in SHAPE_COMMANDS.values() for c in commands if c not in ("replay",)}


def commands_for(shape):
    if shape in SHAPE_COMMANDS:
        return SHAPE_COMMANDS[shape]
    return [c for c in COMMANDS if c not in ONLY_FOR_SHAPES and not (shape in JOB_SHAPES and c in NOT_FOR_JOBS)]


# ---------------------------------------------------------------------------------------------
# Running a command. What is judged is the CPU time the process used (user + system, all its
# threads, from wait4), not the wall time: on a shared 2-core machine the wall time of a run
# depends on what else runs, its CPU time much less. The wall time, its peak RSS (wait4), its
# exit status and the size of what it wrote are kept too.

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds_so_far(pid):
    """The CPU time a running process has used (Linux /proc; None where there is none)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime: fields 14 and 15
    except (OSError, IndexError, ValueError):
        return None


class Run:
    __slots__ = ("cpu", "wall", "rss_kb", "status", "out_bytes", "error", "capped")


def run_once(argv, out, timeout, cap=None):
    """One run of argv. Past `timeout` s of wall time it is killed and is an error; with `cap`,
    it is stopped once it has used `cap` s of CPU (r.capped: its time is then a lower bound)."""
    err_path = out + ".stderr"
    if os.path.lexists(out):
        (shutil.rmtree if os.path.isdir(out) else os.unlink)(out)
    with open(os.devnull, "wb") as devnull, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, devnull.fileno(), 1),
                                           (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
        stop, why = threading.Event(), []

        def watch():  # kills the run past its timeout, or past its CPU cap
            while not stop.wait(0.01):
                if time.perf_counter() - t0 > timeout:
                    why.append("timeout")
                elif cap is not None and (cpu_seconds_so_far(pid) or 0) > cap:
                    why.append("cap")
                else:
                    continue
                os.kill(pid, signal.SIGKILL)
                return
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
        stop.set()
        watcher.join()
    r = Run()
    r.cpu, r.wall, r.rss_kb = usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss
    r.status = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    r.out_bytes = os.path.getsize(out) if os.path.isfile(out) else 0
    r.error, r.capped = None, why == ["cap"]
    if why == ["timeout"]:
        r.error = f"killed after {timeout:.0f} s"
    elif r.status != 0 and not r.capped:
        with open(err_path, errors="replace") as f:
            lines = f.read().strip().splitlines()
        r.error = f"exit {r.status}: " + (lines[-1] if lines else "(no message)")
    return r


class Progress:
    def __init__(self, enabled):
        self.enabled = enabled

    def say(self, text):
        if self.enabled:
            sys.stderr.write("\r\033[K" + text)
            sys.stderr.flush()

    def done(self):
        if self.enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def bound(n):
    return 8 * math.log2(8 * n) / math.log2(n)


class Row:
    """One command on one shape: its runs at N and at 8N, and the verdict."""

    def __init__(self, shape, command, n):
        self.shape, self.command, self.n = shape, command, n
        self.runs = {n: [], 8 * n: []}
        self.error = None

    def shown(self, size, best):
        """The run that stands for a size: the best (least CPU), or the median one."""
        runs = sorted(self.runs[size], key=lambda r: r.cpu)
        return runs[0] if best else runs[(len(runs) - 1) // 2]

    def t(self, size, best):
        runs = [r.cpu for r in self.runs[size]]
        return min(runs) if best else statistics.median(runs)

    def capped(self, best):
        """Whether t(8N) is a lower bound: the run shown was stopped at its cap."""
        return self.shown(8 * self.n, best).capped

    def limit(self, best=True):
        return SLACK * bound(self.n) * self.t(self.n, best) + FLOOR_S

    def rss_mb(self, size):
        return max(r.rss_kb for r in self.runs[size] if not r.capped) / 1024

    def out_bytes(self, size):
        return max(r.out_bytes for r in self.runs[size] if not r.capped)

    def judge(self, best):
        """'OK', 'OVER' or 'ERR', and what went over: time, rss, out."""
        if self.error:
            return "ERR", []
        b = bound(self.n)
        over = []
        if self.t(8 * self.n, best) > self.limit(best):
            over.append("time")
        if not self.capped(best):  # a stopped run's memory and output are not its whole
            if self.rss_mb(8 * self.n) > SLACK * b * self.rss_mb(self.n):
                over.append("rss")
            if self.out_bytes(8 * self.n) > b * self.out_bytes(self.n) + OUT_FLOOR_BYTES:
                over.append("out")
        return ("OVER" if over else "OK"), over

    def as_dict(self, best):
        verdict, over = self.judge(best)
        d = {"shape": self.shape, "command": self.command, "n": self.n, "verdict": verdict, "over": over,
             "bound": round(bound(self.n), 3), "statistic": "best" if best else "median"}
        if self.error:
            d["error"] = self.error
            return d
        for label, size in (("n", self.n), ("8n", 8 * self.n)):
            d[f"cpu_{label}_s"] = round(self.t(size, best), 4)
            d[f"wall_{label}_s"] = round(self.shown(size, best).wall, 4)
            d[f"runs_{label}"] = [{"cpu_s": round(r.cpu, 4), "wall_s": round(r.wall, 4), "rss_kb": r.rss_kb,
                                   "out_bytes": r.out_bytes, "stopped": r.capped} for r in self.runs[size]]
            if any(not r.capped for r in self.runs[size]):
                d[f"rss_{label}_mb"] = round(self.rss_mb(size), 1)
                d[f"out_{label}_bytes"] = self.out_bytes(size)
        d["ratio"] = round(d["cpu_8n_s"] / d["cpu_n_s"], 3) if d["cpu_n_s"] else None
        d["limit_s"] = round(self.limit(best), 4)
        d["cpu_8n_stopped"] = self.capped(best)
        return d


def human_bytes(b):
    for unit in ("B", "K", "M", "G"):
        if b < 1024 or unit == "G":
            return f"{b:.0f}{unit}" if unit == "B" else f"{b:.1f}{unit}"
        b /= 1024


def usage_error(message):
    print(f"complexity.py: {message}", file=sys.stderr)
    sys.exit(2)


def parse_sizes(text, shapes):
    sizes = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" in part:
            name, value = part.split("=", 1)
            if name not in SHAPES:
                usage_error(f"--sizes: no shape {name!r} (--list shows them)")
        else:
            name, value = None, part
        if not value.isdigit():
            usage_error(f"--sizes: {part!r} is not N or SHAPE=N")
        for s in ([name] if name else shapes):
            sizes[s] = int(value)
    for s, n in sizes.items():
        if n < 2:
            usage_error(f"--sizes: {s}={n}: N must be at least 2")
    return sizes


def split_list(values, known, what):
    names = [x.strip() for v in values for x in v.split(",") if x.strip()]
    for name in names:
        if name not in known:
            usage_error(f"no {what} {name!r}; there are: {', '.join(known)}")
    return names


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=os.path.join(REPO, "build", "release", "bin"),
                   help="folder holding dreamscope (default build/release/bin)")
    p.add_argument("--quick", action="store_true",
                   help="the small sizes, one run a size, re-run and judged on the best where over: the CTest gate")
    p.add_argument("--sizes", default="", help="N for every shape (2000) or per shape (nested=2000,flat=50000)")
    p.add_argument("--only", action="append", default=[], help="only these shapes (comma-separated, repeatable)")
    p.add_argument("--command", action="append", default=[], help="only these commands (comma-separated)")
    p.add_argument("--runs", type=int, default=None, help="runs a size (default 3; 1 with --quick)")
    p.add_argument("--retries", type=int, default=None,
                   help="extra runs of a row that looks over (default 1 with --quick, 0 otherwise)")
    p.add_argument("--best", action="store_true", help="judge on the best run of each size, not the median "
                   "(implied by --quick)")
    p.add_argument("--timeout", type=float, default=None, help="seconds one run may take (default 120; 30 with --quick)")
    p.add_argument("--json", metavar="FILE", help="write every row here")
    p.add_argument("--keep", metavar="DIR", help="generate the inputs in DIR and keep them")
    p.add_argument("--list", action="store_true", help="list the shapes and commands, and exit")
    a = p.parse_args()

    if a.list:
        for name, (_, n, nq, what) in SHAPES.items():
            only = f" (only {', '.join(SHAPE_COMMANDS[name])})" if name in SHAPE_COMMANDS else ""
            print(f"{name:15} N={n:<6} quick N={nq:<5} {what}{only}")
        print("commands: " + ", ".join(f"{c} (dreamscope {' '.join(argv)})" for c, argv in COMMANDS.items()))
        return 0
    dreamscope = os.path.join(a.bin, "dreamscope")
    if not os.access(dreamscope, os.X_OK):
        print(f"complexity.py: no dreamscope in {a.bin} (build it, or give --bin)", file=sys.stderr)
        return 2
    shapes = split_list(a.only, SHAPES, "shape") or list(SHAPES)
    commands = split_list(a.command, COMMANDS, "command") or list(COMMANDS)
    if any(s.endswith("steps") or s == "overlap_fwd" for s in shapes) and not os.path.isfile(BASE_DB):
        print(f"complexity.py: the .db shapes need {BASE_DB}", file=sys.stderr)
        return 2
    sizes = parse_sizes(a.sizes, shapes)
    runs = a.runs or (1 if a.quick else 3)
    retries = a.retries if a.retries is not None else (1 if a.quick else 0)
    best = a.best or a.quick
    timeout = a.timeout or (30.0 if a.quick else 120.0)
    progress = Progress(sys.stderr.isatty())

    work = a.keep or tempfile.mkdtemp(prefix="dreamscope-complexity-")
    os.makedirs(work, exist_ok=True)
    unlink = os.path.join(work, "unlink.toml")
    with open(unlink, "w") as f:
        f.write(UNLINK_SCENARIO)
    rows = []
    total = sum(1 for shape in shapes for c in commands if c in commands_for(shape))
    started = time.perf_counter()
    try:
        for shape in shapes:
            make, n_full, n_quick, _ = SHAPES[shape]
            n = sizes.get(shape, n_quick if a.quick else n_full)
            inputs = {}
            for size in (n, 8 * n):
                progress.say(f"[{len(rows)}/{total}] {shape}: writing N={size}")
                base = os.path.join(work, f"{shape}-{size}")
                path = make(size, base)
                copy = os.path.join(work, f"{shape}-{size}-b" + (os.path.splitext(path)[1]))
                (shutil.copytree if os.path.isdir(path) else shutil.copy)(path, copy)
                inputs[size] = (path, copy)
            for command in commands:
                if command not in commands_for(shape):
                    continue
                row = Row(shape, command, n)
                rows.append(row)

                def measure(count_n, count_8n):
                    for size, count in ((n, count_n), (8 * n, count_8n)):
                        for _ in range(count):
                            progress.say(f"[{len(rows)}/{total}] {shape}: {command} N={size}")
                            out = os.path.join(work, "out")
                            argv = [dreamscope] + [x.format(**{"in": inputs[size][0], "in2": inputs[size][1],
                                                              "out": out, "unlink": unlink})
                                                   for x in COMMANDS[command]]
                            # With --quick, a run of 8N is stopped once it is clearly over:
                            # a quadratic path then costs 1.5x its limit, not 64x t(N).
                            cap = CLEARLY_OVER * row.limit() if a.quick and size != n else None
                            r = run_once(argv, out, timeout, cap)
                            if r.error and not row.error:
                                row.error = f"N={size}: {r.error}"
                            row.runs[size].append(r)
                            if row.error:
                                return
                # With --quick, N runs twice: it is cheap, and one slow run of it would raise
                # the limit of 8N enough to let a quadratic path through.
                measure(max(runs, 2) if a.quick else runs, runs)
                # A row over its limit, but not stopped at 1.5x it, runs again: noise only adds.
                for _ in range(retries):
                    if row.error or row.judge(best)[0] != "OVER" or row.capped(best):
                        break
                    measure(1, 1)
            for path, copy in inputs.values():
                if not a.keep:
                    for x in (path, copy):
                        (shutil.rmtree if os.path.isdir(x) else os.unlink)(x)
    finally:
        progress.done()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.perf_counter() - started

    stat = f"best of {max(runs, 2) if a.quick else runs} at N, {runs} at 8N" if best else f"median of {runs}"
    print(f"{dreamscope}: CPU seconds (user + system) of each command at N and 8N ({stat}), "
          f"bound = 8*log2(8N)/log2(N), OVER past {SLACK}*bound*t(N) + {FLOOR_S} s; wall time, peak RSS "
          f"and report size at 8N")
    header = (f"{'shape':15} {'command':14} {'N':>6} {'t(N) s':>8} {'t(8N) s':>8} {'ratio':>7} {'bound':>6} "
              f"{'wall(8N)':>8} {'RSS(8N)':>8} {'out(8N)':>8}  verdict")
    print(header)
    print("-" * len(header))
    failed = []
    for row in rows:
        verdict, over = row.judge(best)
        if row.error:
            print(f"{row.shape:15} {row.command:14} {row.n:>6} {'-':>8} {'-':>8} {'-':>7} {bound(row.n):>6.1f} "
                  f"{'-':>8} {'-':>8} {'-':>8}  ERR {row.error}")
            failed.append(row)
            continue
        t1, t8 = row.t(row.n, best), row.t(8 * row.n, best)
        ratio = t8 / t1 if t1 else math.inf
        what = verdict + (" (" + ", ".join(over) + ")" if over else "")
        stopped = row.capped(best)
        more = ">" if stopped else ""  # stopped there: at least this
        wall8 = row.shown(8 * row.n, best).wall
        rss8 = "-" if stopped else f"{row.rss_mb(8 * row.n):.0f}M"
        out8 = "-" if stopped else human_bytes(row.out_bytes(8 * row.n))
        print(f"{row.shape:15} {row.command:14} {row.n:>6} {t1:>8.3f} {more + format(t8, '.3f'):>8} "
              f"{more + format(ratio, '.1f'):>7} {bound(row.n):>6.1f} {more + format(wall8, '.3f'):>8} "
              f"{rss8:>8} {out8:>8}  {what}")
        if verdict != "OK":
            failed.append(row)
    print(f"{len(rows)} rows in {elapsed:.0f} s: {len(rows) - len(failed)} OK, {len(failed)} OVER or failed"
          + (": " + ", ".join(f"{r.shape}/{r.command}" for r in failed) if failed else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"dreamscope": dreamscope, "slack": SLACK, "floor_s": FLOOR_S, "seconds": round(elapsed, 1),
                       "rows": [r.as_dict(best) for r in rows]}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
