#!/usr/bin/env bash
# CI beside the whole suite (which runs on Python 3.11, tools/bootstrap.sh): install on the
# other supported Pythons and run the ROS-free tests and the lint there.
#
#   bash tools/ci_other_pythons.sh               # Python 3.10 and 3.12
#   HB_PYTHONS="3.12" bash tools/ci_other_pythons.sh
#   bash tools/ci_other_pythons.sh -x            # extra pytest options
#
# Each Python gets its own venv under .venv/other/pyX.Y (git ignores .venv/), with
# requirements-test.txt as for 3.11: the ranges there give each Python the numpy it was tested
# with. The interpreter is pythonX.Y on PATH if it runs (a pyenv shim of a version that is not
# selected does not), else the newest $PYENV_ROOT/versions/X.Y.*; a version found nowhere is
# skipped with a message (the exit status stays 0 for it).
#
# The tests: test/core and test/can (the papers' mathematics, the CAN protocol, the waist's
# servo against simulated drives, MuJoCo in lock-step: no DDS), test/test_package.py
# (packaging) and test/test_lint.py (ruff; mypy with this Python's numpy hints). About 2 min
# of CPU per Python, plus the install (about 1 min from a warm pip cache).
set -uo pipefail

cd "$(dirname "$0")/.."
PYTHONS="${HB_PYTHONS:-3.10 3.12}"
TESTS=(test/core test/can test/test_package.py test/test_lint.py)

find_python() {  # $1 = X.Y: the path of an interpreter of that version, or nothing
  local version="$1" candidate root
  if command -v "python$version" >/dev/null 2>&1 \
     && "python$version" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$version'.split('.'))))" \
        >/dev/null 2>&1; then
    command -v "python$version"
    return
  fi
  root="${PYENV_ROOT:-$HOME/.pyenv}"
  candidate="$(ls -d "$root"/versions/"$version".*/bin/"python$version" 2>/dev/null | sort -V | tail -n 1)"
  if [ -n "$candidate" ] && "$candidate" -c "import sys" >/dev/null 2>&1; then
    echo "$candidate"
  fi
}

# shellcheck source=tools/loopback_env.sh
. tools/loopback_env.sh

failed=()
for version in $PYTHONS; do
  python="$(find_python "$version")"
  if [ -z "$python" ]; then
    echo "ci_other_pythons: Python $version not found (no working python$version on PATH, none in" \
         "${PYENV_ROOT:-$HOME/.pyenv}/versions): its tests are skipped"
    continue
  fi
  venv=".venv/other/py$version"
  stamp="$venv/.installed"
  inputs="$(cat requirements.txt requirements-test.txt setup.py | sha256sum | cut -d' ' -f1)"
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import pip" >/dev/null 2>&1; then
    echo "ci_other_pythons: creating $venv with $("$python" --version)"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv" || { failed+=("$version (venv)"); continue; }
    rm -f "$stamp"
  fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "$inputs" ]; then
    echo "ci_other_pythons: installing requirements-test.txt into $venv"
    start=$SECONDS
    if "$venv/bin/python" -m pip install --quiet --upgrade pip \
       && "$venv/bin/python" -m pip install --quiet -r requirements-test.txt \
       && "$venv/bin/python" -m pip install --quiet --no-deps -e .; then
      echo "$inputs" > "$stamp"
      echo "ci_other_pythons: installed in $(( SECONDS - start )) s"
    else
      echo "ci_other_pythons: the install on Python $version failed (above)" >&2
      failed+=("$version (install)")
      continue
    fi
  fi
  echo "ci_other_pythons: Python $version: $("$venv/bin/python" -c 'import sys, numpy, scipy; print(sys.version.split()[0], "numpy", numpy.__version__, "scipy", scipy.__version__)')"
  "$venv/bin/python" -m pytest -q -p no:cacheprovider --durations=5 "${TESTS[@]}" "$@" \
    || failed+=("$version (tests)")
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "ci_other_pythons: FAILED on Python ${failed[*]}" >&2
  exit 1
fi
