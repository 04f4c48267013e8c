"""Python multiprocessing (fork) workers annotating with the dreamscope module.
usage: mp_workers.py WORKERS BATCHES_PER_WORKER"""
import multiprocessing as mp
import sys

import dreamscope


def work(worker):
    for b in range(BATCHES):
        batch_id = worker * 1000 + b
        with dreamscope.fetch(batch_id):
            data = bytes(1000)
        with dreamscope.prep(batch_id):
            sum(data)
    return worker


if __name__ == "__main__":
    WORKERS, BATCHES = int(sys.argv[1]), int(sys.argv[2])
    mp.set_start_method("fork")
    with dreamscope.operation("main"):
        with mp.Pool(WORKERS) as pool:
            done = sorted(pool.map(work, range(WORKERS)))
    assert done == list(range(WORKERS)), done
    print("traced" if dreamscope.is_traced() else "untraced")
