#!/bin/sh
# The kernels chosen at run time (src/kernels/kernels.h). Which sets the CPU
# offers comes from the flags Linux reports in /proc/cpuinfo, not from ted:
#   - `ted info` names the best set, or the one TED_CPU forces; `ted bench`'s
#     JSON names it too;
#   - TED_CPU naming an unknown set, or one the CPU lacks, is refused with
#     one message and exit status 1;
#   - with every set the CPU offers besides the best (which the rest of the
#     suite runs), the checks of the numbers a kernel set computes pass: the
#     unit suites of the kernels and of the layers over them (kernels, bf16, int4,
#     layers, attention, parallel: each layer against PyTorch's values), and
#     the PyTorch parity checks of logits (tests/parity/test_parity.py:
#     random models in every configuration), of the int8 products
#     (tests/parity/test_int8.py: logits, pytorch), of the int4 products
#     (tests/parity/test_int4.py: quality, pytorch) and of the bf16 products
#     (tests/parity/test_bf16.py: logits). What lies above the kernels
#     (decoding, batches, sessions, translation quality) computes with
#     whichever set it is given and runs once, with the best; so do the
#     exporter, byte-identity and refusal checks, which compute nothing;
#   - with qemu-x86_64 installed, the binary runs on emulated CPUs without
#     AVX (the portable set) and with AVX2 but no AVX-512 (the avx2 set), and
#     translates as on this one; a set the emulated CPU lacks is refused.
# Prints "ok NAME" or "FAIL NAME: why" per check ("skip NAME: why" for a
# check this machine cannot make, not counted).
TED=${TED:-build/ted}
UNIT=${UNIT:-$(dirname "$TED")/unit-tests}
PYTHON=${PYTHON:-/usr/bin/python3}
TEST_PYTHON=${TEST_PYTHON:-$PYTHON}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh
toy=models/toy-en-fr
sentence="the black cat eats the small bird ."
translation="le chat noir mange le petit oiseau ."

# has FLAG...: whether /proc/cpuinfo lists every FLAG.
flags=" $(grep -m 1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
has() {
    for flag; do
        case "$flags" in *" $flag "*) ;; *) return 1 ;; esac
    done
}

offered=portable  # best first
if [ "$(uname -m)" = x86_64 ]; then
    has avx2 fma && offered="avx2 $offered"
    has avx2 fma avx512f avx512bw avx512vl avx512dq && offered="avx512 $offered"
fi
best=${offered%% *}

# expect NAME STATUS FILE LINE: the last run exited STATUS and FILE (its
# stdout or stderr) has a line matching LINE, a whole-line pattern.
expect() {
    if [ "$status" -eq "$2" ] && grep -qx -- "$4" "$3"; then
        ok "$1"
    else
        fail "$1" "exit $status: $(grep -hv 'qemu.*warning' "$work/out" "$work/err" | head -c 300)"
    fi
}

# kernels_line NAME EXPECTED [VAR=VALUE...]: `ted info` prints "kernels: EXPECTED".
kernels_line() {
    name=$1 expected=$2
    shift 2
    run "$work/out" "$work/err" env -u TED_CPU "$@" "$TED" info -m "$toy"
    expect "$name" 0 "$work/out" "kernels: $expected"
}

kernels_line info-names-best "$best"
for set in $offered; do
    kernels_line "info-TED_CPU=$set" "$set" TED_CPU="$set"
done

run "$work/out" "$work/err" env -u TED_CPU "$TED" bench -m "$toy" --new-tokens 2 --repeat 1
if [ "$status" -eq 0 ] && "$PYTHON" -c 'import json, sys
sys.exit(json.load(open(sys.argv[1]))["kernels"] != sys.argv[2])' "$work/out" "$best"; then
    ok bench-names-kernels
else
    fail bench-names-kernels "expected \"kernels\": \"$best\" in: $(head -c 300 "$work/out" "$work/err")"
fi

expect_error unknown-set "TED_CPU: unknown kernels 'avx9' \(this build has .*portable\)" \
    env TED_CPU=avx9 "$TED" translate -m "$toy" "$sentence"
if [ "$(uname -m)" = x86_64 ]; then
    for set in avx512 avx2; do
        case " $offered " in *" $set "*) continue ;; esac
        expect_error "lacking-$set" "TED_CPU: kernels '$set' need .* which this CPU does not offer" \
            env TED_CPU="$set" "$TED" translate -m "$toy" "$sentence"
    done
fi

# The Criterion suites of the kernels and of the layers that call them.
KERNEL_SUITES='kernels|bf16|int4|layers|attention|parallel'

# The kernels' unit tests with one set: one check, with Criterion's counts.
unit_tests() {
    TED_CPU=$1 "$UNIT" --jobs 2 --filter "@($KERNEL_SUITES)/*" >"$work/out" 2>"$work/err"
    status=$?
    synthesis=$(grep Synthesis "$work/err" "$work/out" | tail -n 1)
    tested=$(echo "$synthesis" | sed -n 's/.*Tested: \([0-9]*\).*/\1/p')
    passing=$(echo "$synthesis" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
    if [ "$status" -eq 0 ] && [ -n "$tested" ] && [ "$tested" -gt 0 ] &&
        [ "$tested" = "$passing" ]; then
        ok "unit-tests-TED_CPU=$1: $passing of $tested passed (suites $KERNEL_SUITES)"
    else
        fail "unit-tests-TED_CPU=$1" "exit $status; $synthesis $(grep -h '\[FAIL\]' "$work/err" "$work/out" | head -n 5)"
    fi
}

# A parity script with one set: each of its checks, named after the set.
parity_tests() {  # SET SCRIPT [OPTION...]
    set=$1 script=$2
    shift 2
    TED_CPU=$set TED=$TED "$TEST_PYTHON" "$script" "$@" >"$work/parity" 2>&1
    status=$?
    sed -n "s/^ok /ok TED_CPU=$set /p; s/^FAIL /FAIL TED_CPU=$set /p" "$work/parity"
    if [ "$status" -ne 0 ] && ! grep -q '^FAIL ' "$work/parity"; then
        fail "$(basename "$script" .py)-TED_CPU=$set" "exit $status: $(tail -n 5 "$work/parity")"
    elif ! grep -q '^ok ' "$work/parity"; then
        fail "$(basename "$script" .py)-TED_CPU=$set" "no check ran: $(tail -n 5 "$work/parity")"
    fi
}

for set in $offered; do
    [ "$set" = "$best" ] && continue
    unit_tests "$set"
    parity_tests "$set" tests/parity/test_parity.py --only logits
    parity_tests "$set" tests/parity/test_int8.py --only logits,pytorch
    parity_tests "$set" tests/parity/test_int4.py --only quality,pytorch
    parity_tests "$set" tests/parity/test_bf16.py --only logits
done

# On emulated CPUs (qemu-x86_64 -cpu MODEL): the set chosen, the
# translation, and the set the model lacks refused.
emulated() {  # MODEL EXPECTED_SET LACKING_SET
    run "$work/out" "$work/err" env -u TED_CPU qemu-x86_64 -cpu "$1" "$TED" info -m "$toy"
    expect "qemu-$1-chooses-$2" 0 "$work/out" "kernels: $2"
    run "$work/out" "$work/err" env -u TED_CPU qemu-x86_64 -cpu "$1" \
        "$TED" translate -m "$toy" "$sentence"
    expect "qemu-$1-translates" 0 "$work/out" "$translation"
    run "$work/out" "$work/err" env TED_CPU="$3" qemu-x86_64 -cpu "$1" \
        "$TED" translate -m "$toy" "$sentence"
    expect "qemu-$1-refuses-$3" 1 "$work/err" "ted: TED_CPU: kernels '$3' need .* does not offer"
}

if [ "$(uname -m)" != x86_64 ]; then
    skip qemu "not an x86-64 machine"
elif ! command -v qemu-x86_64 >/dev/null; then
    skip qemu "qemu-x86_64 is not installed (apt-get install qemu-user)"
elif [ "${SAN:-}" = 1 ]; then
    skip qemu "the sanitizer runtimes do not run under qemu-x86_64"
else
    emulated Nehalem portable avx2
    emulated Haswell avx2 avx512
fi
