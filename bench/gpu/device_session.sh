#!/usr/bin/env bash
# Everything issue 15 needs a GPU for, in one script for one call on a lent GPU machine
# (docs/gpu.md). Runs from the repository root there, on the bundle scripts/device-bundle.sh
# made here (carried as build/device), and writes under $OUT (at most 8 files come back):
#   summary.txt                       the figures, also printed last
#   cuda_train.db, pytorch_train.db,  small real traces, to commit under tests/data/gpu/
#   pytorch_auto.db
#   baselines.tgz                     the traces the predictions were made from
#   logs.tgz                          each step's full output
#
#   bash bench/gpu/device_session.sh                 # every step
#   bash bench/gpu/device_session.sh tests fixtures  # some of them
#   DEADLINE_S=400 bash bench/gpu/device_session.sh  # skip what would not end in time
#
# Steps: tests      the tracer's process tests, the GPU one included (it skips without a GPU)
#        fixtures   cuda_train and samples/pytorch/train.py traced (with its own emit_nvtx, and
#                   with dreamscope's zero-code layer: --python-ops --python-modules 2),
#                   what each recorded (bench/gpu/trace_facts.py), replayed (baseline error)
#        overhead   traced / untraced median step (cuda_train, train.py), each traced run's
#                   `replay --correct-overhead` against the untraced median, before and after
#                   `dreamscope calibrate --cuda-only --apply` (cuda_launch); train.py with the
#                   default recording and with --cuda-api all, and traced without CUPTI
#                   (--trace nvtx) and without the Python layer, to tell where the cost is
#        amp        a GPU-bound train.py traced in FP32; `amp` predicted, run with --amp (also
#                   traced, for its kernels), compared;
#                   `gpu` to an H200 and an A100 predicted
#        graphs     a launch-bound train.py traced; `cuda-graphs` (and cuda-graphs-host.toml
#                   beside this script) predicted, run with --cuda-graphs, compared
#        fused      an optimizer-bound train.py traced with a for-loop SGD; `fused-optimizer`
#                   predicted, run with the fused SGD, compared
#        workers    train.py traced with 0 loader workers, `data workers=4` predicted, run, compared
#        cpu        the CPU-side accuracy on this machine's cores: bench/whatif_accuracy.sh and
#                   bench/graph/overhead_correction.sh with two loader threads
# Each step starts only if its usual time fits before the deadline (DEADLINE_S seconds after
# the start, default 1e9) and every program runs under `timeout`, so one that hangs costs its
# limit, not the session.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
B=${BUNDLE:-build/device}
OUT=${OUT:-/tmp/dreamscope-device}
RUNS=${RUNS:-3}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# cuda_train's cuBLAS and CUDA runtime are the machine's, wherever its toolkit keeps them.
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
export PYTHONUNBUFFERED=1
DS="$PWD/$B/bin/dreamscope"
PY=${PYTHON:-python3}
STEPS_WANTED=${*:-tests fixtures overhead amp graphs fused workers cpu}
started=$(date +%s)
deadline=$((started + ${DEADLINE_S:-1000000000}))
work=$(mktemp -d)
logs=$work/logs
keep=$work/baselines
mkdir -p "$logs" "$keep"
summary="$OUT/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
pack() {
  tar -czf "$OUT/logs.tgz" -C "$work" logs 2>/dev/null
  [ -n "$(ls -A "$keep")" ] && tar -czf "$OUT/baselines.tgz" -C "$work" baselines 2>/dev/null
}
trap 'pack; rm -rf "$work"' EXIT
# step NAME SECONDS: whether NAME was asked for and its usual SECONDS fit before the deadline.
step() {
  [[ " $STEPS_WANTED " == *" $1 "* ]] || return 1
  local left=$((deadline - $(date +%s)))
  if ((left < $2)); then
    say "== $1: skipped, ${left} s left before the deadline and it takes about $2 s"
    return 1
  fi
  step_started=$(date +%s)
  say "== $1 (at +$((step_started - started)) s)"
}
took() { say "   ($1 took $(($(date +%s) - step_started)) s)"; }

say "== machine"
say "$(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -2)"
say "$(timeout 120 $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1 | tail -1)"
say "cores $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
# A library the bundle lacks and the machine does not have shows here first.
for f in "$B"/bin/* "$B"/lib/libdreamscope-tracer.so "$B/tests/tracer_process_tests"; do
  echo "== $f"
  ldd "$f" 2>&1
done >"$logs/ldd.txt"
missing=$(grep -c "not found" "$logs/ldd.txt")
say "libraries not found: $missing$([ "$missing" -gt 0 ] && echo " ($(grep "not found" "$logs/ldd.txt" | sort -u | tr -s ' \t' ' ' | tr '\n' ';'))")"

# Prints the median of the numbers on stdin.
median() { $PY -c 'import statistics, sys; v = [float(x) for x in sys.stdin.read().split()]; print(round(statistics.median(v)) if v else 0)'; }
# median_step_ns of one run of a command (its own measurement, CUDA-synchronized per step).
step_ns() { timeout 120 "$@" 2>>"$logs/runs.log" | tee -a "$logs/runs.log" | awk '/^median_step_ns/ {print $2}'; }
# Wall nanoseconds of one run of a command.
wall() { local t0; t0=$(date +%s%N); timeout 120 "$@" >>"$logs/runs.log" 2>&1; echo $(($(date +%s%N) - t0)); }
# traced OUT.db COMMAND...: the command traced into OUT.db; prints its median_step_ns.
traced() {
  local db=$1
  shift
  step_ns "$DS" trace -f -o "$db" -- "$@"
}
# The median step time a what-if predicts: predict TRACE SCENARIO-ARGS...
predict() {
  local trace=$1
  shift
  timeout 120 "$DS" whatif "$trace" --format json --no-data-stalls "$@" 2>>"$logs/whatif.log" |
    $PY -c 'import json, sys; print(round(json.load(sys.stdin)["predictions"][-1]["predicted_step_ns"]))' 2>>"$logs/whatif.log"
}
# What a kernel launch costs traced, measured once on this machine (dreamscope calibrate) and
# written into the traces given, so that --correct-overhead charges it: launch_cost TRACE...
launch_cost() {
  local args=()
  for db in "$@"; do args+=(--apply "$db"); done
  timeout 90 "$DS" calibrate --cuda-only "${args[@]}" >>"$logs/calibrate.log" 2>&1
}
# The replayed median step of a trace, with --correct-overhead: corrected TRACE.
corrected() {
  timeout 120 "$DS" replay "$1" --correct-overhead --format json --all-steps 2>>"$logs/replay.log" |
    $PY -c 'import json, statistics, sys; print(round(statistics.median(s["predicted_ns"] for s in json.load(sys.stdin)["steps"])))' 2>>"$logs/replay.log"
}
pct() { $PY -c "import sys; m, p = float(sys.argv[1]), float(sys.argv[2]); print(f'{100 * (p - m) / m:+.1f} %' if m else 'n/a')" "$1" "${2:-0}"; }
us() { echo "$((${1:-0} / 1000)) us"; }
# measure NAME COMMAND...: RUNS untraced runs; sets m_NAME to their median step and lists them.
measure() {
  local name=$1 v=()
  shift
  for ((r = 0; r < RUNS; ++r)); do v+=("$(step_ns "$@")"); done
  printf -v "m_$name" '%s' "$(printf '%s\n' "${v[@]}" | median)"
  echo "   $name runs: ${v[*]}" >>"$summary"
}
train=(samples/pytorch/train.py)

if step tests 60; then
  DREAMSCOPE_TEST_BIN_DIR="$PWD/$B/bin" DREAMSCOPE_TEST_PROGRAMS="$PWD/$B/tests/programs" \
    DREAMSCOPE_TEST_CUDA_TRAIN="$PWD/$B/bin/cuda_train" \
    timeout 240 "$B/tests/tracer_process_tests" >"$logs/tests.log" 2>&1
  say "exit $? : $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$logs/tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]|^\[  SKIPPED \] [A-Z]|Failure|error:' "$logs/tests.log" | head -20 | tee -a "$summary"
  took tests
fi

if step fixtures 40; then
  timeout 120 "$DS" trace -f -o "$OUT/cuda_train.db" -- "$B/bin/cuda_train" --steps 20 --batch-size 128 \
    --input-dim 256 --hidden 512 >"$logs/fixture_cuda.log" 2>&1
  say "cuda_train.db: exit $?, $(du -h "$OUT/cuda_train.db" 2>/dev/null | cut -f1)"
  timeout 120 "$DS" trace -f -o "$OUT/pytorch_train.db" -- "$PY" "${train[@]}" --steps 20 --workers 2 --emit-nvtx \
    >"$logs/fixture_torch.log" 2>&1
  say "pytorch_train.db: exit $?, $(du -h "$OUT/pytorch_train.db" 2>/dev/null | cut -f1)"
  # The zero-code PyTorch layer on CUDA: operators (emit_nvtx) and module forwards two deep
  # from `dreamscope trace` alone, the backward range on the autograd engine's thread.
  timeout 120 "$DS" trace -f --python-ops --python-modules 2 -o "$OUT/pytorch_auto.db" -- "$PY" "${train[@]}" \
    --steps 20 --workers 2 >"$logs/fixture_auto.log" 2>&1
  say "pytorch_auto.db: exit $?, $(du -h "$OUT/pytorch_auto.db" 2>/dev/null | cut -f1)"
  for f in cuda_train pytorch_train pytorch_auto; do
    timeout 60 $PY bench/gpu/trace_facts.py "$OUT/$f.db" 20 2>&1 | tee -a "$summary"
  done
  for f in cuda_train pytorch_train pytorch_auto; do
    timeout 60 "$DS" info "$OUT/$f.db" >"$logs/$f.info.txt" 2>&1
    grep -iE 'kernel|memcpy|sync|dropped|complete|warning' "$logs/$f.info.txt" | head -12 | sed 's/^/   /' >>"$summary"
    timeout 60 "$DS" replay "$OUT/$f.db" >"$logs/$f.replay.txt" 2>&1
    say "$f replay: $(grep -E '^(run|median step|mean step)' "$logs/$f.replay.txt" | tr '\n' ' ')"
  done
  if grep -q "killed by signal" "$logs/fixture_cuda.log" && command -v cuda-gdb >/dev/null; then
    # Where a traced process dies: every thread's stack at the signal.
    lib=$PWD/$B/lib/libdreamscope-tracer.so
    timeout 120 cuda-gdb -batch -ex "set exec-wrapper env LD_PRELOAD=$lib CUDA_INJECTION64_PATH=$lib NVTX_INJECTION64_PATH=$lib DREAMSCOPE_OUTPUT_DIR=$work/gdb.d" \
      -ex run -ex "thread apply all bt 40" --args "$B/bin/cuda_train" --steps 5 >"$logs/crash_gdb.txt" 2>&1
    say "cuda_train still dies traced: stacks in logs/crash_gdb.txt"
    grep -A12 -m1 "received signal" "$logs/crash_gdb.txt" | tee -a "$summary"
  fi
  took fixtures
fi

if step overhead 150; then
  say "-- tracer overhead: the program's own median step, traced / untraced, and replay --correct-overhead"
  # Pairs of runs, untraced then traced: the machine's state drifts between runs. Without
  # its loader's work, cuda_train's steps are its launches and its kernels.
  cu=("$B/bin/cuda_train" --steps 200 --no-loading)
  step_ns "${cu[@]}" >/dev/null # warm-up: module load, clocks
  us_=() ts=() cs=()
  for i in 1 2 3 4 5; do
    us_+=("$(step_ns "${cu[@]}")")
    ts+=("$(traced "$work/c$i.db" "${cu[@]}")")
    cs+=("$(corrected "$work/c$i.db")")
  done
  cp "$work/c1.db" "$keep/cuda_train_no_loading.db" 2>/dev/null
  ratios() {
    $PY - "$@" <<'PY' | tee -a "$summary"
import statistics as st, sys
name, us, ts, cs = sys.argv[1], *([float(x) for x in a.split()] for a in sys.argv[2:5])
mu = st.median(us)
print(f"{name}: median step traced/untraced {st.median(ts) / mu:.3f} ({mu / 1e3:.1f} us untraced); "
      f"replay --correct-overhead median {st.median(cs) / 1e3:.1f} us: {100 * (st.median(cs) - mu) / mu:+.1f} %\n"
      f"   untraced {' '.join(f'{u / 1e3:.0f}' for u in us)}; traced {' '.join(f'{t / 1e3:.0f}' for t in ts)}; "
      f"corrected {' '.join(f'{c / 1e3:.0f}' for c in cs)} us")
PY
  }
  ratios "cuda_train --steps 200 --no-loading" "${us_[*]}" "${ts[*]}" "${cs[*]}"
  # The same traces corrected with what a kernel launch costs traced (cuda_launch).
  timeout 90 "$DS" calibrate --cuda-only --json 2>&1 | tee -a "$logs/calibrate.log" | tr -s ' \n' ' ' | sed 's/^/   calibrate: /' | tee -a "$summary"
  echo | tee -a "$summary"
  launch_cost "$work"/c[1-5].db
  cl=()
  for i in 1 2 3 4 5; do cl+=("$(corrected "$work/c$i.db")"); done
  ratios "cuda_train --steps 200 --no-loading, launches charged" "${us_[*]}" "${ts[*]}" "${cl[*]}"
  # train.py: rounds of untraced, traced with the default recording, and (two rounds) traced
  # with every CUDA API call recorded (--cuda-api all, the first visit's recording).
  tr=("$PY" "${train[@]}" --steps 60 --workers 2)
  us_=() ts=() cs=() as=() acs=() ns=() po=()
  for i in 1 2 3 4; do
    us_+=("$(step_ns "${tr[@]}")")
    ts+=("$(traced "$work/t$i.db" "${tr[@]}")")
    cs+=("$(corrected "$work/t$i.db")")
    if ((i <= 2)); then
      as+=("$(step_ns "$DS" trace --cuda-api all -f -o "$work/a$i.db" -- "${tr[@]}")")
      acs+=("$(corrected "$work/a$i.db")")
    fi
  done
  # Where the cost is: without CUPTI (annotations only), and without the Python layer.
  ns+=("$(step_ns "$DS" trace --trace nvtx -f -o "$work/n1.db" -- "${tr[@]}")")
  po+=("$(step_ns "$DS" trace --python off -f -o "$work/p1.db" -- "${tr[@]}")")
  kt=("$(step_ns "${tr[@]}" --torch-profiler "$work/kineto1.json")")
  gzip -c "$work/kineto1.json" >"$keep/torch_profiler_train_60.json.gz" 2>/dev/null
  timeout 60 "$DS" info "$keep/torch_profiler_train_60.json.gz" >"$logs/torch_profiler.info.txt" 2>&1
  info_rc=$?
  say "   the PyTorch profiler on the same job: $(printf '%s\n' "${kt[@]}" | median | awk '{print int($1 / 1000)}') us (runs ${kt[*]}); dreamscope info on its trace: exit $info_rc"
  cp "$work/t1.db" "$keep/train_60.db" 2>/dev/null
  cp "$work/a1.db" "$keep/train_60_all_api.db" 2>/dev/null
  ratios "train.py --steps 60 --workers 2 (default recording)" "${us_[*]}" "${ts[*]}" "${cs[*]}"
  launch_cost "$work"/t[1-4].db "$work"/a[1-2].db
  cl=() acl=()
  for i in 1 2 3 4; do cl+=("$(corrected "$work/t$i.db")"); done
  for i in 1 2; do acl+=("$(corrected "$work/a$i.db")"); done
  ratios "train.py --steps 60 --workers 2 (default recording), launches charged" "${us_[*]}" "${ts[*]}" "${cl[*]}"
  ratios "train.py --steps 60 --workers 2 (--cuda-api all), launches charged" "${us_[*]}" "${as[*]}" "${acl[*]}"
  ratios "train.py --steps 60 --workers 2 (--cuda-api all)" "${us_[*]}" "${as[*]}" "${acs[*]}"
  say "   traced with --trace nvtx (no CUPTI): ${ns[*]} ns; with --python off: ${po[*]} ns"
  timeout 60 $PY bench/gpu/trace_facts.py "$work/t1.db" 60 2>&1 | tee -a "$summary"
  timeout 60 $PY bench/gpu/trace_facts.py "$work/a1.db" 60 2>&1 | tee -a "$summary"
  timeout 60 "$DS" replay "$work/t1.db" --correct-overhead --format json 2>&1 | $PY -c 'import json, sys; print("   overhead", json.load(sys.stdin)["overhead"])' 2>&1 | tee -a "$summary"
  timeout 60 "$DS" info "$work/t1.db" >"$logs/train_60.info.txt" 2>&1
  took overhead
fi

# Each what-if is checked where it matters: a GPU-bound job for amp and gpu (the FP32 model
# 4x wider, 8 loader workers, so that the GPU is the bottleneck and not the input pipeline as
# in the first H100 session), a launch-bound one for cuda-graphs (batch 16), an
# optimizer-bound one for fused-optimizer (16 more convolutions, batch 16).
if step amp 70; then
  say "-- amp: predicted from an FP32 trace of a GPU-bound job, against train.py --amp"
  args=(--steps 40 --workers 8 --batch-size 256 --width 4)
  traced "$keep/fp32.db" "$PY" "${train[@]}" "${args[@]}" >/dev/null
  measure fp32 "$PY" "${train[@]}" "${args[@]}"
  measure amp "$PY" "${train[@]}" "${args[@]}" --amp
  # The real AMP run traced too: its kernels against the FP32 ones, class by class, say which
  # of the scenario's factors hold (docs/whatif.md).
  traced "$keep/amp.db" "$PY" "${train[@]}" "${args[@]}" --amp >/dev/null
  p_amp=$(predict "$keep/fp32.db" -s amp)
  launch_cost "$keep/fp32.db"
  p_amp_c=$(predict "$keep/fp32.db" --correct-overhead -s amp)
  say "FP32 $(us "$m_fp32"); --amp $(us "$m_amp"), predicted $(us "$p_amp"): error $(pct "$m_amp" "$p_amp"); from the corrected trace $(us "$p_amp_c"): $(pct "$m_amp" "$p_amp_c")"
  for d in H200 A100; do say "gpu -p device=$d from this trace: $(us "$(predict "$keep/fp32.db" -s gpu -p device=$d)")"; done
  timeout 60 "$DS" whatif "$keep/fp32.db" -s amp >"$logs/amp_whatif.txt" 2>&1
  took amp
fi

if step graphs 70; then
  say "-- cuda-graphs: predicted from a launch-bound trace, against train.py --cuda-graphs"
  args=(--steps 100 --workers 2 --batch-size 16)
  traced "$keep/eager.db" "$PY" "${train[@]}" "${args[@]}" >/dev/null
  measure eager "$PY" "${train[@]}" "${args[@]}"
  measure graphs "$PY" "${train[@]}" "${args[@]}" --cuda-graphs
  p_graphs=$(predict "$keep/eager.db" -s cuda-graphs)
  p_region=$(predict "$keep/eager.db" -s cuda-graphs -p 'region=^(forward|backward|optimizer)$')
  p_host=$(predict "$keep/eager.db" -s bench/gpu/cuda-graphs-host.toml)
  launch_cost "$keep/eager.db"
  p_graphs_c=$(predict "$keep/eager.db" --correct-overhead -s cuda-graphs)
  p_host_c=$(predict "$keep/eager.db" --correct-overhead -s bench/gpu/cuda-graphs-host.toml)
  say "eager $(us "$m_eager"); --cuda-graphs $(us "$m_graphs"); predicted: launches removed $(us "$p_graphs") ($(pct "$m_graphs" "$p_graphs")), in the region $(us "$p_region") ($(pct "$m_graphs" "$p_region")), the region's host code removed $(us "$p_host") ($(pct "$m_graphs" "$p_host"))"
  say "   from the corrected trace (launches charged): launches removed $(us "$p_graphs_c") ($(pct "$m_graphs" "$p_graphs_c")), the region's host code removed $(us "$p_host_c") ($(pct "$m_graphs" "$p_host_c")); the corrected eager step $(us "$(corrected "$keep/eager.db")")"
  timeout 60 "$DS" whatif "$keep/eager.db" -s cuda-graphs -s bench/gpu/cuda-graphs-host.toml >"$logs/graphs_whatif.txt" 2>&1
  took graphs
fi

if step fused 60; then
  say "-- fused-optimizer: predicted from a for-loop SGD trace, against --optimizer fused"
  args=(--steps 60 --workers 2 --batch-size 16 --depth 16)
  traced "$keep/forloop.db" "$PY" "${train[@]}" "${args[@]}" --optimizer for-loop >/dev/null
  measure forloop "$PY" "${train[@]}" "${args[@]}" --optimizer for-loop
  measure fusedrun "$PY" "${train[@]}" "${args[@]}" --optimizer fused
  p_fused=$(predict "$keep/forloop.db" -s fused-optimizer)
  p_kernels=$(predict "$keep/forloop.db" -s fused-optimizer -p host_ratio=1)
  launch_cost "$keep/forloop.db"
  p_fused_c=$(predict "$keep/forloop.db" --correct-overhead -s fused-optimizer)
  say "for-loop $(us "$m_forloop"); fused $(us "$m_fusedrun"), predicted $(us "$p_fused"): error $(pct "$m_fusedrun" "$p_fused"); from the corrected trace (launches charged) $(us "$p_fused_c"): $(pct "$m_fusedrun" "$p_fused_c"); kernels alone (host_ratio=1) $(us "$p_kernels")"
  timeout 60 "$DS" whatif "$keep/forloop.db" -s fused-optimizer >"$logs/fused_whatif.txt" 2>&1
  took fused
fi

if step workers 60; then
  say "-- DataLoader workers 0 -> 4: predicted from a 0-worker trace, against a 4-worker run"
  args=(--steps 60 --batch-size 256 --fetch-delay-ms 5)
  traced "$keep/w0.db" "$PY" "${train[@]}" "${args[@]}" --workers 0 >/dev/null
  measure w0 "$PY" "${train[@]}" "${args[@]}" --workers 0
  measure w4 "$PY" "${train[@]}" "${args[@]}" --workers 4
  p4=$(predict "$keep/w0.db" -s data -p workers=4)
  launch_cost "$keep/w0.db"
  p4_c=$(predict "$keep/w0.db" --correct-overhead -s data -p workers=4)
  say "0 workers $(us "$m_w0"); 4 workers $(us "$m_w4"), predicted $(us "$p4"): error $(pct "$m_w4" "$p4"); from the corrected trace (launches charged) $(us "$p4_c"): $(pct "$m_w4" "$p4_c")"
  timeout 60 "$DS" whatif "$keep/w0.db" -s data -p workers=4 >"$logs/workers_whatif.txt" 2>&1
  took workers
fi

if step cpu 70; then
  say "-- CPU-side accuracy on $(nproc) cores (cpu_train)"
  BIN="$B/bin" RUNS=${CPU_RUNS:-5} timeout 150 bench/whatif_accuracy.sh >"$logs/whatif_accuracy.txt" 2>&1
  grep -vE '^dreamscope trace:' "$logs/whatif_accuracy.txt" | tail -12 | tee -a "$summary"
  BIN="$B/bin" RUNS=${CPU_RUNS:-5} ARGS="--workers 2" timeout 150 bench/graph/overhead_correction.sh \
    >"$logs/overhead_correction.txt" 2>&1
  grep -vE '^dreamscope trace:' "$logs/overhead_correction.txt" | tail -12 | tee -a "$summary"
  took cpu
fi

echo
echo "== summary"
cat "$summary"
