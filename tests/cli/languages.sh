#!/bin/sh
# Language codes on the command line: --source-lang and --target-lang on
# ted translate, logits, step and attention; `ted info` listing a model's
# languages; the errors for a multilingual model without a target language
# and for a code the model does not name. The models are copies of
# tests/data/tiny-model whose config names languages by tokens of its
# vocabularies (docs/model-format.md#languages). Each check prints
# "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

tiny=tests/data/tiny-model

# model NAME LINES [SED]: a copy of the tiny model with LINES added to its
# tokenizer section (after source_eos) and the config edited by SED.
model() {
    mkdir -p "$work/$1"
    cp "$tiny/model.safetensors" "$tiny/vocab.src" "$tiny/vocab.tgt" "$work/$1/"
    awk -v lines="$2" '{ print } /^  source_eos:/ { printf "%s", lines }' "$tiny/config.yaml" |
        sed -e "${3:-s/^//}" >"$work/$1/config.yaml"
}

# forced: NLLB's layout, the target code forced after the decoder start;
# plain: the same weights naming no languages.
model forced "  languages: [t8, t9]
  target_language_token: forced
"
model plain ""
# marian: the target code at the start of the source (">>s7<<", given as s7);
# marked: the same model given the code token as text. Neither adds BOS.
model marian "  languages: [\">>s6<<\", \">>s7<<\"]
  target_language_token: source
  source_lang: en
" "s/source_bos: true/source_bos: false/"
sed -i -e 's/^s6$/>>s6<</' -e 's/^s7$/>>s7<</' "$work/marian/vocab.src"
model marked "" "s/source_bos: true/source_bos: false/"
cp "$work/marian/vocab.src" "$work/marked/vocab.src"

# --- errors: one line naming the codes ---
expect_error no-target-language \
    "translate: no target language given, and the model translates into 2 languages: t8, t9$" \
    "$TED" translate -m "$work/forced" "s0 s1"
expect_error unknown-target-language "unknown target language \"de\"; the model's: t8, t9$" \
    "$TED" translate -m "$work/forced" --target-lang de "s0 s1"
expect_error unknown-source-language \
    "unknown source language \"xx\": the model names no source languages$" \
    "$TED" translate -m "$work/forced" --source-lang xx --target-lang t8 "s0"
expect_error bilingual-other-target "unknown target language \"de\"; the model's: fr$" \
    "$TED" translate -m models/toy-en-fr --target-lang de "the cat ."
expect_error target-lang-needs-value "--target-lang" \
    "$TED" translate -m "$work/forced" --target-lang
expect_error logits-no-target-language "no target language given" \
    "$TED" logits -m "$work/forced" --source "s0" --target "t0"
expect_error step-no-target-language "step: no target language given" \
    "$TED" step -m "$work/forced" --auto "s0"
expect_error attention-no-target-language "attention: no target language given" \
    "$TED" attention -m "$work/forced" --json "$work/a.json" "s0"

# A code that is no token of the vocabulary it goes into: refused at load.
model wrong "  languages: [s6, t8]
  source_language_token: first
"
expect_error code-not-in-vocabulary "tokenizer.languages: \"t8\" is not a token of vocab.src$" \
    "$TED" info -m "$work/wrong"

# --- ted info ---
run "$work/out" "$work/err" "$TED" info -m "$work/forced"
if [ "$status" -eq 0 ] && grep -qx "target languages: 2 (t8 t9)" "$work/out" &&
    grep -qx "source languages: 0 (none named)" "$work/out"; then
    ok info-lists-languages
else
    fail info-lists-languages "exit $status: $(grep languages "$work/out" | tr '\n' ' ')"
fi
run "$work/out" "$work/err" "$TED" info -m models/toy-en-fr
if [ "$status" -eq 0 ] && grep -qx "source languages: 1 (en)" "$work/out" &&
    grep -qx "target languages: 1 (fr)" "$work/out"; then
    ok info-bilingual-languages
else
    fail info-bilingual-languages "exit $status: $(grep languages "$work/out" | tr '\n' ' ')"
fi

# --- ted translate ---
# A bilingual model takes its own codes and translates as without them.
run "$work/out" "$work/err" "$TED" translate -m models/toy-en-fr --source-lang en \
    --target-lang fr "the dog sleeps ."
"$TED" translate -m models/toy-en-fr "the dog sleeps ." >"$work/want" 2>&1
if [ "$status" -eq 0 ] && cmp -s "$work/out" "$work/want"; then
    ok bilingual-codes
else
    fail bilingual-codes "exit $status: $(head -c 200 "$work/out") vs $(head -c 200 "$work/want")"
fi

# The forced code is the first token of each hypothesis (--scores shows a
# log-prob more than the words at least), never a word of the text; an
# empty line stays empty.
run "$work/out" "$work/err" "$TED" translate -m "$work/forced" --target-lang t9 --scores \
    "s0 s1 s2" ""
line=$(head -n 1 "$work/out")
words=$(echo "$line" | awk -F' [|][|][|] ' '{ print split($2, w, " ") }')
scores=$(echo "$line" | awk -F' [|][|][|] ' '{ print split($5, s, " ") }')
text=$(echo "$line" | awk -F' [|][|][|] ' '{ print $2 }')
if [ "$status" -eq 0 ] && [ "$(wc -l <"$work/out")" -eq 2 ] && ! echo "$text" | grep -qw t9 &&
    [ "$scores" -ge $((words + 1)) ] &&
    [ "$(sed -n 2p "$work/out")" = "1 |||  ||| 0.000000 ||| 0.000000 ||| " ]; then
    ok translate-forced-code
else
    fail translate-forced-code "exit $status: $(head -c 300 "$work/out") $(head -c 200 "$work/err")"
fi

# Marian: --target-lang s7 gives what the code token typed before the text gives.
for text in "s0 s1" "s2 s3 s4" "s5"; do
    "$TED" translate -m "$work/marked" ">>s7<< $text" >>"$work/want" 2>&1
done
run "$work/out" "$work/err" "$TED" translate -m "$work/marian" --target-lang s7 "s0 s1" \
    "s2 s3 s4" "s5"
tail -n 3 "$work/want" >"$work/want3"
if [ "$status" -eq 0 ] && cmp -s "$work/out" "$work/want3"; then
    ok translate-marian-code-in-source
else
    fail translate-marian-code-in-source "exit $status: $(tr '\n' '|' <"$work/out") vs $(tr '\n' '|' <"$work/want3")"
fi

# --- ted logits: rows follow the decoder input, start, code, target ---
# With --target-lang t8 the decoder is fed BOS t8 t0 t1: the rows of the
# same weights fed "t8 t0 t1" as the target.
run "$work/out" "$work/err" "$TED" logits -m "$work/forced" --target-lang t8 --source "s0 s1" \
    --target "t0 t1"
"$TED" logits -m "$work/plain" --source "s0 s1" --target "t8 t0 t1" >"$work/want" 2>&1
if [ "$status" -eq 0 ] && [ "$(wc -l <"$work/out")" -eq 4 ] && cmp -s "$work/out" "$work/want"; then
    ok logits-rows-follow-decoder-input
else
    fail logits-rows-follow-decoder-input "exit $status, $(wc -l <"$work/out") rows: $(head -c 200 "$work/err")"
fi

# --- ted step and ted attention take the options; the code is forced first ---
run "$work/out" "$work/err" "$TED" step -m "$work/forced" --target-lang t9 --auto --no-color \
    --max-length 3 "s0 s1"
if [ "$status" -eq 0 ] && grep -q "t9" "$work/out"; then
    ok step-target-lang
else
    fail step-target-lang "exit $status: $(head -c 300 "$work/err")"
fi
run "$work/out" "$work/err" "$TED" attention -m "$work/marian" --target-lang s6 --source-lang en \
    --json "$work/a.json" "s0 s1"
if [ "$status" -eq 0 ] && grep -q '>>s6<<' "$work/a.json"; then
    ok attention-target-lang
else
    fail attention-target-lang "exit $status: $(head -c 300 "$work/err")"
fi

# --- the shipped multilingual model names what it was trained for ---
# models/multi-en-fr-es was trained from English into French and Spanish and
# back (its README); its vocabulary holds NLLB's 202 codes. The references
# are the README's sentences, as the toy language defines them.
multi=models/multi-en-fr-es
english="Your owls will eat my fresh cake tomorrow."
french="Vos chouettes mangeront mon gâteau frais demain."
spanish="Vuestros búhos comerán mi pastel fresco mañana."
run "$work/out" "$work/err" "$TED" info -m "$multi"
if [ "$status" -eq 0 ] &&
    grep -qx "source languages: 3 (eng_Latn fra_Latn spa_Latn)" "$work/out" &&
    grep -qx "target languages: 3 (eng_Latn fra_Latn spa_Latn)" "$work/out" &&
    grep -qx "directions: 4 (eng_Latn>fra_Latn eng_Latn>spa_Latn fra_Latn>eng_Latn spa_Latn>eng_Latn)" \
        "$work/out"; then
    ok multi-info-trained-languages
else
    fail multi-info-trained-languages "exit $status: $(grep -E 'languages|directions' "$work/out" | tr '\n' ' ')"
fi
trained="it translates into eng_Latn, fra_Latn, spa_Latn$"
expect_error multi-untrained-target \
    "translate: target language \"deu_Latn\": the model was not trained to translate into it; $trained" \
    "$TED" translate -m "$multi" --source-lang eng_Latn --target-lang deu_Latn "$english"
expect_error multi-untrained-source \
    "target language|source language \"deu_Latn\": the model was not trained to translate from it; it translates from eng_Latn, fra_Latn, spa_Latn$" \
    "$TED" translate -m "$multi" --source-lang deu_Latn --target-lang eng_Latn "Deine Eulen."
expect_error multi-untrained-iso \
    "target language \"de\" \\(deu_Latn\\): the model was not trained to translate into it; $trained" \
    "$TED" translate -m "$multi" --source-lang en --target-lang de "$english"
# French <-> Spanish was not trained (the model answers in English): refused.
expect_error multi-untrained-direction \
    "the model does not translate fra_Latn into spa_Latn; from fra_Latn it translates into eng_Latn$" \
    "$TED" translate -m "$multi" --source-lang fra_Latn --target-lang spa_Latn "$french"
expect_error multi-untrained-direction-back \
    "the model does not translate spa_Latn into fra_Latn; from spa_Latn it translates into eng_Latn$" \
    "$TED" step -m "$multi" --source-lang spa_Latn --target-lang fra_Latn --auto "$spanish"

# ISO 639 codes name the model's: fr, fra and fre are fra_Latn, en eng_Latn.
for pair in "en fr $french" "eng fre $french" "en es $spanish" "fr en $english"; do
    set -- $pair
    from=$1 to=$2
    shift 2
    want=$*
    text=$english
    [ "$from" = fr ] && text=$french
    run "$work/out" "$work/err" "$TED" translate -m "$multi" --source-lang "$from" \
        --target-lang "$to" "$text"
    if [ "$status" -eq 0 ] && [ "$(cat "$work/out")" = "$want" ]; then
        ok "multi-iso-codes-$from-$to"
    else
        fail "multi-iso-codes-$from-$to" "exit $status: $(head -c 200 "$work/out") $(head -c 200 "$work/err")"
    fi
done
expect_error multi-nearest-codes \
    "unknown target language \"frn\" \\(nearest: fra_Latn\\); the model.s: eng_Latn, fra_Latn, spa_Latn$" \
    "$TED" translate -m "$multi" --source-lang en --target-lang frn "$english"

# Without the top-level languages the same files translate between all 202
# codes of tokenizer.languages; "zh" is then two of them, and says which.
mkdir "$work/all202"
for f in "$multi"/*; do ln -s "$PWD/$f" "$work/all202/"; done
rm "$work/all202/config.yaml"
grep -v '^languages:' "$multi/config.yaml" >"$work/all202/config.yaml"
codes=$(sed -n 's/^  languages: \[\(.*\)\].*/\1/p' "$multi/config.yaml" | tr -d '", ' | tr '[]' '  ' | wc -c)
count=$(sed -n 's/^  languages: \[\(.*\)\].*/\1/p' "$multi/config.yaml" | tr ',' '\n' | grep -c _)
run "$work/out" "$work/err" "$TED" info -m "$work/all202"
if [ "$status" -eq 0 ] && [ "$count" -eq 202 ] && [ "$codes" -gt 0 ] &&
    grep -q "^target languages: $count (ace_Arab " "$work/out" && ! grep -q "^directions" "$work/out"; then
    ok multi-without-languages-key-names-all
else
    fail multi-without-languages-key-names-all "exit $status, $count codes: $(grep -E 'languages|directions' "$work/out" | head -c 300)"
fi
expect_error multi-ambiguous-iso \
    "target language \"zh\" is ambiguous: it may be zho_Hans, zho_Hant; give one$" \
    "$TED" translate -m "$work/all202" --source-lang en --target-lang zh "$english"
run "$work/out" "$work/err" "$TED" translate -m "$work/all202" --source-lang en \
    --target-lang zh-Hant "$english"
"$TED" translate -m "$work/all202" --source-lang en --target-lang zho_Hant "$english" \
    >"$work/want" 2>&1
if [ "$status" -eq 0 ] && [ -s "$work/out" ] && cmp -s "$work/out" "$work/want"; then
    ok multi-script-chooses-code
else
    fail multi-script-chooses-code "exit $status: $(head -c 200 "$work/err")"
fi

# The Python package takes the same codes and refuses the same ones (not
# with the sanitized libted.so, which needs its runtime preloaded:
# tests/python/run.sh).
library=${BUILD:-build}/libted.so
if [ "${SAN:-}" != 1 ] && [ -f "$library" ] &&
    PYTHONPATH=python TED_LIBRARY="$library" "${TEST_PYTHON:-python3}" -c "import ted" 2>/dev/null; then
    run "$work/out" "$work/err" env PYTHONPATH=python TED_LIBRARY="$library" \
        "${TEST_PYTHON:-python3}" -c "
import sys, ted
t = ted.Translator('$multi')
print(t.languages['target'])
print(t.translate('$english', source_lang='en', target_lang='fr'))
for source, target in (('eng_Latn', 'deu_Latn'), ('fra_Latn', 'spa_Latn')):
    try:
        t.translate('$english', source_lang=source, target_lang=target)
        print('translated', source, target)
    except ted.Error as e:
        print(type(e).__name__, e)
"
    if [ "$status" -eq 0 ] && [ "$(sed -n 1p "$work/out")" = "['eng_Latn', 'fra_Latn', 'spa_Latn']" ] &&
        [ "$(sed -n 2p "$work/out")" = "$french" ] &&
        sed -n 3p "$work/out" | grep -q 'not trained to translate into it' &&
        sed -n 4p "$work/out" | grep -q 'does not translate fra_Latn into spa_Latn'; then
        ok python-trained-languages
    else
        fail python-trained-languages "exit $status: $(tr '\n' '|' <"$work/out") $(head -c 300 "$work/err")"
    fi
else
    skip python-trained-languages "the ted package does not import here, or SAN=1"
fi
