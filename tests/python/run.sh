#!/bin/sh
# The Python package (python/ted, docs/python.md), run by tests/run-all.sh
# from the repository root:
#   1. a fresh virtualenv of Debian's Python ($PYTHON): `pip wheel .`
#      (offline: --no-build-isolation --no-deps, with Debian's setuptools, wheel and
#      NumPy) builds libted.so and the wheel, which pip installs; the wheel
#      is one for every Python 3 (README.md): tagged py3-none-PLATFORM, and
#      pip takes it for Python 3.8 and 3.13 alike; from another folder,
#      `import ted` translates the README's sentence as the README says;
#   2. tests/python/test_package.py against the ted program, under pytest
#      in the test virtualenv ($TEST_PYTHON) when it has pytest
#      (tests/requirements.txt), else alone; both print one ok/FAIL/skip
#      line per test;
#   3. examples/notebook.ipynb: its committed figures, and it runs (nbconvert)
#      where Debian's matplotlib, nbconvert and ipykernel are installed, by
#      the command docs/python.md gives, from the folder it names, leaving
#      the committed notebook as it is.
# SAN=1 (make check SAN=1): libted.so is the ASan + UBSan build of
# build-san/, and Python runs with the ASan runtime preloaded (an
# interpreter that is not sanitized cannot load it otherwise); leak
# detection is off (the interpreter's own allocations at exit would be
# reported: the RSS test watches ted's), the test sets are cut to their
# first lines (QUICK=1).
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
TEST_PYTHON=${TEST_PYTHON:-$PYTHON}
TED=${TED:-$BUILD/ted}
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

export TED="$root/$TED"
if [ "${SAN:-}" = "1" ]; then
    asan=$(${CC:-cc} -print-file-name=libasan.so)
    if [ ! -f "$asan" ]; then
        skip python/all "the ASan runtime (libasan.so) is not found for preloading"
        exit 0
    fi
    export ASAN_OPTIONS=detect_leaks=0 QUICK=1
    preload="LD_PRELOAD=$asan"
else
    preload=
fi

# ---- 1. pip install . into a fresh virtualenv --------------------------------
want="Le chat noir mange le petit oiseau."
if ! grep -qF "$want" README.md; then
    fail python/readme-says "README.md does not show '$want'"
fi
# Offline, the build uses the virtualenv's setuptools and Debian's wheel
# (python3-wheel); without them, pip fetches both (build isolation).
venv="$work/venv"
"$PYTHON" -m venv --system-site-packages "$venv" >"$work/venv.log" 2>&1
isolation=--no-build-isolation
"$venv/bin/python" -c "import setuptools, wheel" 2>/dev/null || isolation=
if [ -x "$venv/bin/pip" ] &&
    env TED_BUILD="$BUILD" SAN="${SAN:-}" "$venv/bin/pip" wheel -q --no-deps $isolation \
        --disable-pip-version-check -w "$work/wheel" "$root" >"$work/pip.log" 2>&1 &&
    "$venv/bin/pip" install -q --no-deps --disable-pip-version-check "$work"/wheel/ted-*.whl \
        >>"$work/pip.log" 2>&1; then
    ok python/pip-install
    wheel=$(cd "$work/wheel" && ls ted-*.whl)
    tag=$("$PYTHON" - "$work/wheel/$wheel" <<'PY'
import sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
name = next(n for n in wheel.namelist() if n.endswith(".dist-info/WHEEL"))
print(" ".join(line[5:] for line in wheel.read(name).decode().splitlines()
               if line.startswith("Tag: ")))
PY
)
    taken=
    for version in 3.8 3.13; do
        "$venv/bin/pip" download -q --no-index --find-links "$work/wheel" --only-binary=:all: \
            --python-version "$version" --no-deps --disable-pip-version-check \
            -d "$work/download-$version" ted >>"$work/pip.log" 2>&1 && taken="$taken $version"
    done
    case "$wheel $tag $taken" in
    ted-*-py3-none-linux_*.whl\ py3-none-linux_*\ \ 3.8\ 3.13)
        ok python/wheel-for-every-python3 ;;
    *)
        fail python/wheel-for-every-python3 "$wheel, tag '$tag', taken for Python$taken" ;;
    esac
    got=$(cd "$work" && env $preload "$venv/bin/python" -c \
        "import ted; print(ted.Translator('$root/models/en-fr').translate('The black cat eats the small bird.'))" 2>&1)
    if [ "$got" = "$want" ]; then
        ok python/readme-example
    else
        fail python/readme-example "got '$(echo "$got" | tail -n 3 | tr '\n' ' ')'"
    fi
    # the installed package ships its library
    if ls "$venv"/lib/python3*/site-packages/ted/libted.so >/dev/null 2>&1; then
        ok python/ships-libted
    else
        fail python/ships-libted "no ted/libted.so in the virtualenv"
    fi
else
    fail python/pip-install "$(tail -n 5 "$work/venv.log" "$work/pip.log" | tr '\n' ' ')"
fi

# ---- 2. the package's tests --------------------------------------------------
# The package of this tree, with the library make built ($BUILD/libted.so).
export PYTHONPATH="$root/python" TED_LIBRARY="$root/$BUILD/libted.so"
if [ ! -f "$TED_LIBRARY" ]; then
    fail python/tests "$TED_LIBRARY is missing (make python BUILD=$BUILD)"
    exit 1
fi
if "$TEST_PYTHON" -c "import pytest" >/dev/null 2>&1; then
    env $preload "$TEST_PYTHON" -m pytest -q -s -p no:cacheprovider \
        tests/python/test_package.py >"$work/tests.log" 2>&1
else
    echo "# pytest is not installed ($TEST_PYTHON): the tests run alone"
    env $preload "$TEST_PYTHON" tests/python/test_package.py >"$work/tests.log" 2>&1
fi
status=$?
grep -E '^(ok|FAIL|skip|info) ' "$work/tests.log"
if sanitizer_report "$work/tests.log"; then
    fail python/sanitizer "$(sanitizer_lines "$work/tests.log" | tr '\n' ' ')"
fi
if [ "$status" -ne 0 ] && ! grep -q '^FAIL ' "$work/tests.log"; then
    tail -n 20 "$work/tests.log"
    fail python/tests "exit $status"
fi

# ---- 3. the notebook ---------------------------------------------------------
# examples/notebook.ipynb is committed with its figures (GitHub shows them):
# those are there; with Debian's matplotlib, nbconvert and ipykernel it runs
# top to bottom (tests/python/make_notebook.py writes its cells).
if "$PYTHON" - examples/notebook.ipynb <<'PY' >"$work/nb-check.log" 2>&1
import json, sys
nb = json.load(open(sys.argv[1], encoding="utf-8"))
outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
assert any("image/png" in o.get("data", {}) for o in outputs), "no figure"
first = outputs[0]["data"]["text/plain"]
text = "".join(first) if isinstance(first, list) else first
assert text == "'Le chat noir mange le petit oiseau.'", text
PY
then
    ok python/notebook-rendered
else
    fail python/notebook-rendered "$(tail -n 1 "$work/nb-check.log")"
fi
# docs/python.md's command, as written, from the folder it names (the
# repository root): it writes build/notebook/notebook.ipynb and leaves the
# committed notebook as it is.
command=$(sed -n 's/^\(jupyter nbconvert .*--output-dir .*\)$/\1/p' docs/python.md | head -n 1)
rendered=build/notebook/notebook.ipynb
if [ -z "$command" ]; then
    fail python/notebook-runs "docs/python.md gives no 'jupyter nbconvert ... --output-dir' line"
elif command -v jupyter >/dev/null 2>&1 &&
    "$PYTHON" -c "import matplotlib, nbconvert, ipykernel" >/dev/null 2>&1; then
    before=$(cksum <examples/notebook.ipynb)
    rm -f "$rendered"
    if env $preload sh -c "$command" >"$work/nb.log" 2>&1 && grep -q 'image/png' "$rendered" &&
        [ "$(cksum <examples/notebook.ipynb)" = "$before" ]; then
        ok python/notebook-runs
    else
        fail python/notebook-runs "'$command': $(grep -v WARNING "$work/nb.log" | tail -n 3 | tr '\n' ' ')$(git status --short examples/notebook.ipynb 2>/dev/null)"
    fi
    rm -f "$rendered"
else
    skip python/notebook-runs "Debian's python3-matplotlib, jupyter-nbconvert and python3-ipykernel are not installed"
fi
exit 0
