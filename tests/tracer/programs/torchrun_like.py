"""A stand-in for torchrun's local agent (torch is not needed): starts N workers of a command
with subprocess.Popen and the environment torch.distributed.elastic gives them (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID),
waits for all and exits with the first failure's status. The agent itself has no RANK.
usage: torchrun_like.py N CMD ARGS..."""
import os
import subprocess
import sys


def main():
    n, cmd = int(sys.argv[1]), sys.argv[2:]
    run_id = "test-%d" % os.getpid()
    port = str(20000 + os.getpid() % 20000)
    workers = []
    for rank in range(n):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port, TORCHELASTIC_RUN_ID=run_id)
        workers.append(subprocess.Popen(cmd, env=env))
    codes = [w.wait() for w in workers]
    sys.exit(next((c for c in codes if c != 0), 0))


main()
