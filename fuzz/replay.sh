#!/bin/sh
# The corpora of the fuzz harnesses, replayed (a suite of tests/run-all.sh;
# make fuzz-replay alone): BUILD/fuzz-replay/NAME, a harness of fuzz/ with
# fuzz/replay.c's main() (make builds them), runs every file of
# fuzz/corpus/NAME/ once. Each harness is one check: "ok fuzz/NAME: N
# inputs", or "FAIL fuzz/NAME: why" when it crashed, broke one of its
# REQUIREs, took over REPLAY_SECONDS or printed a sanitizer's report (built
# with SAN=1: ASan + UBSan). fuzz/run.sh's libFuzzer runs start from the same
# corpora. Exits 1 when a check failed.
#
# fuzz/make_seeds.py writes the corpora (python3 fuzz/make_seeds.py
# fuzz/corpus); an input that once failed goes into its harness's corpus.
BUILD=${BUILD:-build}
REPLAY_SECONDS=${REPLAY_SECONDS:-300}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

failed=0
for corpus in fuzz/corpus/*/; do
    name=$(basename "$corpus")
    replay="$BUILD/fuzz-replay/$name"
    if [ ! -x "$replay" ]; then
        fail "fuzz/$name" "$replay is missing (make BUILD=$BUILD $replay)"
        failed=1
        continue
    fi
    timeout "$REPLAY_SECONDS" "$replay" "$corpus" >"$work/out" 2>"$work/err"
    status=$?
    files=$(find "$corpus" -type f ! -name '.*' | wc -l)
    if [ "$status" -eq 0 ] && ! sanitizer_report "$work/err" &&
        [ "$(cat "$work/out")" = "$files inputs" ] && [ "$files" -gt 0 ]; then
        ok "fuzz/$name: $files inputs"
    else
        why="exit $status"
        [ "$status" -eq 124 ] && why="over $REPLAY_SECONDS s"
        fail "fuzz/$name" "$why, $(cat "$work/out") of $files inputs: $(grep -m 3 -E \
            'ERROR|runtime error|SUMMARY|replay:' "$work/err" | head -c 600)"
        failed=1
    fi
done
for harness in fuzz/fuzz_*.c; do
    name=$(basename "$harness" .c)
    name=${name#fuzz_}
    if [ ! -d "fuzz/corpus/$name" ]; then
        fail "fuzz/$name" "fuzz/corpus/$name/ is missing (fuzz/make_seeds.py writes it)"
        failed=1
    fi
done
exit $failed
