#!/bin/sh
# The C API as docs/api.md shows it: its complete program is
# examples/decode.c, word for word; built against libted.a alone, it gives
# the n-best lists and the greedy translation `ted translate` gives; a bad
# model directory is one message and exit status 1; libted.so exports the
# functions of include/ted/*.h and nothing else; docs/limits.md gives the
# values of src/core/limits.h and src/frontend/limits.h. Each check prints
# "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
BUILD=${BUILD:-build}
EXAMPLE="$BUILD/example-decode"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

model=models/toy-en-fr
first="the black cat eats the small bird ."
second="the dog sleeps ."

# The ```c block of "A complete program" is the example file.
sed -n '/^## A complete program/,$p' docs/api.md |
    sed -n '/^```c$/,/^```$/p' | sed '1d;$d' >"$work/shown.c"
if cmp -s "$work/shown.c" examples/decode.c; then
    ok api/page-shows-the-example
else
    fail api/page-shows-the-example "docs/api.md differs from examples/decode.c: $(diff "$work/shown.c" examples/decode.c | head -n 4 | tr '\n' ' ')"
fi

run "$work/out" "$work/err" "$EXAMPLE" "$model" "$first" "$second"
if [ "$status" -ne 0 ] || sanitizer_report "$work/err"; then
    fail api/example-runs "exit $status: $(head -c 300 "$work/err")"
else
    ok api/example-runs
fi

# Its n-best lists (sentence.rank score text) against ted translate's
# (sentence ||| text ||| score ||| ...), scores to 4 decimals.
"$TED" translate -m "$model" --beam 4 --n-best 2 --scores "$first" "$second" 2>/dev/null |
    awk -F ' \\|\\|\\| ' '{ n[$1]++; printf "%d.%d %.4f %s\n", $1, n[$1] - 1, $3, $2 }' \
        >"$work/want"
grep -v '^step by step:' "$work/out" >"$work/got"
if [ -s "$work/want" ] && cmp -s "$work/want" "$work/got"; then
    ok api/beam-n-best-as-ted-translate
else
    fail api/beam-n-best-as-ted-translate "got '$(tr '\n' '|' <"$work/got")', ted translate '$(tr '\n' '|' <"$work/want")'"
fi

# Its step-by-step greedy decode against ted translate's greedy one.
want=$("$TED" translate -m "$model" "$first" 2>/dev/null)
got=$(sed -n 's/^step by step: //p' "$work/out")
if [ -n "$want" ] && [ "$got" = "$want" ]; then
    ok api/steps-as-greedy
else
    fail api/steps-as-greedy "got '$got', ted translate '$want'"
fi

expect_error api/bad-model-dir "no-such-dir/config\.yaml" "$EXAMPLE" "$work/no-such-dir" "$first"

# The shared library's interface is the header's: libted.so exports exactly
# the functions include/ted/*.h declare (as the compiler reads them,
# gcc -aux-info), no internal symbol a binding could come to depend on.
for header in include/ted/*.h; do
    echo "#include \"${header#include/}\""
done >"$work/headers.c"
shared="$BUILD/libted.so"
if ! ${CC:-cc} -Iinclude -fsyntax-only -aux-info "$work/aux" "$work/headers.c" 2>"$work/cc.err"; then
    fail api/shared-library-exports "${CC:-cc} -aux-info: $(head -c 300 "$work/cc.err")"
elif [ ! -f "$shared" ]; then
    fail api/shared-library-exports "$shared is missing (make $shared)"
else
    sed -n 's|^/\* [^ ]*include/ted/[a-z_]*\.h:[0-9]*:[A-Z]* \*/ extern [^(]*[ *]\(ted_[a-z0-9_]*\) (.*|\1|p' \
        "$work/aux" | sort -u >"$work/declared"
    nm -D --defined-only "$shared" | awk 'NF == 3 { sub(/@.*/, "", $3); print $3 }' |
        sort -u >"$work/exported"
    extra=$(comm -13 "$work/declared" "$work/exported" | head -n 8 | tr '\n' ' ')
    missing=$(comm -23 "$work/declared" "$work/exported" | tr '\n' ' ')
    if [ "$(wc -l <"$work/declared")" -lt 50 ]; then
        fail api/shared-library-exports "only $(wc -l <"$work/declared") functions read from include/ted/*.h"
    elif [ -n "$extra" ]; then
        fail api/shared-library-exports "$(comm -13 "$work/declared" "$work/exported" | wc -l) symbols no header declares: $extra..."
    else
        ok api/shared-library-exports
    fi
    if [ -n "$missing" ]; then
        fail api/shared-library-exports-every-function "declared, not exported: $missing"
    else
        ok api/shared-library-exports-every-function
    fi
fi

# docs/limits.md's table holds every bound of src/core/limits.h (libted's)
# and src/frontend/limits.h (the front ends'), with the value the compiler
# gives it.
names=$(sed -n 's/^#define \([A-Z][A-Z0-9_]*\) .*/\1/p; s/^ *\([A-Z][A-Z0-9_]*\) = .*/\1/p' \
    src/core/limits.h src/frontend/limits.h | grep -vx 'TED_CORE_LIMITS_H\|FRONTEND_LIMITS_H')
{
    echo '#include <stdio.h>'
    echo '#include "core/limits.h"'
    echo '#include "frontend/limits.h"'
    echo 'int main(void) {'
    for name in $names; do
        printf '    printf("%s %%llu\\n", (unsigned long long)(%s));\n' "$name" "$name"
    done
    echo '    return 0; }'
} >"$work/limits.c"
if ! ${CC:-cc} -Isrc -Iinclude "$work/limits.c" -o "$work/limits" 2>"$work/cc.err"; then
    fail api/limits-table "$(head -c 300 "$work/cc.err")"
else
    "$work/limits" | sort >"$work/limits.want"
    # "| `NAME` | 1 MiB | ..." -> "NAME 1048576"
    awk -F '|' '$2 ~ /^ `[A-Z][A-Z0-9_]*` $/ {
            name = $2; gsub(/[ `]/, "", name); value = $3; unit = 1
            if (value ~ /KiB/) unit = 1024; else if (value ~ /MiB/) unit = 1048576
            else if (value ~ /GiB/) unit = 1073741824
            gsub(/[^0-9]/, "", value); printf "%s %.0f\n", name, value * unit }' \
        docs/limits.md | sort >"$work/limits.shown"
    wrong=$(comm -23 "$work/limits.want" "$work/limits.shown" | tr '\n' ' ')
    if [ -z "$names" ] || [ -n "$wrong" ]; then
        fail api/limits-table "docs/limits.md lacks or misstates: $wrong(shows: $(tr '\n' ' ' <"$work/limits.shown" | head -c 300))"
    else
        ok api/limits-table
    fi
fi
