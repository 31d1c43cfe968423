#!/bin/sh
# Runs every test suite and prints one closing line: "N passed, N failed".
#   unit:   the Criterion binary (one count per Criterion test)
#   cli:    tests/cli/*.sh, the ted program as a user runs it
#   parity: tests/parity/*.py, ted against PyTorch and transformers
#   serve:  tests/serve/test_*.py, ted serve over loopback; tests/serve/client_*.py,
#           the same with other projects' clients (in the test virtualenv)
#   deploy: tests/deploy/*.py, nginx, GNU parallel, Slurm and systemd recipes
#   browser: tests/browser/*.py, ted serve's explorer page in headless Chromium
#   python: tests/python/run.sh, the Python package (pip install ., pytest)
#   example: the C API example
# Scripts print "ok NAME" or "FAIL NAME: why" per check; only those lines
# count. "skip NAME: why" (a check this machine cannot make) is shown, not
# counted; any other line ("# ...", "info ...") is the script's own.
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
# The parity tests run in the test virtualenv (make venv), which also sees
# Debian's packages; without it, in Debian's Python.
TEST_PYTHON=${TEST_PYTHON:-$PYTHON}
export BUILD PYTHON TEST_PYTHON
# Under SAN=1, LeakSanitizer leaves out what the test harness's own libraries
# leak (tests/lib/lsan-suppressions.txt); ted's allocations are all checked.
LSAN_OPTIONS="suppressions=$(pwd)/tests/lib/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS
TED="$BUILD/ted"
export TED
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

count_checks() {  # $1 = suite name; reads ok/FAIL lines from $log
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    passed=$((passed + p))
    failed=$((failed + f))
    grep -E '^(FAIL|skip) ' "$log"
    echo "$1: $p passed, $f failed"
}

run_script() {  # $@ = the command running $script; a crash without FAIL lines counts once
    echo "== $script"
    "$@" >"$log" 2>&1
    status=$?
    count_checks "$script"
    if [ "$status" -ne 0 ] && ! grep -q '^FAIL ' "$log"; then
        tail -n 20 "$log"; failed=$((failed + 1))
    fi
}

echo "== unit tests (Criterion)"
"$BUILD/unit-tests" --jobs 2 >"$log" 2>&1
status=$?
grep -E '^\[(----|FAIL)\]|Synthesis' "$log" | tail -n 40
synth=$(grep 'Synthesis' "$log" | tail -n 1)
p=$(echo "$synth" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
t=$(echo "$synth" | sed -n 's/.*Tested: \([0-9]*\).*/\1/p')
if [ -z "$p" ] || [ -z "$t" ]; then
    echo "FAIL unit: the Criterion binary did not report (exit $status)"
    failed=$((failed + 1))
else
    passed=$((passed + p))
    failed=$((failed + t - p))
    [ "$status" -ne 0 ] && [ "$t" -eq "$p" ] && failed=$((failed + 1))
fi

# The code's mechanical rules (CONTRIBUTING.md): function length, parameter
# lists, the include graph; each violation one FAIL line.
echo "== structure (scripts/check-structure.sh)"
scripts/check-structure.sh >"$log" 2>&1
status=$?
case $status in
0) echo "ok structure" >"$log" ;;
1) sed -i -e '/^check-structure:/d' -e 's/^/FAIL structure: /' "$log" ;;
*) sed -i 's/^/FAIL structure: /' "$log" ;;
esac
count_checks structure

for script in tests/cli/*.sh; do
    [ -e "$script" ] && run_script sh "$script"
done

for script in tests/parity/test_*.py; do
    [ -e "$script" ] && run_script "$TEST_PYTHON" "$script"
done

script=tests/python/run.sh; run_script env SAN="${SAN:-}" sh "$script"  # the Python package

# ted serve over loopback, in Debian's Python (the standard library only);
# SAN=1 scales its load down
for script in tests/serve/test_*.py; do
    [ -e "$script" ] && run_script env SAN="${SAN:-}" "$PYTHON" "$script"
done

# ted serve for other projects' clients (libretranslatepy, schemathesis), in
# the test virtualenv that holds them (tests/requirements.txt)
for script in tests/serve/client_*.py; do
    [ -e "$script" ] && run_script env SAN="${SAN:-}" "$TEST_PYTHON" "$script"
done

# the deployments of docs/deploy.md: nginx in front of ted serve processes,
# GNU parallel and a Slurm array script for bulk files, the systemd unit
for script in tests/deploy/test_*.py; do
    [ -e "$script" ] && run_script env SAN="${SAN:-}" "$PYTHON" "$script"
done

# the explorer page of ted serve in headless Chromium, over the DevTools
# protocol (Debian's python3-websocket)
for script in tests/browser/test_*.py; do
    [ -e "$script" ] && run_script env SAN="${SAN:-}" "$PYTHON" "$script"
done

echo "== example"
expected="le petit chat dort ."
if out=$("$BUILD/example-translate" models/toy-en-fr 2>&1) && [ "$out" = "$expected" ]; then
    echo "ok example: $out"; passed=$((passed + 1))
else
    echo "FAIL example: got '$out', expected '$expected'"; failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
