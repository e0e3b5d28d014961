# bench/examples/lib.sh: sourced by run-examples.sh and probe-examples.sh after
# bench/backend/setup.sh (which sets bin, scratch): what both do with the cases of a cases file.

# `since START`: seconds since START (date +%s.%N)
since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }'; }

# `make_models LOG`: models= the made-up models' folder: MODELS_DIR, else WORK_DIR/models,
# written there now by make-models (its output in LOG) unless already there
make_models() {
  models=${MODELS_DIR:-$scratch/models}
  if [[ ! -f $models/tokenizer.json ]]; then
    local start
    start=$(date +%s.%N)
    "$bin/make-models" models "$models" >"$1" 2>&1 \
      || { cat "$1"; echo "error: make-models failed"; exit 1; }
    echo "made-up models written to $models in $(since "$start") s"
  fi
  models=$(realpath "$models")
}

# `missing_files FILES`: missing= those of the case's made-up files (comma-separated, relative
# to the models folder) that are not there: an example given a missing path says "No such
# file or directory" without the name (quantized), or goes to the network (bert)
missing_files() {
  local need f
  missing=()
  IFS=, read -r -a need <<<"$1"
  for f in "${need[@]}"; do [[ -e $models/$f ]] || missing+=("$models/$f"); done
}

# `expand ARGS`: the case's arguments in `argv`, {M} the models' folder, {PN} the N-word prompt
expand() {
  local i a
  read -r -a argv <<<"$1"
  for i in "${!argv[@]}"; do
    a=${argv[$i]//\{M\}/$models}
    if [[ $a =~ ^\{P([0-9]+)\}$ ]]; then a=$("$bin/make-models" prompt "${BASH_REMATCH[1]}"); fi
    argv[i]=$a
  done
}
