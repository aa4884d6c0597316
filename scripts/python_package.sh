#!/usr/bin/env bash
# Builds and installs the Python package with `pip install .` into a virtualenv of its own
# (build-python/venv; build-python/ is also scikit-build-core's build folder, beside build/
# so that ccache finds what build/ compiled), then runs its tests with pytest.
# Prints the venv's python on the last line, for scripts that run Python examples. The
# tests include ruff's lint of the package, its tests and examples (pyproject.toml).
# Arguments go to pytest (e.g. -k session). TESSERA_PYTHON_TESTS=0 installs without testing.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$PWD/build-python/venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# The build backend and its tools in the venv, so that installs after the first neither
# download them again nor rebuild in an isolated environment; TensorBoard reads the tests'
# event files back (a test-only dependency).
"$venv/bin/pip" install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=2.0" pytest ruff \
  tensorboard >&2
"$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation \
  --config-settings=cmake.define.TESSERA_WERROR="${TESSERA_WERROR:-OFF}" . >&2
if [ "${TESSERA_PYTHON_TESTS:-1}" != 0 ]; then
  "$venv/bin/ruff" check -q python tests/python examples/python bench/python_peers.py >&2
  # From outside the checkout: the tests import the installed package, not python/tessera.
  # Their temporary files go under build-python/, not /tmp, and no cache is left beside them.
  (cd build-python && "$venv/bin/python" -m pytest -q -p no:cacheprovider --basetemp="$PWD/pytest-tmp" \
     ../tests/python "$@" >&2)
fi
echo "$venv/bin/python"
