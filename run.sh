#!/usr/bin/env bash
# Sets up what this harness needs (each step is a no-op when already done): a virtual environment of its own
# (.venv, from the host's python3 3.11), the harness installed into it from this repository, then one job:
#   bash run.sh certify  certify the reference exactly-once sink end to end (quick matrix), print its certificate
#   bash run.sh smoke    bring the cluster up, run the passthrough scenario, print the result table
#   bash run.sh test     what CI runs: lint (ruff), the docs site (mkdocs, strict), then the unit, smoke,
#                        integration and gate tests
#   bash run.sh setup    only the virtual environment (with the test tools) and `doctor` (what is missing, and the fix)
#   bash run.sh docs     only the docs site (mkdocs build --strict, into site/)
# certify, smoke and test also install Docker (as root on Debian: `doctor --fix`) and build the images.
# Extra arguments go to the job (python -m harness certify|smoke ... / pytest ...).
set -euo pipefail
cd "$(dirname "$0")"
job="${1:-}"
shift || true
case "$job" in
  certify|smoke|test|setup|docs) ;;
  *) echo "usage: bash run.sh certify|smoke|test|setup|docs [args]" >&2; exit 2 ;;
esac

missing() { echo "run.sh: missing: $1" >&2; exit 3; }

command -v python3 >/dev/null || missing "python3 (Python 3.11: on Debian 12, apt-get install python3 python3-venv)"
python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
  missing "Python 3.11 as python3 (found $(python3 -V 2>&1)); the images run Debian 12's Python 3.11 and get the host's wheels"
if [ ! -x .venv/bin/python ]; then
  if ! python3 -m venv .venv 2>/dev/null; then
    rm -rf .venv
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "run.sh: installing python3-venv (python3 -m venv needs ensurepip) ..." >&2
      apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >/dev/null
      python3 -m venv .venv
    else
      missing "python3 -m venv (ensurepip): sudo apt-get install python3-venv, then run this again"
    fi
  fi
fi
python=.venv/bin/python
"$python" -m pip install -q --upgrade pip
extras=""  # the lint, docs and test tools for the jobs (and contributors' setup) that use them: certify and smoke download less
case "$job" in test|docs|setup) extras="[test]" ;; esac
"$python" -m pip install -q -e ".$extras"
docs() { NO_MKDOCS_2_WARNING=1 "$python" -m mkdocs build --strict --quiet; }

case "$job" in
  setup) exec "$python" -m harness doctor ;;
  docs) docs; echo "docs: site/index.html"; exit 0 ;;
  test) "$python" -m ruff check harness fixtures suites benchmarks examples conftest.py  # lint first: fails CI
        docs ;;  # a broken link or a missing page fails CI
esac
"$python" -m harness doctor --fix
"$python" -m harness images build
case "$job" in
  certify) exec "$python" -m harness certify --sink transactional --quick "$@" ;;
  smoke) exec "$python" -m harness smoke "$@" ;;
  test) exec "$python" -m pytest -m "unit or smoke or integration or gate" "$@" ;;
esac
