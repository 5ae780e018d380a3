#!/usr/bin/env bash
# Quick start, step 2: set the machine up (idempotent) and run the whole test suite: real
# Mininet networks, real Docker containers. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
./setup.sh
exec "${TESTBED_VENV:-.venv}/bin/pytest" -rs --durations=25 "$@"
