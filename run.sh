#!/usr/bin/env bash
# Sets up what this harness needs (each step is a no-op when already done): a virtual environment of its own
# (.venv, from the newest host Python of 3.13, 3.12 and 3.11 found: on PATH, then pyenv's; HARNESS_PYTHON names
# another), the harness installed into it from this repository, then one job:
#   bash run.sh certify  certify the reference exactly-once sink end to end (quick matrix), print its certificate
#   bash run.sh smoke    bring the cluster up, run the passthrough scenario, print the result table
#   bash run.sh test     what CI runs: lint (ruff), the docs site (mkdocs, strict), then the unit tests and
#                        the gate (pytest -m "unit or gate" in two pytest-xdist workers, each with a cluster)
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

supported() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] not in ((3, 11), (3, 12), (3, 13)))' 2>/dev/null; }
host_python() {  # the newest supported Python that runs (a pyenv shim of a version not selected does not)
  if [ -n "${HARNESS_PYTHON:-}" ]; then
    supported "$HARNESS_PYTHON" && { echo "$HARNESS_PYTHON"; return; }
    missing "HARNESS_PYTHON=$HARNESS_PYTHON is not a Python 3.11, 3.12 or 3.13"
  fi
  local root minor candidate
  root="$(pyenv root 2>/dev/null || true)"
  for minor in 13 12 11; do
    for candidate in "python3.$minor" $( [ -n "$root" ] && ls -d "$root"/versions/3."$minor".*/bin/python3 2>/dev/null | sort -rV ); do
      supported "$candidate" && { command -v "$candidate"; return; }
    done
  done
  supported python3 && { command -v python3; return; }
  missing "Python 3.11, 3.12 or 3.13 (on Debian 12: apt-get install python3 python3-venv)"
}
python3="$(host_python)"
version="$("$python3" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [ -x .venv/bin/python ] && [ "$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$version" ]; then
  echo "run.sh: .venv is another Python's; making it again from Python $version ($python3)" >&2
  rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
  echo "run.sh: .venv from Python $version ($python3)" >&2
  if ! "$python3" -m venv .venv 2>/dev/null; then
    rm -rf .venv
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "run.sh: installing python3-venv (python3 -m venv needs ensurepip) ..." >&2
      apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >/dev/null
      "$python3" -m venv .venv
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
# the example store in a package of its own, found through its entry point as a team's store would be (the tests'
# and contributors' environments: examples/files_store)
case "$job" in test|setup) "$python" -m pip install -q --no-deps -e examples/files_store ;; esac
docs() { NO_MKDOCS_2_WARNING=1 "$python" -m mkdocs build --strict --quiet; }

case "$job" in
  setup) exec "$python" -m harness doctor ;;
  docs) docs; echo "docs: site/index.html"; exit 0 ;;
  test) "$python" -m ruff check harness fixtures suites benchmarks examples conftest.py  # lint first: fails CI
        docs ;;  # a broken link or a missing page fails CI
esac
"$python" -m harness doctor --fix
case "$job" in  # certify and smoke: the images a Kafka run starts (a table output's servers come with its run)
  test) "$python" -m harness images build ;;  # every image, the S3 stores' too, at once before the tests: none inside one
  *) "$python" -m harness images build --output kafka ;;
esac
case "$job" in
  certify) exec "$python" -m harness certify --sink transactional --quick "$@" ;;
  smoke) exec "$python" -m harness smoke "$@" ;;
  test) exec "$python" -m pytest -m "unit or gate" -n 2 --dist worksteal --durations=25 "$@" ;;  # an idle worker takes half the other's queue
esac
