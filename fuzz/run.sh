#!/bin/sh
# Runs each fuzz harness in turn for FUZZ_SECONDS seconds (make fuzz).
#   FUZZ_BUILD/fuzz_NAME          the harnesses (built by make)
#   FUZZ_BUILD/corpus/NAME        the growing corpus, kept between runs
#   fuzz/corpus/NAME              the seeds, kept in the repository (written by
#                                 fuzz/make_seeds.py; fuzz/replay.sh replays them)
#   FUZZ_BUILD/artifacts/NAME/    inputs that crashed, leaked or timed out
#   FUZZ_BUILD/NAME.log           libFuzzer's output; its last lines hold the
#                                 run's figures (#execs, cov, ft, corp)
# FUZZ_TARGETS: the harnesses to run (default: the list below). Exits 1 when any
# harness found a failure.
#
# What each harness holds the code to (a crash, a sanitizer report, a leak
# or a broken REQUIRE is a failure):
#   safetensors config vocab   a file's bytes: loaded, or refused with a
#   shortlist                  message; nothing read outside the bytes
#   marian npy shortlist_bin   Marian's files (a .npz or .bin model, one
#                              .npz member, a binary shortlist, its checksum
#                              made right first): the same
#   tokenizer normalize        text in, ids or text out, within bounds
#   spm                        a SentencePiece model file from memory: refused
#                              naming the file, or loaded and then used on
#                              fixed texts (encode, decode) without reading
#                              outside it. libsentencepiece trusts the
#                              normalization tables (precompiled_charsmap):
#                              io/sentencepiece.cc checks them first
#                              (docs/model-format.md, "What ted refuses")
#   request                    the bodies of POST /v1/translate, /v1/explore,
#                              /v1/beam and /translate (first byte: which), parsed as
#                              ted serve parses them; each answer valid JSON,
#                              a 200 or a 4xx with {"error": ...}. It loads
#                              models/toy-en-fr (TED_FUZZ_MODEL), run from the
#                              repository's top
#   document                   a paragraph or an HTML page (first byte: which,
#                              and whether split): parsed or refused; a text
#                              rebuilt from its sentences is itself; a page
#                              rebuilt around translations full of markup
#                              gains no '<' or '>', and opens no tag that
#                              the page did not (read as the tokenizer reads
#                              a page: a comment keeps its tags inert)
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_TARGETS=${FUZZ_TARGETS:-safetensors config vocab shortlist tokenizer normalize spm request document marian npy shortlist_bin}
failed=0
for name in $FUZZ_TARGETS; do
    mkdir -p "$FUZZ_BUILD/corpus/$name" "$FUZZ_BUILD/artifacts/$name"
    dict=""
    [ -f "fuzz/$name.dict" ] && dict="-dict=fuzz/$name.dict"
    echo "== fuzz_$name: $FUZZ_SECONDS s"
    # shellcheck disable=SC2086
    "$FUZZ_BUILD/fuzz_$name" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 $dict \
        -artifact_prefix="$FUZZ_BUILD/artifacts/$name/" \
        "$FUZZ_BUILD/corpus/$name" "fuzz/corpus/$name" >"$FUZZ_BUILD/$name.log" 2>&1
    status=$?
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+.*DONE)' \
        "$FUZZ_BUILD/$name.log" | sed "s/^/fuzz_$name: /"
    if [ "$status" -ne 0 ]; then
        echo "fuzz_$name: FAILED (exit $status): see $FUZZ_BUILD/$name.log and $FUZZ_BUILD/artifacts/$name/"
        grep -E '^(==[0-9]+==ERROR|SUMMARY)' "$FUZZ_BUILD/$name.log" | head -n 5
        failed=1
    fi
done
exit $failed
