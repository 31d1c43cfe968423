# Shared by the scripts of tests/cli/, tests/valgrind.sh and
# tests/serve/valgrind.sh (sourced from the repository root, not run): the
# ok/FAIL lines tests/run-all.sh counts, an exit status that says whether
# they all passed, and the check that a command fails cleanly. The sourcing script sets $work (a scratch
# directory). A check this machine cannot make prints "skip NAME: why",
# which is not counted.

LIMIT=${CHECK_SECONDS:-120}  # per command; a hang is a failure

ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "skip $1: $2"; }

# checked FUNCTION: runs FUNCTION, a shell function of the calling script
# that prints ok/FAIL lines, and passes its lines on as they come. Returns 1
# when one of them is a FAIL line or FUNCTION ends with a non-zero status
# (an exit before its last check), else 0: the exit status make valgrind
# goes by, where no tests/run-all.sh counts the lines.
checked() {
    { "$1"; echo "checked-status $?"; } | awk '
        /^checked-status [0-9]+$/ { ended = 1; failed = failed || $2 != 0; next }
        { print; fflush() }
        /^FAIL / { failed = 1 }
        END { exit (!ended || failed) ? 1 : 0 }'
}

# run OUT ERR COMMAND...: runs with a time limit, stdin from /dev/null
# unless $stdin names a file; sets $status (124: timed out). A shell
# function of the calling script runs without the limit (timeout runs
# programs only).
run() {
    out=$1 err=$2
    shift 2
    if [ "$(command -v "$1")" = "$1" ] && [ ! -f "$1" ]; then
        "$@" <"${stdin:-/dev/null}" >"$out" 2>"$err"
    else
        timeout "$LIMIT" "$@" <"${stdin:-/dev/null}" >"$out" 2>"$err"
    fi
    status=$?
}

# What the sanitizer runtimes print: one fixed string a line, the list
# tests/lib/ted_test.py reads too. None may appear, whatever the status.
SANITIZER_PATTERNS=tests/lib/sanitizer-patterns.txt

# sanitizer_report FILE: whether FILE holds a sanitizer's report.
sanitizer_report() {
    grep -qF -f "$SANITIZER_PATTERNS" "$1"
}

# sanitizer_lines FILE: the first three lines of that report, for a message.
sanitizer_lines() {
    grep -m 3 -F -f "$SANITIZER_PATTERNS" "$1"
}

# expect_error NAME PATTERN COMMAND...: exit status 1 and exactly one line on
# stderr, matching PATTERN; no sanitizer report.
expect_error() {
    name=$1 pattern=$2
    shift 2
    run "$work/out" "$work/err" "$@"
    lines=$(wc -l <"$work/err")
    if [ "$status" -eq 124 ]; then
        fail "$name" "no answer within $LIMIT s"
    elif sanitizer_report "$work/err"; then
        fail "$name" "sanitizer report: $(sanitizer_lines "$work/err")"
    elif [ "$status" -ne 1 ]; then
        fail "$name" "exit status $status, expected 1 ($(head -c 300 "$work/err"))"
    elif [ "$lines" -ne 1 ]; then
        fail "$name" "$lines lines on stderr, expected one message: $(head -c 300 "$work/err")"
    elif ! grep -qE -- "$pattern" "$work/err"; then
        fail "$name" "stderr does not match '$pattern': $(head -c 300 "$work/err")"
    else
        ok "$name"
    fi
}
