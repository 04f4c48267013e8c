# Sourced by the what-if accuracy benches (bench/whatif_accuracy.sh,
# bench/pytorch_whatif_accuracy.sh): `predicted_steps TRACE... -- WHATIF-ARGS...` prints the
# predicted median step (ns) of `dreamscope whatif` on each trace, space-separated, or
# "error: " and the command's last line for the first trace it could not predict. Needs
# $dreamscope.
predicted_steps() {
  local traces=() values=() value
  while (($# > 0)) && [[ $1 != -- ]]; do
    traces+=("$1")
    shift
  done
  shift
  for trace in "${traces[@]}"; do
    value=$("$dreamscope" whatif "$trace" --format json --no-data-stalls "$@" 2>&1 |
      python3 -c 'import json, sys
text = sys.stdin.read()
try:
    print(round(json.loads(text)["predictions"][-1]["predicted_step_ns"]))
except ValueError:
    print("error: " + text.strip().splitlines()[-1])')
    if [[ $value == error:* ]]; then
      echo "$value"
      return
    fi
    values+=("$value")
  done
  echo "${values[*]}"
}
