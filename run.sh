#!/usr/bin/env bash
# Sets up everything this harness needs on a fresh machine (each step is a no-op when already done),
# then runs one job:
#   bash run.sh certify certify the reference exactly-once sink (quick matrix), print the matrix
#   bash run.sh smoke   bring the cluster up, run the passthrough scenario, print the result table
#   bash run.sh test    the CI suite: lint (ruff), then unit, smoke, integration and the chaos gate
# Extra arguments go to the job (python -m harness certify|smoke ... / pytest ...).
set -euo pipefail
cd "$(dirname "$0")"
job="${1:-}"
shift || true
case "$job" in
  certify|smoke|test) ;;
  *) echo "usage: bash run.sh certify|smoke|test [args]" >&2; exit 2 ;;
esac
python3 -m pip install -q --root-user-action=ignore -e '.[test]'
python3 -m harness doctor --fix
python3 -m harness images build
case "$job" in
  certify) exec python3 -m harness certify --sink transactional --quick "$@" ;;
  smoke) exec python3 -m harness smoke "$@" ;;
  test) python3 -m ruff check harness fixtures suites benchmarks examples conftest.py  # lint first: a lint error fails CI
        exec python3 -m pytest -m "unit or smoke or integration or gate" "$@" ;;
esac
