#!/usr/bin/env bash
# Sizes that wrap or explode (issue #37, class 5), through the real executable:
#   - a configuration value that sizes a buffer is range-checked where it is
#     parsed: one line naming the key, exit 2, before any data is read
#     (train.trace_events = 2^62 wrapped malloc and crashed);
#   - a JSON file read whole is refused from its size: a sparse 1 GiB
#     plan-calibration.json names the file and the limit, exit 2, nothing read;
#     a sparse 1 GiB manifest.json is a warning naming it (doctor reads on);
#   - gridtrain import care: one stray time stamp 40 years after the rest of
#     an asset's rows is skipped with a warning naming FILE:LINE (the grid
#     stays the data's size), --strict makes it the error (exit 3); an
#     event_info.csv naming one event twice is refused naming both lines.
set -u
GT="$1"
PY=/usr/bin/python3 # with h5py
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # check NAME WANT_RC PATTERN -- CMD...
  local name=$1 want=$2 pat=$3; shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL $name: exit $rc, want $want"; cat "$tmp/out" "$tmp/err"; fail=1; return; fi
  if [ -n "$pat" ] && ! grep -qE -- "$pat" "$tmp/out" "$tmp/err"; then
    echo "FAIL $name: output lacks /$pat/"; cat "$tmp/out" "$tmp/err"; fail=1; return; fi
  echo "ok   $name"
}
one_line() { # the error is one line on stderr
  local n; n=$(grep -c "error:" "$tmp/err")
  [ "$n" = 1 ] && echo "ok   $1: one line" || { echo "FAIL $1: $n error lines"; cat "$tmp/err"; fail=1; }
}

printf '[model]\nkind = s2p_cnn\n' > "$tmp/cnn.ini"
check trace-events-2p62 2 "train.trace_events = 4611686018427387904 is outside \[1, 16777216\]" -- \
  "$GT" train "$tmp/cnn.ini" data.file="$tmp/none.h5" run.dir="$tmp/r" train.trace=true train.trace_events=4611686018427387904
one_line trace-events-2p62
check trace-events-0 2 "train.trace_events = 0 is outside \[1, 16777216\]" -- \
  "$GT" train "$tmp/cnn.ini" data.file="$tmp/none.h5" run.dir="$tmp/r" train.trace_events=0
check batch-2p62 2 "train.batch = 4611686018427387904 is outside \[1, 16777216\]" -- \
  "$GT" train "$tmp/cnn.ini" data.file="$tmp/none.h5" run.dir="$tmp/r" train.batch=4611686018427387904
check micro-batch-huge 2 "train.micro_batch = 9223372036854775807 is outside \[0, 16777216\]" -- \
  "$GT" train "$tmp/cnn.ini" data.file="$tmp/none.h5" run.dir="$tmp/r" train.micro_batch=9223372036854775807
[ ! -e "$tmp/r" ] && echo "ok   no run directory made" || { echo "FAIL: a refused configuration made $tmp/r"; fail=1; }

# a sparse 1 GiB calibration file (plan reads it for a GPU plan)
"$GT" synth nilm -o "$tmp/n.h5" synth.households=2 synth.days=0.2 >/dev/null 2>&1 || { echo "FAIL synth"; fail=1; }
printf '[data]\nfile = %s/n.h5\nwindow = 63\n[model]\nkind = s2p_tf\nlayers = 1\n[train]\nbatch = 8\nmax_steps = 2\n' "$tmp" > "$tmp/tf.ini"
truncate -s 1G "$tmp/cal.json"
check calibration-1g 2 "plan.calibration: cannot read $tmp/cal.json: 1073741824 bytes, more than the 67108864 a calibration file may have" -- \
  "$GT" plan "$tmp/tf.ini" --tier ga660m plan.calibration="$tmp/cal.json"
one_line calibration-1g

# a run directory whose manifest.json is a sparse 1 GiB file: doctor names it, reads the rest
mkdir -p "$tmp/run"
truncate -s 1G "$tmp/run/manifest.json"
echo "train: started" > "$tmp/run/run.log"
check manifest-1g 8 "warning: $tmp/run/manifest.json: 1073741824 bytes, more than the 67108864 manifest.json may have: not read" -- \
  "$GT" doctor "$tmp/run"

# a CARE farm: one asset, 300 rows every 10 minutes in 2022, then one more line dated 2062 (line 302)
farm="$tmp/farm"
mkdir -p "$farm/datasets"
printf 'sensor_name,statistics_type,description,unit,is_angle,is_counter\nsensor_0,average,power,kW,False,False\n' > "$farm/feature_description.csv"
printf 'asset;event_id;event_label;event_start;event_start_id;event_end;event_end_id\n0;7;anomaly;2022-01-02 00:00:00;0;2022-01-02 10:00:00;0\n' > "$farm/event_info.csv"
"$PY" - "$farm/datasets/7.csv" <<'PY'
import datetime, sys
t0 = datetime.datetime(2022, 1, 1)
with open(sys.argv[1], "w") as f:
    f.write("time_stamp;asset_id;id;train_test;status_type_id;sensor_0_avg\n")
    for i in range(300):
        t = t0 + datetime.timedelta(minutes=10 * i)
        f.write("%s;0;%d;%s;0;%.1f\n" % (t.strftime("%Y-%m-%d %H:%M:%S"), i, "train" if i < 200 else "prediction", i % 7))
    # the stray: 40 years on, in the event's prediction part (its range is taken without it)
    f.write("%s;0;300;prediction;0;1.0\n" % (t0 + datetime.timedelta(days=40 * 365)).strftime("%Y-%m-%d %H:%M:%S"))
PY
check care-stray 0 "datasets/7.csv:302: time stamp lies 14[0-9]{3} days after the rest of asset 0's rows \(.*7.csv:301\): a stray clock; row skipped" -- \
  "$GT" import care "$farm" -o "$tmp/care.h5"
"$PY" - "$tmp/care.h5" <<'PY' && echo "ok   care-stray: the grid has the data's 300 rows, event 7 kept" || { echo "FAIL care-stray: rows"; fail=1; }
import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    n = f["/timestamps"].shape[0]
    ts = f["/timestamps"][:]
    print("rows:", n, "span (days):", (ts[-1] - ts[0]) / 86400000)
    ev = list(f["/care_events/event_id"][:]) if "/care_events/event_id" in f else []
    print("care_events:", ev)
    sys.exit(0 if n == 300 and ts[-1] - ts[0] == 299 * 600000 and ev == [7] else 1)
PY
check care-stray-strict 3 "datasets/7.csv:302: time stamp lies .* a stray clock; row skipped \(--strict\)" -- \
  "$GT" import care "$farm" --strict -o "$tmp/care2.h5"
one_line care-stray-strict
printf '0;8;normal;2022-01-02 00:00:00;0;2022-01-02 10:00:00;0\n0;7;normal;2022-01-02 00:00:00;0;2022-01-02 10:00:00;0\n' >> "$farm/event_info.csv"
check care-event-repeated 3 "event_info.csv:4: event_id 7 repeats line 2" -- "$GT" import care "$farm" -o "$tmp/care3.h5"
one_line care-event-repeated

[ $fail = 0 ] && echo "test_cli_sizes: OK"
exit $fail
