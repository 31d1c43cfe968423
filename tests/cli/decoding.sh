#!/bin/sh
# ted translate's decoding options and files, on the toy model: -i/-o
# (output replaced only on success), n-best and scores lines, seeded
# sampling, the config's decoding: defaults and the options that override
# them, the progress line (only on a terminal), and every option error
# (exit status 1, one message). Each check prints "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
MODEL=models/toy-en-fr
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

head -n 40 "$MODEL/test.en" >"$work/in40"
printf 'the cat sleeps .\n\nmy sister did not see the old green car .\n' >"$work/in3"



# expect_same NAME FILE1 FILE2
expect_same() {
    if cmp -s "$2" "$3"; then ok "$1"; else fail "$1" "$(diff "$2" "$3" | head -n 4)"; fi
}

# --- files --------------------------------------------------------------------
"$TED" translate -m "$MODEL" <"$work/in40" >"$work/stdout.fr" 2>"$work/err"
"$TED" translate -m "$MODEL" -i "$work/in40" -o "$work/file.fr" >"$work/out" 2>"$work/err2"
if [ $? -eq 0 ] && [ ! -s "$work/out" ] && [ ! -s "$work/err2" ] && [ "$(wc -l <"$work/file.fr")" -eq 40 ]; then
    expect_same input-output-files "$work/stdout.fr" "$work/file.fr"
else
    fail input-output-files "stdout $(head -c 100 "$work/out"), stderr $(head -c 200 "$work/err2")"
fi
"$TED" translate -m "$MODEL" --input="$work/in40" --output "$work/long.fr" 2>/dev/null
expect_same long-option-names "$work/stdout.fr" "$work/long.fr"

# the output is in input order, whatever the length sorting and batch size
"$TED" translate -m "$MODEL" -i "$work/in40" --batch-size 3 -o "$work/b3.fr"
expect_same input-order-kept "$work/stdout.fr" "$work/b3.fr"

# the same file as input and output
cp "$work/in40" "$work/inplace"
"$TED" translate -m "$MODEL" -i "$work/inplace" -o "$work/inplace" 2>/dev/null
expect_same output-over-its-input "$work/stdout.fr" "$work/inplace"

expect_error missing-input "cannot open .*nowhere\.en: No such file" \
    "$TED" translate -m "$MODEL" -i "$work/nowhere.en"
expect_error output-in-missing-directory "cannot write .*no/such/dir/out\.fr: No such file" \
    "$TED" translate -m "$MODEL" -i "$work/in40" -o "$work/no/such/dir/out.fr"
expect_error input-and-text "TEXT arguments or -i FILE, not both" \
    "$TED" translate -m "$MODEL" -i "$work/in40" "the cat sleeps ."
expect_error input-needs-a-value "-i needs a value" "$TED" translate -m "$MODEL" -i

# a failure leaves an existing output untouched and no temporary file behind
echo "old content" >"$work/keep.fr"
printf 'the cat sleeps .\nthe \377 dog\n' >"$work/bad.en"
expect_error bad-input-line "line 2: .*UTF-8" \
    "$TED" translate -m "$MODEL" -i "$work/bad.en" -o "$work/keep.fr"
if [ "$(cat "$work/keep.fr")" = "old content" ] && [ "$(ls "$work" | grep -c '^keep\.fr')" -eq 1 ]; then
    ok output-untouched-on-failure
else
    fail output-untouched-on-failure "$(ls "$work" | grep keep) / $(head -c 100 "$work/keep.fr")"
fi
expect_error option-error-before-output "n-best 2 needs beam search" \
    "$TED" translate -m "$MODEL" -i "$work/in40" -o "$work/keep.fr" --n-best 2
[ "$(cat "$work/keep.fr")" = "old content" ] && ok output-untouched-on-option-error ||
    fail output-untouched-on-option-error "$(head -c 100 "$work/keep.fr")"

if [ -w /dev/full ]; then
    expect_error full-standard-output "cannot write the standard output" \
        sh -c "\"$TED\" translate -m \"$MODEL\" -i \"$work/in40\" >/dev/full"
fi

# --- n-best and scores --------------------------------------------------------
"$TED" translate -m "$MODEL" -i "$work/in3" --beam 4 --n-best 3 >"$work/nbest" 2>"$work/err"
# 3 lines per input line, indexes from 0, 4 fields, best first
if [ $? -eq 0 ] && awk -F' \\|\\|\\| ' '
    { n++; want = int((n - 1) / 3); if ($1 != want || NF != 4) bad = 1
      if ((n - 1) % 3 && $3 > prev + 1e-9) bad = 1; prev = $3 }
    END { exit !(n == 9 && !bad) }' "$work/nbest"; then
    ok n-best-lines
else
    fail n-best-lines "$(head -n 9 "$work/nbest" | tr '\n' '|')"
fi
line2=$(sed -n 4p "$work/nbest")
case "$line2" in
    "1 |||  ||| 0.000000 ||| 0.000000") ok n-best-empty-line ;;
    *) fail n-best-empty-line "got '$line2'" ;;
esac
best=$("$TED" translate -m "$MODEL" --beam 4 "the cat sleeps .")
first=$(sed -n 1p "$work/nbest" | awk -F' \\|\\|\\| ' '{print $2}')
[ "$best" = "$first" ] && ok n-best-first-is-the-translation ||
    fail n-best-first-is-the-translation "'$best' vs '$first'"

# --scores: one token log-prob per target token and EOS, adding up to LOG-PROB
"$TED" translate -m "$MODEL" --scores "the cat sleeps ." >"$work/scores"
if awk -F' \\|\\|\\| ' '{ n = split($5, t, " "); w = split($2, x, " "); s = 0
        for (i = 1; i <= n; i++) { s += t[i]; if (t[i] > 0) bad = 1 }
        d = s - $4; if (d < 0) d = -d
        exit !(NF == 5 && n == w + 1 && d < 1e-5 && $3 == $4 && !bad) }' "$work/scores"; then
    ok scores-per-token
else
    fail scores-per-token "$(cat "$work/scores")"
fi
"$TED" translate -m "$MODEL" --beam 4 --length-penalty 1 --scores "the cat sleeps ." >"$work/lp"
if awk -F' \\|\\|\\| ' '{ n = split($5, t, " "); want = $4 / ((5 + n) / 6)
        d = $3 - want; if (d < 0) d = -d; exit !(d < 1e-5) }' "$work/lp"; then
    ok length-penalty-score
else
    fail length-penalty-score "$(cat "$work/lp")"
fi

# --- strategies -------------------------------------------------------------
"$TED" translate -m "$MODEL" -i "$work/in40" --beam 4 -o "$work/beam4.fr"
expect_same beam-4-on-the-toy-model "$work/stdout.fr" "$work/beam4.fr"

sample() { "$TED" translate -m "$MODEL" -i "$work/in40" --sample --temperature 2 "$@"; }
sample --seed 7 >"$work/s7a"
sample --seed 7 >"$work/s7b"
sample --seed 7 --batch-size 1 >"$work/s7c"
sample --seed 8 >"$work/s8"
expect_same seed-repeats "$work/s7a" "$work/s7b"
expect_same seed-repeats-batch-1 "$work/s7a" "$work/s7c"
if ! cmp -s "$work/s7a" "$work/s8" && ! cmp -s "$work/s7a" "$work/stdout.fr"; then
    ok other-seed-other-samples
else
    fail other-seed-other-samples "seeds 7 and 8 (or greedy) gave the same"
fi
sample >"$work/r1"
sample >"$work/r2"
! cmp -s "$work/r1" "$work/r2" && ok no-seed-is-random || fail no-seed-is-random "two runs agree"
"$TED" translate -m "$MODEL" -i "$work/in40" --sample --top-k 1 --seed 3 >"$work/k1"
expect_same top-k-1-is-greedy "$work/stdout.fr" "$work/k1"
"$TED" translate -m "$MODEL" -i "$work/in40" --sample --top-p 0.01 --temperature 5 --seed 3 >"$work/p0"
expect_same tiny-top-p-is-greedy "$work/stdout.fr" "$work/p0"
"$TED" translate -m "$MODEL" --sample --n-best 5 --seed 1 --temperature 3 "the cat sleeps ." >"$work/s5"
[ "$(wc -l <"$work/s5")" -eq 5 ] && ok sample-n-best || fail sample-n-best "$(cat "$work/s5")"

# --- the config's decoding: section -------------------------------------------
cp -r "$MODEL" "$work/beam-model"
printf '  beam_size: 4\n  length_penalty: 1.0\n' >>"$work/beam-model/config.yaml"
"$TED" translate -m "$work/beam-model" --n-best 2 --scores "the cat sleeps ." >"$work/cfg" 2>"$work/err"
"$TED" translate -m "$MODEL" --beam 4 --length-penalty 1 --n-best 2 --scores "the cat sleeps ." >"$work/cli"
expect_same config-beam-size "$work/cli" "$work/cfg"
"$TED" translate -m "$work/beam-model" --length-penalty 0 --scores "the cat sleeps ." >"$work/cfg0"
"$TED" translate -m "$MODEL" --beam 4 --length-penalty 0 --scores "the cat sleeps ." >"$work/cli0"
expect_same cli-overrides-config-length-penalty "$work/cli0" "$work/cfg0"
"$TED" translate -m "$work/beam-model" --sample --top-k 1 -i "$work/in40" >"$work/cfgs" 2>"$work/err"
expect_same cli-sample-overrides-config-beam "$work/stdout.fr" "$work/cfgs"

cp -r "$MODEL" "$work/sample-model"
printf '  sample: true\n  top_k: 1\n' >>"$work/sample-model/config.yaml"
"$TED" translate -m "$work/sample-model" -i "$work/in40" >"$work/cfgk1" 2>"$work/err"
expect_same config-sample-top-k "$work/stdout.fr" "$work/cfgk1"
"$TED" translate -m "$work/sample-model" --beam 2 --n-best 2 "the cat sleeps ." >"$work/cfgb" 2>"$work/err"
[ "$(wc -l <"$work/cfgb")" -eq 2 ] && ok cli-beam-overrides-config-sample ||
    fail cli-beam-overrides-config-sample "$(cat "$work/cfgb" "$work/err")"
printf '  beam_size: 2\n' >>"$work/sample-model/config.yaml"
expect_error config-sample-and-beam "decoding\.sample: true with beam_size 2" \
    "$TED" translate -m "$work/sample-model" "the cat sleeps ."

# --- the rules on the scores (word-level model: a token is a word) ---------------
# repeated N-grams of words in any line, and the shortest line's words
repeated_ngrams() {
    awk -v n="$1" '{ delete seen; for (i = 1; i + n - 1 <= NF; i++) { g = "";
        for (j = 0; j < n; j++) g = g " " $(i + j); if (g in seen) r++; seen[g] = 1 } }
        END { print r + 0 }' "$2"
}
shortest() { awk 'NR == 1 || NF < m { m = NF } END { print m + 0 }' "$1"; }
for strategy in greedy beam; do
    flags=""; [ "$strategy" = beam ] && flags="--beam 4"
    "$TED" translate -m "$MODEL" $flags -i "$work/in40" >"$work/plain.$strategy"
    for n in 1 2; do
        "$TED" translate -m "$MODEL" $flags --no-repeat-ngram-size $n -i "$work/in40" \
            >"$work/ngram$n.$strategy"
        before=$(repeated_ngrams $n "$work/plain.$strategy")
        after=$(repeated_ngrams $n "$work/ngram$n.$strategy")
        [ "$before" -gt 0 ] && [ "$after" -eq 0 ] && ok "no-repeat-ngram-$n-$strategy" ||
            fail "no-repeat-ngram-$n-$strategy" "$before repeated $n-grams, then $after"
    done
    "$TED" translate -m "$MODEL" $flags --min-length 16 --max-length 40 -i "$work/in40" \
        >"$work/min.$strategy"
    [ "$(shortest "$work/plain.$strategy")" -lt 15 ] && [ "$(shortest "$work/min.$strategy")" -ge 15 ] &&
        ok "min-length-$strategy" ||
        fail "min-length-$strategy" "shortest line $(shortest "$work/min.$strategy") words, 15 wanted"
done
cp -r "$MODEL" "$work/rules-model"
printf '  no_repeat_ngram_size: 1\n  min_length: 16\n  repetition_penalty: 1.5\n' \
    >>"$work/rules-model/config.yaml"
"$TED" translate -m "$work/rules-model" -i "$work/in40" >"$work/cfgrules"
"$TED" translate -m "$MODEL" --no-repeat-ngram-size 1 --min-length 16 --repetition-penalty 1.5 \
    -i "$work/in40" >"$work/clirules"
expect_same config-rules "$work/clirules" "$work/cfgrules"
"$TED" translate -m "$work/rules-model" --no-repeat-ngram-size 0 --min-length 0 \
    --repetition-penalty 1 -i "$work/in40" >"$work/cfgoff"
expect_same cli-turns-config-rules-off "$work/stdout.fr" "$work/cfgoff"
printf '  min_length: -1\n' >>"$work/rules-model/config.yaml"
expect_error config-min-length-negative "decoding\.min_length" \
    "$TED" translate -m "$work/rules-model" "the cat sleeps ."

# --- progress -----------------------------------------------------------------
"$TED" translate -m "$MODEL" -i "$work/in40" -o "$work/quiet.fr" 2>"$work/err"
[ ! -s "$work/err" ] && ok no-progress-off-a-terminal ||
    fail no-progress-off-a-terminal "stderr: $(head -c 200 "$work/err")"
if command -v script >/dev/null 2>&1; then
    script -qec "\"$TED\" translate -m \"$MODEL\" -i \"$work/in40\" -o \"$work/tty.fr\"" \
        /dev/null >"$work/tty" 2>&1 </dev/null
    if grep -q "40/40 sentences, [0-9.]* sentences/s, ETA 0:00" "$work/tty"; then
        expect_same progress-on-a-terminal "$work/stdout.fr" "$work/tty.fr"
    else
        fail progress-on-a-terminal "terminal showed: $(head -c 300 "$work/tty")"
    fi
fi

# --- option errors ------------------------------------------------------------
t() { "$TED" translate -m "$MODEL" "$@" "the cat sleeps ."; }
expect_error beam-zero "--beam: '0' is not a whole number from 1 to 1024" t --beam 0
expect_error beam-word "--beam: 'four' is not a whole number" t --beam four
expect_error beam-too-wide "--beam 849: the beam must be smaller than the target vocabulary \(849 tokens\)" \
    t --beam 849
expect_error beam-and-sample "--beam and --sample exclude each other" t --beam 2 --sample
expect_error length-penalty-negative "--length-penalty: '-1' is not a number >= 0" \
    t --beam 2 --length-penalty -1
expect_error length-penalty-without-beam "--length-penalty applies to beam search" \
    t --length-penalty 1
expect_error early-stopping-word "--early-stopping: 'always' is not false, true, never or marian" \
    t --beam 2 --early-stopping always
expect_error early-stopping-without-beam "--early-stopping applies to beam search" \
    t --early-stopping never
expect_error temperature-zero "--temperature: '0' is not a number > 0" t --sample --temperature 0
expect_error temperature-nan "--temperature: 'nan' is not a number > 0" t --sample --temperature nan
expect_error temperature-without-sample "--temperature applies to sampling; add --sample" \
    t --temperature 0.5
expect_error top-k-negative "--top-k: '-1' is not a whole number from 0" t --sample --top-k -1
expect_error top-k-without-sample "--top-k applies to sampling" t --top-k 5
expect_error top-p-zero "--top-p: '0' is not a number > 0 and <= 1" t --sample --top-p 0
expect_error top-p-above-one "--top-p: '1.5' is not a number > 0 and <= 1" t --sample --top-p 1.5
expect_error top-p-without-sample "--top-p applies to sampling" t --beam 2 --top-p 0.9
expect_error seed-negative "--seed: '-1' is not a whole number from 0 to 18446744073709551615" \
    t --sample --seed -1
expect_error seed-too-large "--seed: '18446744073709551616' is not a whole number" \
    t --sample --seed 18446744073709551616
expect_error seed-without-sample "--seed applies to sampling" t --seed 3
expect_error n-best-greedy "--n-best 2 needs beam search \(--beam 2 or more\) or --sample" \
    t --n-best 2
expect_error n-best-above-beam "--n-best 5 is more than the beam size 4" t --beam 4 --n-best 5
expect_error n-best-zero "--n-best: '0' is not a whole number from 1 to 1024" t --n-best 0
expect_error repetition-penalty-negative "--repetition-penalty: '-1' is not a number >= 0" \
    t --repetition-penalty -1
expect_error no-repeat-ngram-size-negative \
    "--no-repeat-ngram-size: '-1' is not a whole number from 0 to 1048576" t --no-repeat-ngram-size -1
expect_error min-length-word "--min-length: 'long' is not a whole number" t --min-length long
expect_error bad-words-text "--bad-words-ids: '5,x' is not token ids separated by commas" \
    t --bad-words-ids 5,x
expect_error bad-words-outside "translate: --bad-words-ids: 849 is not a target token \(0 to 848\)" \
    t --bad-words-ids 3,849
expect_error min-new-tokens-negative \
    "--min-new-tokens: '-1' is not a whole number from 0 to 1048576" t --min-new-tokens -1
expect_error encoder-ngram-word "--encoder-no-repeat-ngram-size: 'two' is not a whole number" \
    t --encoder-no-repeat-ngram-size two
expect_error flag-takes-no-value "--sample takes no value" t --sample=1 --seed 1
