#!/usr/bin/env bash
# Set up everything on a machine with only Python >= 3.10 and pip, then run a job.
#
#   bash tools/bootstrap.sh demo [demo options]   # install, run the simulated demo
#   bash tools/bootstrap.sh test [pytest options] # install, run the whole test suite (2 workers)
#   bash tools/bootstrap.sh setup                 # install only
#
# Installs into .venv/ in the checkout (PyPI only: rclpy and the ROS messages
# come as wheels, see requirements.txt). Every DDS participant it starts stays
# on the loopback interface (config/fastdds_loopback.xml).
set -euo pipefail

cd "$(dirname "$0")/.."
job="${1:-setup}"
shift || true

PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  # the first that runs: a pyenv shim of a version pyenv has not selected is on PATH but fails
  for candidate in python3.11 python3.12 python3.10 python3; do
    if "$candidate" -c "import sys" >/dev/null 2>&1; then PYTHON="$candidate"; break; fi
  done
fi
[ -n "$PYTHON" ] || { echo "bootstrap: no python3 found" >&2; exit 2; }

VENV="${HB_VENV:-.venv}"
stamp="$VENV/.installed"
if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi
# a creation stopped half-way (Ctrl-C, a killed CI job) leaves a python without pip
if ! "$VENV/bin/python" -c "import pip" >/dev/null 2>&1; then
  echo "bootstrap: $VENV has no pip (its creation was interrupted?): installing pip into it"
  "$VENV/bin/python" -m ensurepip --upgrade >/dev/null || {
    echo "bootstrap: could not install pip into $VENV: delete $VENV and run this again" >&2
    exit 2; }
  rm -f "$stamp"
fi
if [ ! -f "$stamp" ] || [ requirements.txt -nt "$stamp" ] || [ requirements-test.txt -nt "$stamp" ] \
   || [ setup.py -nt "$stamp" ]; then
  echo "bootstrap: installing requirements (first run takes about a minute)"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -r requirements-test.txt
  "$VENV/bin/python" -m pip install --quiet --no-deps -e .
  touch "$stamp"
fi

# shellcheck source=tools/loopback_env.sh
. tools/loopback_env.sh

if [ "$job" = setup ] || [ "$job" = demo ]; then
  # numba compiles the cycles' kernels into its cache now, once (later runs load them in
  # about 0.3 s), not in the demo's processes: the compile's seconds of load at their start
  # shifted what runs on the wall clock (the waist's drives) and a first lock-step demo
  # after a change to the kernels gave 16.74 instead of 15.99 mm
  "$VENV/bin/python" -c "from humanoid_balance.core import kernels; kernels.warm_up()
from humanoid_balance.sim.humanoid import HumanoidSim; HumanoidSim()"
fi

case "$job" in
  setup) echo "bootstrap: ready ($VENV)";;
  demo)  exec "$VENV/bin/humanoid-balance" demo "$@";;
  # two workers (HB_TEST_WORKERS; 0: none), a test file each at a time: most tests wait on
  # processes and DDS, so two share a 2-core machine well (16-17 min in one, on CI's machine)
  test)  exec "$VENV/bin/python" -m pytest -n "${HB_TEST_WORKERS:-2}" --dist loadfile "$@";;
  *)     echo "bootstrap: unknown job '$job' (setup | demo | test)" >&2; exit 2;;
esac
