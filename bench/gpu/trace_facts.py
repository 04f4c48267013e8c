#!/usr/bin/env python3
"""What a GPU trace recorded, in a few lines, for bench/gpu/device_session.sh's summary:

    python3 bench/gpu/trace_facts.py TRACE.db STEPS

CUDA API calls per step by kind and the most frequent names (what the recording costs the
job), the cuda_api calibration (CUPTI's cost per recorded call) and whether it timed calls
CUPTI recorded, annotations per domain (dreamscope.auto is the zero-code PyTorch layer), the
threads that hold a `backward` range (the autograd engine's own thread among them on CUDA),
and how many kernels are linked to a launch call and to a range.
"""
import sqlite3
import sys


def main():
    path, steps = sys.argv[1], max(1, int(sys.argv[2]))
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    q = lambda sql, *a: db.execute(sql, a).fetchall()  # noqa: E731
    meta = dict(q("select key, value from meta"))
    kinds = dict(q("select kind, count(*) from cuda_api group by kind"))
    print(f"{path}: {len(q('select 1 from process'))} processes; per step {kinds.get(0, 0) / steps:.0f} runtime "
          f"and {kinds.get(1, 0) / steps:.0f} driver calls recorded")
    top = q("select s.value, count(*) from cuda_api a join string s on s.id = a.name group by 1 order by 2 desc limit 8")
    print("   calls: " + ", ".join(f"{n} {c / steps:.1f}" for n, c in top))
    for kind, cost, samples in q("select event_kind, cost_ns, samples from calibration where event_kind = 'cuda_api'"):
        print(f"   calibration {kind}: {cost:.0f} ns per call ({samples} calls; CUPTI recorded "
              f"{meta.get('cuda_api_calibration_calls', '?')} of them)")
    domains = q("select ifnull(d.value, '-'), count(*) from annotation a left join string d on d.id = a.domain group by 1")
    print("   ranges: " + ", ".join(f"{d} {c}" for d, c in domains))
    auto = q("select s.value, count(*) from annotation a join string s on s.id = a.name join string d on d.id = a.domain "
             "where d.value = 'dreamscope.auto' group by 1 order by 2 desc limit 10")
    if auto:
        print("   dreamscope.auto: " + ", ".join(f"{n} {c}" for n, c in auto))
    backward = q("select t.tid, t.name, count(*) from annotation a join string s on s.id = a.name "
                 "join track t on t.id = a.track where s.value = 'backward' group by 1, 2")
    print("   backward ranges by thread: " + (", ".join(f"{tid} {name!r} {c}" for tid, name, c in backward) or "none"))
    kernels, launched, in_range = q(
        "select count(*), sum(exists(select 1 from cuda_api a where a.correlation = g.correlation)), "
        "sum(exists(select 1 from cuda_api a where a.correlation = g.correlation and a.external_id is not null)) "
        "from gpu_op g where g.kind = 0")[0]
    print(f"   kernels {kernels}: {launched or 0} linked to their launch, {in_range or 0} to a range; "
          f"dropped {meta.get('dropped_events', '0')}")


if __name__ == "__main__":
    main()
