# tests/eval/lib.sh: configurations shared by the eval script tests (sourced).

# gt_tiny_nilm_ini FILE DATA RUN_DIR MAX_STEPS EVAL_EVERY [EXTRA]: a seq2point
# CNN small enough for a few seconds of CPU training; EXTRA (INI text, may
# reopen a section) is appended.
gt_tiny_nilm_ini() {
  cat > "$1" <<INI
[data]
file = $2
window = 63
stride = 16
holdout_every = 4
[model]
kind = s2p_cnn
layers = 3
conv_scale = 0.25
hidden = 32
[train]
batch = 32
epochs = 0
max_steps = $4
log_every = 10
eval_every = $5
patience = 0
[run]
dir = $3
INI
  [ -z "${6:-}" ] || printf '%s\n' "$6" >> "$1"
}

# gt_tiny_pdm_ini FILE DATA RUN_DIR MAX_STEPS EVAL_EVERY: the LSTM likewise.
gt_tiny_pdm_ini() {
  cat > "$1" <<INI
[data]
file = $2
window = 48
stride = 24
[model]
kind = lstm
hidden = 16
layers = 1
[train]
batch = 16
epochs = 0
max_steps = $4
log_every = 10
eval_every = $5
patience = 0
[run]
dir = $3
INI
}
