#!/usr/bin/env bash
# Quick start, step 1: set the machine up and run the main job end to end: the default
# topology (the AbC paper's tree T[3,2,2], 21 containers) is built, every node pings every
# other, the report is printed, and everything is torn down.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
./setup.sh
exec "${TESTBED_VENV:-.venv}/bin/testbed" pingall topologies/tree-3-2-2.yaml "$@"
