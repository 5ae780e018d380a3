#!/usr/bin/env bash
# Quick start, step 1: set the machine up and run the main job end to end: the scenario
# scenarios/quickstart.yaml (probe agents on the AbC tree T[3,2,2], 21 containers, with a lossy
# link, a paused node and a killed server on its timeline), captured into one run directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
./setup.sh
exec "${TESTBED_VENV:-.venv}/bin/testbed" run scenarios/quickstart.yaml --analyze "$@"
