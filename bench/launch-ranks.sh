# bench/launch-ranks.sh: sourced by the multi-GPU scripts (tests/tensor-parallel/run.sh,
# bench/collectives/run.sh), from the repository root.
#
# `launch_ranks ID_FILE LOG_PREFIX WORLD TIMEOUT CMD...`: WORLD processes of CMD, each with
# `--rank R --world WORLD --id-file ID_FILE` appended (rank R on GPU R; ID_FILE removed first:
# rank 0 writes it), rank R's output in LOG_PREFIX.rankR.log, each ended after TIMEOUT s;
# waits for all of them and prints their exit codes, space-separated.
launch_ranks() {
  local id_file=$1 log=$2 world=$3 limit=$4
  shift 4
  rm -f "$id_file"
  local pids=() rcs=() r p
  for ((r = 0; r < world; r++)); do
    timeout "$limit" "$@" --rank "$r" --world "$world" --id-file "$id_file" >"$log.rank$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
  echo "${rcs[*]}"
}
