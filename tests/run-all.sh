#!/bin/sh
# Runs the test suites and prints one closing line: "N passed, N failed".
#
#   tests/run-all.sh [-j N] [SUITE...]
#
# -j N runs N suites at once (default 1; make check passes CHECK_JOBS). Each
# suite's output is shown whole, as one group, when it ends, with the
# seconds it took; the closing line counts them all. SUITE names one of the
# suites below ("unit", "structure", "example", or a script's path, e.g.
# tests/cli/hostile.sh); none names them all.
#   unit:   the Criterion binary (one count per Criterion test)
#   structure: scripts/check-structure.sh, the rules of CONTRIBUTING.md
#   cli:    tests/cli/*.sh, the ted program as a user runs it
#   fuzz:   fuzz/replay.sh, each fuzz harness over its corpus (fuzz/corpus/)
#   parity: tests/parity/*.py, ted against PyTorch and transformers
#   serve:  tests/serve/test_*.py, ted serve over loopback; tests/serve/client_*.py,
#           the same with other projects' clients (in the test virtualenv)
#   deploy: tests/deploy/*.py, nginx, GNU parallel, Slurm and systemd recipes
#   browser: tests/browser/*.py, ted serve's explorer page in headless Chromium
#   python: tests/python/run.sh, the Python package (pip install ., pytest)
#   distributed: tests/distributed/test_*.py, ted.ray, ted.spark and ted.dask on
#           local clusters of those engines (in the test virtualenv; skipped under SAN=1)
#   example: the C API example
# Scripts print "ok NAME" or "FAIL NAME: why" per check; only those lines
# count. "skip NAME: why" (a check this machine cannot make) is shown, not
# counted; any other line ("# ...", "info ...") is the script's own.
#
# The suites share nothing that running them at once would break: every
# server listens on a port the kernel picks (--port 0), every script writes
# into a directory of its own (mktemp -d).
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

. tests/lib/checks.sh  # sanitizer_report, sanitizer_lines

# ---- one suite: tests/run-all.sh --suite NAME OUT --------------------------
# Runs suite NAME; writes what it shows into OUT and "PASSED FAILED" into
# OUT.counts.

count_checks() {  # $1 = suite name; reads ok/FAIL lines from $log
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    passed=$((passed + p))
    failed=$((failed + f))
    grep -E '^(FAIL|skip) ' "$log"
    echo "$1: $p passed, $f failed"
}

run_script() {  # $@ = the command running $suite; a crash without FAIL lines counts once
    "$@" >"$log" 2>&1
    status=$?
    count_checks "$suite"
    if [ "$status" -ne 0 ] && ! grep -q '^FAIL ' "$log"; then
        tail -n 20 "$log"; failed=$((failed + 1))
    fi
}

# UNIT_FILTER: a Criterion --filter pattern (make check-tsan leaves out the
# suites that start no thread); a sanitizer's report fails the suite.
unit_suite() {
    "$BUILD/unit-tests" --jobs 2 ${UNIT_FILTER:+--filter "$UNIT_FILTER"} >"$log" 2>&1
    status=$?
    grep -E '^\[(----|FAIL)\]|Synthesis' "$log" | tail -n 40
    if sanitizer_report "$log"; then
        echo "FAIL unit: a sanitizer's report: $(sanitizer_lines "$log" | head -c 600)"
        failed=$((failed + 1))
    fi
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
}

# The code's mechanical rules (CONTRIBUTING.md): function length, parameter
# lists, the include graph; each violation one FAIL line.
structure_suite() {
    scripts/check-structure.sh >"$log" 2>&1
    case $? in
    0) echo "ok structure" >"$log" ;;
    1) sed -i -e '/^check-structure:/d' -e 's/^/FAIL structure: /' "$log" ;;
    *) sed -i 's/^/FAIL structure: /' "$log" ;;
    esac
    count_checks structure
}

example_suite() {
    expected="le petit chat dort ."
    if out=$("$BUILD/example-translate" models/toy-en-fr 2>&1) && [ "$out" = "$expected" ]; then
        echo "ok example: $out"; passed=$((passed + 1))
    else
        echo "FAIL example: got '$out', expected '$expected'"; failed=$((failed + 1))
    fi
}

run_suite() {  # $1 = the suite's name
    suite=$1
    case $suite in
    unit) echo "== unit tests (Criterion)"; unit_suite ;;
    structure) echo "== structure (scripts/check-structure.sh)"; structure_suite ;;
    example) echo "== example"; example_suite ;;
    *) echo "== $suite" ;;
    esac
    case $suite in
    unit | structure | example) ;;
    tests/cli/*.sh) run_script sh "$suite" ;;
    # every fuzz harness over its corpus (fuzz/corpus/), once
    fuzz/replay.sh) run_script sh "$suite" ;;
    tests/parity/*.py) run_script "$TEST_PYTHON" "$suite" ;;
    tests/python/run.sh) run_script env SAN="${SAN:-}" sh "$suite" ;;  # the Python package
    tests/distributed/test_*.py) run_script env SAN="${SAN:-}" "$TEST_PYTHON" "$suite" ;;
    # ted serve over loopback, in Debian's Python (the standard library
    # only); SAN=1 scales its load down
    tests/serve/test_*.py) run_script env SAN="${SAN:-}" "$PYTHON" "$suite" ;;
    # ted serve for other projects' clients (libretranslatepy,
    # schemathesis), in the test virtualenv that holds them
    # (tests/requirements.txt)
    tests/serve/client_*.py) run_script env SAN="${SAN:-}" "$TEST_PYTHON" "$suite" ;;
    # the deployments of docs/deploy.md: nginx in front of ted serve
    # processes, GNU parallel and a Slurm array script for bulk files, the
    # systemd unit; the explorer page of ted serve in headless Chromium, over
    # the DevTools protocol (Debian's python3-websocket)
    tests/deploy/test_*.py | tests/browser/test_*.py)
        run_script env SAN="${SAN:-}" "$PYTHON" "$suite" ;;
    *) echo "FAIL $suite: not a suite of tests/run-all.sh"; failed=$((failed + 1)) ;;
    esac
}

if [ "$1" = --suite ]; then
    passed=0 failed=0 log="$3.log"
    start=$(date +%s)
    run_suite "$2" >"$3"
    echo "($2: $(($(date +%s) - start)) s)" >>"$3"
    rm -f "$log"
    echo "$passed $failed" >"$3.part"
    mv "$3.part" "$3.counts"
    exit 0
fi

# ---- every suite named, N at a time ----------------------------------------

jobs=1
if [ "$1" = -j ]; then
    jobs=$2
    shift 2
fi
case $jobs in '' | *[!0-9]* | 0) echo "tests/run-all.sh: -j takes a number of suites, not '$jobs'" >&2; exit 2 ;; esac

all_suites() {
    echo unit
    echo structure
    for script in tests/cli/*.sh fuzz/replay.sh tests/parity/test_*.py tests/python/run.sh \
        tests/distributed/test_*.py tests/serve/test_*.py tests/serve/client_*.py tests/deploy/test_*.py \
        tests/browser/test_*.py; do
        [ -e "$script" ] && echo "$script"
    done
    echo example
}

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ $# -eq 0 ]; then
    all_suites >"$dir/suites"
else
    printf '%s\n' "$@" >"$dir/suites"
fi
count=$(wc -l <"$dir/suites")

# xargs starts the suites, at most $jobs at once; each writes $dir/N (its
# output) and $dir/N.counts when it ends. They are shown as they end.
nl -ba -w1 -s' ' "$dir/suites" |
    xargs -P "$jobs" -L 1 sh -c 'sh "$0" --suite "$3" "$1/$2"' "$0" "$dir" &
runner=$!

passed=0
failed=0
shown=0
while [ "$shown" -lt "$count" ]; do
    found=0
    for counts in "$dir"/*.counts; do
        [ -e "$counts" ] || continue
        out=${counts%.counts}
        cat "$out"
        read -r p f <"$counts"
        passed=$((passed + p))
        failed=$((failed + f))
        rm -f "$out" "$counts"
        shown=$((shown + 1))
        found=1
    done
    if [ "$found" -eq 0 ]; then
        if ! kill -0 "$runner" 2>/dev/null && [ -z "$(ls "$dir"/*.counts 2>/dev/null)" ]; then
            echo "FAIL run-all: $((count - shown)) suites ended without a count"
            failed=$((failed + count - shown))
            break
        fi
        sleep 0.2
    fi
done
wait "$runner"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
