#!/bin/sh
# tests/peers/run_peer.sh VENV SCRIPT ARGS...: runs a peer comparison with the
# Python of the peers' environment (tests/peers/setup.sh); exit 77 (skipped)
# with the reason when that environment does not exist.
venv=$1
shift
if [ ! -x "$venv/bin/python" ]; then
    echo "skipped: no peer environment at $venv (tests/peers/setup.sh $(dirname "$venv") creates it; needs the network once)"
    exit 77
fi
exec "$venv/bin/python" "$@"
