# tests/train/train_script_lib.sh: shared set-up of the trainer's script tests.
# $1 = train tool (train_tool, or gridtrain once 'train' is registered), $2 = gridtrain (synth).
set -u
TOOL=$1
GRIDTRAIN=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1 GT_LOG_LEVEL=info
# prefer the real CLI when it knows the command
if "$GRIDTRAIN" train --help >/dev/null 2>&1; then TRAIN=("$GRIDTRAIN" train); else TRAIN=("$TOOL" train); fi
W=$(mktemp -d "${GT_BINARY_DIR:-/tmp}/train-script-XXXXXX")
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# a small NILM file and a config training a tiny s2p_cnn for $1 steps
make_data() {
  "$GRIDTRAIN" synth nilm -o "$W/nilm.h5" --households 3 --days 1 --period 6 --lowres-period 0 \
      --spike-rate 0 --gap-rate 0 --stuck-rate 0 --seed 7 >/dev/null 2>&1 || fail "synth"
  cat > "$W/train.ini" <<INI
[data]
file = $W/nilm.h5
window = 63
stride = 16
[model]
kind = s2p_cnn
layers = 3
conv_scale = 0.3
hidden = 32
[optim]
lr = 3e-3
warmup = 5
[train]
batch = 32
micro_batch = 8
epochs = 0
max_steps = $1
log_every = 1
eval_every = 50
patience = 0
[run]
checkpoint_every = 25
checkpoint_minutes = 0
INI
}
checksum() { grep -o 'params xxh64 [0-9a-f]*' "$1" | tail -1 | awk '{print $3}'; }
