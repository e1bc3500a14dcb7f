#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# python/tests/ctest.sh - the Python package under ctest (tests/CMakeLists.txt, issue 30).
#
#   ctest.sh install PYTHON VENV SOURCE BUILD [NAME=VALUE...]
#     Makes VENV, a venv of PYTHON with its system site packages (Debian's numpy, and
#     pytest, pyzmq and protobuf where installed), adds what it lacks from PyPI
#     (scikit-build-core and pytest; stumpy, for test_stump.py and test_stumpi.py only:
#     without it those tests skip), then builds the package from the checkout SOURCE the way a user does,
#     `pip install SOURCE/python`, with the CMake definitions NAME=VALUE and its build
#     tree kept in BUILD (a rerun rebuilds only what changed). Exits 77 after a SKIP line
#     where the venv or PyPI is unavailable; 1 when the package does not build.
#   ctest.sh pytest VENV TEST_FILE... [-- PYTEST OPTIONS]
#     pytest on the files with VENV's Python: the installed package, never the source
#     tree's (the working directory is not python/). 77 (skipped) when VENV holds no
#     tsmine, as after a skipped install; conftest.py exits 77 when every test skipped.
set -u

skip() {
    echo "SKIP: $*"
    exit 77
}

install() {
    python=$1 venv=$2 src=$3 build=$4
    shift 4
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv --system-site-packages "$venv" ||
            skip "cannot make a venv with $python (Debian: python3-venv)"
    fi
    py=$venv/bin/python
    pip="$py -m pip --disable-pip-version-check"
    # a package left from an earlier run must not pass for this one
    $pip uninstall -q -y tsmine >/dev/null 2>&1
    $py -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
        skip "no C headers for $python (Debian: python3-dev)"
    for req in scikit-build-core:scikit_build_core pytest:pytest numpy:numpy; do
        $py -c "import ${req#*:}" 2>/dev/null && continue
        $pip install -q "${req%%:*}" || skip "cannot install ${req%%:*} from PyPI"
    done
    $py -c 'import stumpy' 2>/dev/null || $pip install -q stumpy ||
        echo "ctest.sh: stumpy could not be installed: test_stump.py and test_stumpi.py skip" >&2
    defines=""
    for d in "$@"; do
        defines="$defines --config-settings=cmake.define.$d"
    done
    start=$(date +%s)
    # shellcheck disable=SC2086 # pip and defines are word lists
    $pip install --no-build-isolation --no-deps --config-settings=build-dir="$build" \
        $defines "$src/python" || exit 1
    echo "ctest.sh: pip install $src/python: $(($(date +%s) - start)) s"
    $py -c 'import tsmine; print("tsmine", tsmine.__version__, tsmine.backends())' || exit 1
}

run_pytest() {
    venv=$1
    shift
    files=""
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        files="$files $1"
        shift
    done
    [ $# -gt 0 ] && shift
    if ! [ -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tsmine' 2>/dev/null; then
        skip "no tsmine package in $venv (its install was skipped)"
    fi
    # shellcheck disable=SC2086 # files is a word list
    exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" $files
}

case ${1:-} in
install)
    shift
    install "$@"
    ;;
pytest)
    shift
    run_pytest "$@"
    ;;
*)
    sed -n '3,17p' "$0" >&2
    exit 64
    ;;
esac
