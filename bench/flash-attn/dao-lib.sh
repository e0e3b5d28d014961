# bench/flash-attn/dao-lib.sh: sourced, after bench/backend/setup.sh, by the runners whose
# stock CUDA binaries link Dao's libflashattention.so (bench/examples/run-examples.sh with
# SET=flash-attn or multiprocess, bench/numerics/run.sh): unless WORK_DIR/dao-build holds it
# already, build-dao.sh compiles the units DAO_UNITS names (default the made-up Llama's head
# dim 64, f16) from $bin/dao into it, logged to $out/logs/build-dao.log; that folder then
# goes on cuda_env's LD_LIBRARY_PATH.
dao=$scratch/dao-build
if [[ ! -f $dao/libflashattention.so ]]; then
  dao_start=$SECONDS
  mkdir -p "$out/logs"
  bash bench/flash-attn/build-dao.sh "$bin/dao" "$dao" "${DAO_UNITS:-fwd_hdim64_fp16}" >"$out/logs/build-dao.log" 2>&1 \
    || { tail -20 "$out/logs/build-dao.log"; echo "error: build-dao.sh failed"; exit 1; }
  echo "Dao's kernels built in $((SECONDS - dao_start)) s"
fi
cuda_env=("${cuda_env[@]}" LD_LIBRARY_PATH="$dao:$base_ld")
