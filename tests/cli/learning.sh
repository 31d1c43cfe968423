#!/bin/sh
# The learning commands: `ted step` (one decoder step at a time, in a script
# and at a real terminal driven through tmux) and `ted attention` (the HTML
# page opened in headless Chromium, the SVG and the JSON). Each check prints
# "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
TEST_PYTHON=${TEST_PYTHON:-$PYTHON}  # transformers: the T5 checks
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
MODEL=models/toy-en-fr
work=$(mktemp -d)
sock="ted-learning-$$"
unset NO_COLOR
cleanup() {
    command -v tmux >/dev/null 2>&1 && tmux -L "$sock" kill-server 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
. tests/lib/checks.sh

# The model's sizes, from its config.
config_value() { sed -n "s/^ *$1: *\([0-9]*\).*/\1/p" "$MODEL/config.yaml" | head -n 1; }
D=$(config_value d_model)
H=$(config_value heads)
FF=$(config_value d_ff)
VOCAB=$(config_value tgt_vocab_size)
ENC_LAYERS=$(config_value encoder_layers)
DEC_LAYERS=$(config_value decoder_layers)
Q=$((D / H))

# chosen_tokens FILE: the tokens of the "step N: chosen 'TOKEN' p=..." lines,
# EOS dropped, joined by spaces.
chosen_tokens() {
    sed -n "s/^step [0-9]*: chosen '\(.*\)' p=[0-9.e+-]*\( (forced; .*\)\{0,1\}\$/\1/p" "$1" |
        grep -vx '<eos>' | paste -sd ' ' -
}

# --- help and usage -----------------------------------------------------------
for cmd in step attention; do
    if out=$("$TED" "$cmd" --help 2>&1) && echo "$out" | grep -q "^usage: ted $cmd -m DIR"; then
        ok "help-$cmd"
    else
        fail "help-$cmd" "$(echo "$out" | head -n 3)"
    fi
done
if "$TED" --help | grep -q '^  step ' && "$TED" --help | grep -q '^  attention '; then
    ok usage-lists-commands
else
    fail usage-lists-commands "ted --help does not list step and attention"
fi
for word in --auto --force --heads --explain --no-color --layer --top; do
    "$TED" step --help | grep -q -- "$word" || fail "help-step-$word" "not in ted step --help"
done

# --- step --auto: the tokens of ted translate, attention rows summing to 1 -----
cat >"$work/sentences" <<'EOF'
the black cat eats the small bird .
my sister did not see the old green car .
she thinks that the queen will not sing .
the door was not in the bottle but the elephants run without this gray elephant .
five kings painted rabbits but they played under the bed .
a small father said that your old baker will write the good books .
your owls will eat my fresh cake tomorrow .
you do not listen to your woman who cries .
EOF
n=0
while IFS= read -r s; do
    n=$((n + 1))
    expected=$("$TED" translate -m "$MODEL" "$s")
    if ! "$TED" step -m "$MODEL" --auto --heads "$s" >"$work/step$n" 2>"$work/err$n"; then
        fail "step-auto-$n" "exit status $?: $(head -c 300 "$work/err$n")"
        continue
    fi
    got=$(chosen_tokens "$work/step$n")
    line=$(sed -n 's/^translation: //p' "$work/step$n")
    if [ -z "$expected" ]; then
        fail "step-matches-translate-$n" "ted translate gave nothing for '$s'"
    elif [ "$got" != "$expected" ] || [ "$line" != "$expected" ]; then
        fail "step-matches-translate-$n" "step chose '$got' (translation: '$line'), translate '$expected'"
    else
        ok "step-matches-translate-$n"
    fi
    # Every attention row: as many weights as source tokens, summing to 1.
    result=$(awk -v heads="$H" '
        /^source:/ { tokens = NF - 1 }
        /^step [0-9]+: chosen / { steps++ }
        /^step [0-9]+: attention layer [0-9]+ (mean|head [0-9]+):/ {
            rows++
            split($0, parts, ": ")
            k = split(parts[3], w, " ")
            sum = 0
            for (i = 1; i <= k; i++) sum += w[i]
            if (k != tokens) { print "row " rows ": " k " weights for " tokens " tokens"; exit }
            if (sum < 1 - 1e-5 || sum > 1 + 1e-5) { printf "row %d sums to %.9f\n", rows, sum; exit }
        }
        END { if (steps == 0 || rows != steps * (heads + 1)) print rows " rows for " steps " steps" }
    ' "$work/step$n")
    if [ -z "$result" ]; then ok "attention-rows-sum-to-1-$n"; else fail "attention-rows-sum-to-1-$n" "$result"; fi
done <"$work/sentences"

# Every step shows its top-k, most likely first, the greedy choice on top.
result=$(awk '
    /^step [0-9]+: chosen / { step = $2; chosen = $0; sub(/^[^'\'']*'\''/, "", chosen); sub(/'\'' p=.*/, "", chosen); want = 1; last = 2 }
    /^ +[0-9]+\. / {
        p = $3 + 0
        if (p > last + 1e-12) { print "step " step ": top-k not in order"; exit }
        last = p
        if (want && $2 != chosen) { print "step " step ": first candidate " $2 ", chosen " chosen; exit }
        want = 0
    }' "$work/step1")
if [ -z "$result" ]; then ok step-top-k-ordered; else fail step-top-k-ordered "$result"; fi

# The probabilities are the softmax of the logits: compare every step's
# top-k with `ted logits` teacher-forced on the same translation.
first=$(head -n 1 "$work/sentences")
"$TED" logits -m "$MODEL" --source "$first" --target "$(chosen_tokens "$work/step1")" >"$work/logits"
if result=$("$PYTHON" - "$work/step1" "$work/logits" "$MODEL/vocab.tgt" 2>&1 <<'PY'
import math, re, sys
steps, logits, vocab = open(sys.argv[1]).read(), open(sys.argv[2]).read().split("\n"), open(sys.argv[3]).read().split("\n")
blocks = re.split(r"^step \d+: prefix", steps, flags=re.M)[1:]
assert len(blocks) == len([l for l in logits if l]), f"{len(blocks)} steps, {len(logits)} logit lines"
for i, block in enumerate(blocks):
    row = [float(x) for x in logits[i].split()]
    m = max(row)
    z = sum(math.exp(x - m) for x in row)
    probs = [math.exp(x - m) / z for x in row]
    shown = re.findall(r"^ +\d+\. (\S+) +([0-9.e-]+)", block, flags=re.M)
    assert shown, f"step {i + 1}: no candidates"
    best = sorted(range(len(row)), key=lambda v: (-row[v], v))[:len(shown)]
    for (token, p), v in zip(shown, best):
        assert token == vocab[v], f"step {i + 1}: candidate {token}, logits say {vocab[v]}"
        # within half a unit of the last digit printed
        tol = 0.05 * 10 ** int(p.split("e")[1]) if "e" in p else 0.5 * 10 ** -len(p.split(".")[1])
        assert abs(float(p) - probs[v]) <= tol * 1.01 + 1e-9, f"step {i + 1}: p({token}) {p}, softmax {probs[v]}"
print(len(blocks))
PY
); then
    ok "step-probabilities-are-softmax-of-logits ($result steps)"
else
    fail step-probabilities-are-softmax-of-logits "$result"
fi

# Special tokens are shown as such.
if grep -q '^source: <bos> the black cat .* <eos>$' "$work/step1" &&
    grep -q "^step [0-9]*: chosen '<eos>'" "$work/step1"; then
    ok step-special-tokens
else
    fail step-special-tokens "$(grep -E '^source:|<eos>' "$work/step1" | head -n 3)"
fi
if "$TED" step -m "$MODEL" --auto "the zebra sleeps ." >"$work/unk" 2>"$work/unk.err" &&
    grep -q '^source: <bos> the <unk> sleeps \. <eos>$' "$work/unk" && grep -q "'zebra'" "$work/unk.err"; then
    ok step-unknown-word
else
    fail step-unknown-word "$(head -n 2 "$work/unk") / $(cat "$work/unk.err")"
fi

# Without a terminal on standard input, step runs like --auto, without colours.
"$TED" step -m "$MODEL" --heads "$first" </dev/null >"$work/noauto" 2>&1
if cmp -s "$work/noauto" "$work/step1"; then ok step-no-terminal-is-auto; else fail step-no-terminal-is-auto "output differs from --auto"; fi
if grep -q "$(printf '\033')" "$work/step1"; then fail step-no-color-off-terminal "escape codes in piped output"; else ok step-no-color-off-terminal; fi

# --layer picks another decoder layer's attention.
"$TED" step -m "$MODEL" --auto --layer 1 "$first" >"$work/layer1"
if grep -q '^step 1: attention layer 1 mean:' "$work/layer1" &&
    [ "$(grep '^step 1: attention' "$work/layer1")" != "$(grep '^step 1: attention layer [0-9]* mean' "$work/step1")" ]; then
    ok step-layer
else
    fail step-layer "$(grep '^step 1: attention' "$work/layer1")"
fi

# --- --force changes the continuation ----------------------------------------
greedy=$(chosen_tokens "$work/step1")
third=$(echo "$greedy" | cut -d' ' -f3)
force=blanc
[ "$third" = blanc ] && force=gris
if "$TED" step -m "$MODEL" --auto --force "3:$force" "$first" >"$work/forced" 2>"$work/forced.err"; then
    forced=$(chosen_tokens "$work/forced")
    prefix=$(echo "$greedy" | cut -d' ' -f1-2)
    case "$forced" in
    "$prefix $force "*)
        if [ "$forced" = "$greedy" ]; then
            fail step-force-changes-continuation "same translation"
        elif ! grep -q "^step 3: chosen '$force' p=.* (forced; the model's choice: '$third'" "$work/forced"; then
            fail step-force-changes-continuation "step 3 not shown as forced: $(grep '^step 3: chosen' "$work/forced")"
        elif ! grep -q "^step 4: prefix <bos> $prefix $force\$" "$work/forced"; then
            fail step-force-changes-continuation "step 4 does not read the forced token: $(grep '^step 4: prefix' "$work/forced")"
        else
            ok "step-force-changes-continuation ($greedy -> $forced)"
        fi ;;
    *) fail step-force-changes-continuation "got '$forced' from forcing '$force' after '$prefix'" ;;
    esac
    # The continuation is what the model predicts after the forced prefix.
    next=$(sed -n "s/^step 4: chosen '\(.*\)' p=.*/\1/p" "$work/forced")
    id=$("$TED" logits -m "$MODEL" --source "$first" --target "$prefix $force" | tail -n 1 |
        awk '{ b = 1; for (i = 2; i <= NF; i++) if ($i > $b) b = i; print b - 1 }')
    want=$(sed -n "$((id + 1))p" "$MODEL/vocab.tgt")
    if [ -n "$next" ] && [ "$next" = "$want" ]; then
        ok step-force-continues-like-logits
    else
        fail step-force-continues-like-logits "step 4 chose '$next', ted logits after the forced prefix says '$want'"
    fi
else
    fail step-force-changes-continuation "exit status: $(cat "$work/forced.err")"
fi
"$TED" step -m "$MODEL" --auto --force le --force chien "$first" >"$work/forced2"
case "$(chosen_tokens "$work/forced2")" in
"le chien "*) ok step-force-repeated ;;
*) fail step-force-repeated "$(chosen_tokens "$work/forced2")" ;;
esac

# --- --force a word on a SentencePiece model: its pieces, as spm encodes it -----
# A word as typed ("noire") is the model's word-initial piece ("▁noire");
# a word of several pieces takes one step each. The pieces are those of
# Python's sentencepiece for the model's target.spm.
spm_pieces() {
    "$PYTHON" -c "import sentencepiece as s, sys
p = s.SentencePieceProcessor(model_file='models/en-fr/target.spm')
print(' '.join(p.encode(sys.argv[1], out_type=str)))" "$1"
}
if ! "$PYTHON" -c "import sentencepiece" 2>/dev/null; then
    fail step-force-word "Python's sentencepiece is missing (python3-sentencepiece)"
else
    for word in noire chatxq; do
        pieces=$(spm_pieces "$word")
        n=$(echo "$pieces" | wc -w)
        if ! "$TED" step -m models/en-fr --auto --force "2:$word" "the black cat" \
            >"$work/spm-forced" 2>"$work/spm-forced.err"; then
            fail "step-force-word-$word" "$(head -c 300 "$work/spm-forced.err")"
            continue
        fi
        got=$(sed -n "s/^step \([0-9]*\): chosen '\(.*\)' p=[0-9.e+-]* (forced; .*/\1 \2/p" \
            "$work/spm-forced" | awk -v n="$n" '$1 >= 2 && $1 < 2 + n { print $2 }' | paste -sd ' ' -)
        if [ "$got" = "$pieces" ]; then
            ok "step-force-word-$word ($pieces)"
        else
            fail "step-force-word-$word" "forced steps 2.. took '$got', sentencepiece says '$pieces'"
        fi
    done
fi
expect_error step-force-word-unknown "^ted: step: --force '2:zzzq': 'zzzq' is not in the target vocabulary" \
    "$TED" step -m "$MODEL" --auto --force 2:zzzq "$first"


"$TED" step -m "$MODEL" --auto --explain "$first" >"$work/explain"
S=$(awk '/^source:/ { print NF - 1 }' "$work/explain")
missing=""
for want in "Embedding Size $D" "Number of Heads $H" "Query Size = $D / $H = $Q" \
    "logical split into $H heads of Query Size $Q" "(1, $S, $D) → (1, $H, $S, $Q)" \
    "scores Q·Kᵀ / √$Q" "(1, $H, $S, $S)" "merge heads" \
    "(1, $H, $S, $Q) → (1, $S, $H, $Q) → (1, $S, $H × $Q = $D)" "Add & Norm" \
    "Linear $D → $FF" "(1, 1, $FF) → (1, 1, $D)" "Linear $D → $VOCAB" "Softmax" \
    "(1, $H, 1, $S)" "encoder-decoder attention"; do
    grep -qF -- "$want" "$work/explain" || missing="$missing [$want]"
done
steps=$(grep -c '^step [0-9]*: chosen' "$work/explain")
for k in $(seq 1 "$steps"); do
    grep -qF "scores Q·Kᵀ / √$Q, softmax over positions 0..$((k - 1))" "$work/explain" &&
        grep -qF "(1, $H, 1, $k)" "$work/explain" || missing="$missing [step $k scores (1, $H, 1, $k)]"
done
if [ -z "$missing" ] && [ "$steps" -gt 0 ]; then ok step-explain; else fail step-explain "missing:$missing"; fi

expect_error step-no-model "no model" "$TED" step "the cat ."
expect_error step-no-text "no sentence" "$TED" step -m "$MODEL"
expect_error step-two-texts "one sentence" "$TED" step -m "$MODEL" the cat
expect_error step-empty-text "empty" "$TED" step -m "$MODEL" "  "
expect_error step-bad-option "unknown option '--bogus'" "$TED" step -m "$MODEL" --bogus "the cat ."
expect_error step-force-unknown-token "'zzz' is not in the target vocabulary" \
    "$TED" step -m "$MODEL" --force zzz "the cat ."
expect_error step-force-bad-step "step must be" "$TED" step -m "$MODEL" --force 0:le "the cat ."
expect_error step-force-past-end "at most [0-9]+ steps" "$TED" step -m "$MODEL" --force 99:le "the cat ."
expect_error step-force-twice "already forced" "$TED" step -m "$MODEL" --force le --force 1:la "the cat ."
expect_error step-layer-too-big "has $DEC_LAYERS decoder layers" \
    "$TED" step -m "$MODEL" --layer $((DEC_LAYERS + 1)) "the cat ."
expect_error step-top-zero "--top" "$TED" step -m "$MODEL" --top 0 "the cat ."
expect_error step-missing-model "config\.yaml" "$TED" step -m "$work/nothing" "the cat ."
expect_error attention-nothing-to-write "nothing to write" "$TED" attention -m "$MODEL" "the cat ."
expect_error attention-unwritable "cannot write '$work/no/dir/a.html'" \
    "$TED" attention -m "$MODEL" "the cat ." --html "$work/no/dir/a.html"
expect_error attention-full-disk "error writing '/dev/full'" \
    "$TED" attention -m "$MODEL" "the cat ." --json /dev/full
expect_error attention-two-stdout "only one" "$TED" attention -m "$MODEL" "the cat ." --html - --json -
expect_error attention-bad-kind "--kind 'self'" "$TED" attention -m "$MODEL" "the cat ." --svg - --kind self
expect_error attention-bad-head "--head 'x'" "$TED" attention -m "$MODEL" "the cat ." --svg - --head x
expect_error attention-head-too-big "has $H heads" \
    "$TED" attention -m "$MODEL" "the cat ." --svg - --head $((H + 1))
expect_error attention-layer-too-big "has $ENC_LAYERS encoder layers" \
    "$TED" attention -m "$MODEL" "the cat ." --svg - --kind encoder --layer $((ENC_LAYERS + 1))
expect_error attention-no-text "no sentence" "$TED" attention -m "$MODEL" --json -

# --- T5: RMSNorm, the relative position bias, the gated feed-forward -------------
# A small random T5 built with transformers (tests/lib/t5_learn_model.py); the
# buckets `ted step --explain` names are held against transformers'
# T5Attention._relative_position_bucket.
t5_checks() {
    if ! "$TEST_PYTHON" -c "import transformers, sentencepiece" 2>/dev/null; then
        skip t5-model "transformers is not in $TEST_PYTHON (make venv)"
        return
    fi
    if ! PYTHON="$PYTHON" "$TEST_PYTHON" tests/lib/t5_learn_model.py "$work/t5" 2>"$work/t5-err" >/dev/null; then
        fail t5-model "$(tail -n 3 "$work/t5-err")"
        return
    fi
    t5="$work/t5/ted"
    run "$work/t5-step" "$work/t5-step-err" "$TED" step -m "$t5" --auto --explain --max-length 16 \
        "The old man was walking in the garden with his two small dogs yesterday."
    if [ "$status" -ne 0 ]; then
        fail t5-step-explain "exit status $status: $(head -c 300 "$work/t5-step-err")"
        return
    fi
    missing=""
    for want in "sublayer(RMSNorm(x))" "RMSNorm: x / √(mean(x²) + ε) × γ — no mean subtraction, no bias β" \
        "final RMSNorm" "scores Q·Kᵀ (no 1/√10 scaling) + relative position bias B[head, bucket(key − query)], softmax over the keys" \
        "scores Q·Kᵀ (no 1/√10 scaling); no position bias here; softmax over the source" \
        "Query Size 10 (set by the model: Heads × Query Size = 40)" "Q, K, V: three Linears 32 → 40" \
        "output Linear W^O 40 → 32" "logical split into 4 heads of Query Size 10" \
        "gated feed-forward, two products: gelu_tanh(x W_i0) ⊙ (x W_i1), each Linear 32 → 48" \
        "then W_o: Linear 48 → 32" "one of 8 buckets (4 for keys up to the query, 4 after" \
        "input embedding (no positional encoding"; do
        grep -qF -- "$want" "$work/t5-step" || missing="$missing [$want]"
    done
    if [ -n "$missing" ]; then
        fail t5-explain-lines "not said:$missing"
    elif grep -qE "LayerNorm\(|final LayerNorm|Kᵀ / √|positional encoding of" "$work/t5-step"; then
        fail t5-explain-lines "LayerNorm, 1/√d scaling or a positional encoding said of T5: $(grep -E "LayerNorm\(|final LayerNorm|Kᵀ / √|positional encoding of" "$work/t5-step" | head -n 1)"
    else
        ok t5-explain-lines
    fi
    if result=$("$TEST_PYTHON" - "$work/t5-step" 2>&1 <<'PY'
import re, sys
import torch
from transformers.models.t5.modeling_t5 import T5Attention
lines = [l for l in open(sys.argv[1], encoding="utf-8") if "the buckets of query" in l]
pairs = 0
for l in lines:
    q = int(re.search(r"the buckets of query (\d+)", l).group(1))
    for k, b in re.findall(r"key (\d+) → bucket (\d+)", l):
        want = T5Attention._relative_position_bucket(torch.tensor(int(k) - q), bidirectional=False,
                                                     num_buckets=8, max_distance=20)
        if int(b) != int(want):
            sys.exit(f"query {q} key {k}: bucket {b}, transformers {int(want)}")
        pairs += 1
    if f"key {q} → bucket" not in l or (q > 0 and "key 0 → bucket" not in l):
        sys.exit(f"query {q}: key 0 or the query's own key is not named: {l.strip()}")
if len(lines) < 10:
    sys.exit(f"{len(lines)} steps explained, 10 wanted")
print(f"{pairs} pairs of {len(lines)} steps")
PY
    ); then
        ok t5-step-buckets "$result"
    else
        fail t5-step-buckets "$result"
    fi
}
t5_checks

# --- ted attention: JSON, SVG ----------------------------------------------------
if "$TED" attention -m "$MODEL" "$first" --json "$work/a.json" --html "$work/a.html" \
    --svg "$work/a.svg" --kind decoder --layer 1 --head 2 2>"$work/err"; then
    ok attention-writes
else
    fail attention-writes "$(cat "$work/err")"
fi
"$TED" step -m "$MODEL" --auto --heads --layer 2 "$first" >"$work/step-layer2"
if result=$("$PYTHON" - "$work/a.json" "$work/step-layer2" "$("$TED" translate -m "$MODEL" "$first")" \
    "$ENC_LAYERS" "$DEC_LAYERS" "$H" 2>&1 <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
step_text, translation = open(sys.argv[2]).read(), sys.argv[3]
enc_layers, dec_layers, heads = map(int, sys.argv[4:7])
S, T = len(d["source_tokens"]), len(d["steps"])
assert d["translation"] == translation, (d["translation"], translation)
assert d["decoder_inputs"][0] == "<bos>" and len(d["decoder_inputs"]) == T
assert d["steps"][-1]["chosen"] == "<eos>"
for i, s in enumerate(d["steps"]):
    assert s["top"][0]["token"] == s["chosen"], f"step {i + 1}"
    assert all(a["p"] >= b["p"] for a, b in zip(s["top"], s["top"][1:])), f"step {i + 1} top-k order"
    if i:
        assert d["decoder_inputs"][i] == d["steps"][i - 1]["chosen"]
def check(name, layers, rows, cols, causal=False):
    w = d[name]
    assert len(w) == layers, f"{name}: {len(w)} layers"
    for l in range(layers):
        assert len(w[l]) == heads, f"{name}: {len(w[l])} heads"
        for h in range(heads):
            assert len(w[l][h]) == rows, f"{name} [{l}][{h}]: {len(w[l][h])} rows"
            for i, row in enumerate(w[l][h]):
                assert len(row) == cols and abs(sum(row) - 1) < 1e-5, f"{name} [{l}][{h}][{i}] sums to {sum(row)}"
                if causal:
                    assert all(x == 0 for x in row[i + 1:]), f"{name} [{l}][{h}][{i}]: weight on a future position"
                    assert row[i] > 0
check("encoder_self_attention", enc_layers, S, S)
check("decoder_self_attention", dec_layers, T, T, causal=True)
check("cross_attention", dec_layers, T, S)
# The rows `ted step` prints are the same numbers.
for m in re.finditer(r"^step (\d+): attention layer 2 (mean|head (\d+)): (.*)$", step_text, flags=re.M):
    t = int(m.group(1)) - 1
    rows = [d["cross_attention"][1][h][t] for h in range(heads)]
    want = [sum(r[j] for r in rows) / heads for j in range(S)] if m.group(2) == "mean" else rows[int(m.group(3)) - 1]
    got = [float(x) for x in m.group(4).split()]
    assert max(abs(a - b) for a, b in zip(got, want)) < 1e-6, f"step {t + 1} {m.group(2)}"
print(f"{S} source tokens, {T} steps")
PY
); then
    ok "attention-json ($result)"
else
    fail attention-json "$result"
fi
if result=$("$PYTHON" - "$work/a.svg" "$work/a.json" 2>&1 <<'PY'
import json, sys
import xml.etree.ElementTree as ET
d = json.load(open(sys.argv[2]))
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
T = len(d["steps"])
rects = [r for r in root.iter(ns + "rect") if r.get("x") is not None]
assert len(rects) == T * T, f"{len(rects)} cells, want {T * T}"
cols = [t.text for t in root.iter(ns + "text") if t.get("class") == "col"]
rows = [t.text for t in root.iter(ns + "text") if t.get("class") == "row"]
assert cols == d["decoder_inputs"], cols
assert rows == [f'{s["input"]} → {s["chosen"]}' for s in d["steps"]], rows
title = "".join(next(root.iter(ns + "text")).itertext())
assert "Decoder masked self-attention, layer 1, head 2" in title, title
w = d["decoder_self_attention"][0][1]
fills = [r.get("fill") for r in rects]
assert fills[1] == "#e8e8e8" and fills[0] != "#e8e8e8", "masked cells"
print(f"{len(rects)} cells")
PY
); then
    ok "attention-svg ($result)"
else
    fail attention-svg "$result"
fi
if grep -qiE '(src|href) *=|url\(|@import|https?:' "$work/a.html"; then
    fail attention-html-self-contained "$(grep -oiE '.{30}((src|href) *=|url\(|@import|https?:).{30}' "$work/a.html" | head -n 2)"
else
    ok attention-html-self-contained
fi

# --- the HTML page in headless Chromium --------------------------------------------
chromium() {
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --disable-default-apps --disable-extensions --no-default-browser-check \
        --user-data-dir="$(mktemp -d "$work/chromium.XXXXXX")" "$@" 2>>"$work/chromium.log"
}
if [ ! -x "$CHROMIUM" ]; then
    fail attention-html-chromium "$CHROMIUM is missing (scripts/install-deps.sh installs chromium)"
else
    page="file://$work/a.html"
    for view in default layer2 all; do
        case $view in
        default) url=$page ;;
        layer2) url="$page#layer=2&head=1" ;;
        all) url="$page#all" ;;
        esac
        if ! chromium --dump-dom "$url" >"$work/dom-$view.html" || [ ! -s "$work/dom-$view.html" ]; then
            fail "attention-html-dom-$view" "chromium --dump-dom failed: $(tail -n 3 "$work/chromium.log")"
            continue
        fi
        if result=$("$PYTHON" - "$work/dom-$view.html" "$work/a.json" "$view" 2>&1 <<'PY'
import json, sys
from html.parser import HTMLParser
d = json.load(open(sys.argv[2]))
view = sys.argv[3]
c = d["config"]
H, S, T = c["heads"], len(d["source_tokens"]), len(d["steps"])

class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.figures, self.fig, self.text, self.ready, self.steps = [], None, None, None, 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.ready = a.get("data-ready")
        if tag == "figure" and "hm" in a.get("class", "").split():
            self.fig = {"kind": a["data-kind"], "layer": int(a["data-layer"]), "head": a["data-head"],
                        "hidden": "hidden" in a, "rows": [], "cols": [], "cells": 0}
            self.figures.append(self.fig)
        if self.fig is not None and tag == "text" and a.get("class") in ("row", "col"):
            self.text = a["class"]
            self.fig[self.text + "s"].append("")
        if self.fig is not None and tag == "rect":
            self.fig["cells"] += 1
        if tag == "tr" and a.get("class") == "step":
            self.steps += 1
    def handle_endtag(self, tag):
        if tag == "figure":
            self.fig = None
        if tag == "text":
            self.text = None
    def handle_data(self, data):
        if self.text:
            self.fig[self.text + "s"][-1] += data

p = Page()
p.feed(open(sys.argv[1]).read())
assert p.ready == "1", "the page's script did not run"
want = (c["encoder_layers"] + 2 * c["decoder_layers"]) * (H + 1)
assert len(p.figures) == want, f"{len(p.figures)} heatmaps, want {want}"
steps = [f'{s["input"]} → {s["chosen"]}' for s in d["steps"]]
axes = {"encoder": (d["source_tokens"], d["source_tokens"]),
        "decoder": (steps, d["decoder_inputs"]), "cross": (steps, d["source_tokens"])}
for f in p.figures:
    rows, cols = axes[f["kind"]]
    assert f["rows"] == rows, f"{f['kind']} rows {f['rows']}"
    assert f["cols"] == cols, f"{f['kind']} columns {f['cols']}"
    assert f["cells"] == len(rows) * len(cols), f"{f['kind']}: {f['cells']} cells"
assert p.steps == T, f"{p.steps} rows in the top-k table, want {T}"
shown = [f for f in p.figures if not f["hidden"]]
if view == "all":
    assert len(shown) == want, f"{len(shown)} shown"
else:
    layer, head = (1, "0") if view == "layer2" else (c["decoder_layers"] - 1, "mean")
    assert len(shown) == 3, f"{len(shown)} heatmaps shown, want 3"
    assert all(f["layer"] == layer and f["head"] == head for f in shown), shown
    assert sorted(f["kind"] for f in shown) == ["cross", "decoder", "encoder"]
print(f"{len(p.figures)} heatmaps, {len(shown)} shown, {S} source and {T} target tokens")
PY
        ); then
            ok "attention-html-dom-$view ($result)"
        else
            fail "attention-html-dom-$view" "$result"
        fi
    done
    rm -f "$work/shot.png"
    if chromium --screenshot="$work/shot.png" --window-size=1200,1000 --hide-scrollbars "$page" >/dev/null &&
        [ -s "$work/shot.png" ]; then
        # Decode the PNG (zlib + the five PNG filters) and count the dark blue
        # of the strongest heatmap cells: a page without heatmaps has none.
        if result=$("$PYTHON" - "$work/shot.png" 2>&1 <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    chunk = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", chunk)
    elif kind == b"IDAT":
        idat += chunk
    pos += 12 + n
w, h, depth, colour = ihdr[:4]
assert (w, h) == (1200, 1000), f"{w}x{h}"
assert depth == 8 and colour in (2, 6), f"depth {depth}, colour type {colour}"
bpp = 3 if colour == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, dark, light = bytearray(stride), 0, 0
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        r, g, bl = line[x], line[x + 1], line[x + 2]
        if bl > 90 and r < 60 and bl - r > 50:
            dark += 1
        elif r > 240 and g > 240 and bl > 240:
            light += 1
    prev = line
assert dark > 2000, f"only {dark} dark blue pixels: no heatmap drawn?"
assert light > w * h // 3, "the page is not mostly white"
print(f"{w}x{h}, {dark} dark blue pixels")
PY
        ); then
            ok "attention-html-screenshot ($result)"
        else
            fail attention-html-screenshot "$result"
        fi
    else
        fail attention-html-screenshot "chromium --screenshot failed: $(tail -n 3 "$work/chromium.log")"
    fi
fi

# --- step at a terminal: tmux, real key presses -----------------------------------
if ! command -v tmux >/dev/null 2>&1; then
    fail step-interactive "tmux is missing (scripts/install-deps.sh installs it)"
else
    T="tmux -L $sock -f /dev/null"
    # wait_for SESSION REGEX: until a line of the pane (its whole history)
    # matches the extended REGEX, 60 s at most.
    wait_for() {
        i=0
        while [ $i -lt 600 ]; do
            $T capture-pane -p -J -S - -t "$1" 2>/dev/null | grep -qE -- "$2" && return 0
            sleep 0.1
            i=$((i + 1))
        done
        return 1
    }
    keys() { $T send-keys -t "$1" -l "$2" && $T send-keys -t "$1" Enter; }
    start() {  # start SESSION COMMAND: a shell in a 160x50 terminal, the command typed in
        $T new-session -d -s "$1" -x 160 -y 50 -c "$PWD" "env PS1='$ ' sh" &&
            $T set-option -t "$1" history-limit 20000 >/dev/null && keys "$1" "$2"
    }
    start learn "$TED step -m $MODEL '$first'; echo ted-exit=\$?"
    result=""
    wait_for learn "^\[step 1\] Enter: run it" || result="no prompt"
    [ -z "$result" ] && { keys learn ""; wait_for learn "^\[step 2\] Enter" || result="Enter did not run step 1"; }
    [ -z "$result" ] && { keys learn "zzz"; wait_for learn "^'zzz' is not in the target vocabulary" || result="no message for an unknown token"; }
    [ -z "$result" ] && { keys learn ""; wait_for learn "^\[step 3\] Enter" || result="Enter did not run step 2"; }
    [ -z "$result" ] && { keys learn "$force"; wait_for learn "^\[step 4\] Enter" || result="typing '$force' did not run step 3"; }
    [ -z "$result" ] && { keys learn ""; wait_for learn "^\[step 5\] Enter" || result="Enter did not run step 4"; }
    [ -z "$result" ] && { keys learn "q"; wait_for learn "^ted-exit=[0-9]" || result="q did not quit"; }
    $T capture-pane -p -J -S - -t learn >"$work/pane" 2>/dev/null
    $T capture-pane -p -e -J -S - -t learn >"$work/pane-escapes" 2>/dev/null
    prefix=$(echo "$greedy" | cut -d' ' -f1-2)
    if [ -n "$result" ]; then
        fail step-interactive "$result: $(tail -n 5 "$work/pane")"
    elif ! grep -q "^step 1: chosen 'le'" "$work/pane" && ! grep -q "^step 1: chosen '$(echo "$greedy" | cut -d' ' -f1)'" "$work/pane"; then
        fail step-interactive "step 1 not shown"
    elif ! grep -q "^step 3: chosen '$force' p=.*(forced; the model's choice: '$third'" "$work/pane"; then
        fail step-interactive "the typed token was not taken: $(grep '^step 3: chosen' "$work/pane")"
    elif ! grep -q "^step 4: prefix <bos> $prefix $force\$" "$work/pane"; then
        fail step-interactive "step 4 does not read the typed token: $(grep '^step 4: prefix' "$work/pane")"
    elif [ "$(grep '^step 4: chosen' "$work/pane")" != "$(grep '^step 4: chosen' "$work/forced")" ]; then
        fail step-interactive "typing '$force' and --force 3:$force continue differently"
    elif ! grep -q "^translation: $prefix $force " "$work/pane" || ! grep -q "stopped after 4 steps" "$work/pane"; then
        fail step-interactive "no translation so far after q: $(grep -A1 '^translation' "$work/pane")"
    elif ! grep -q "^ted-exit=0" "$work/pane"; then
        fail step-interactive "exit status: $(grep ted-exit "$work/pane")"
    elif grep -q "^step [0-9]*: attention layer" "$work/pane"; then
        fail step-interactive "the rows for scripts are shown at the terminal"
    else
        ok step-interactive
    fi
    # A word typed at the prompt of a SentencePiece model: its pieces, one a
    # step, each offered at the next prompt.
    start spm "$TED step -m models/en-fr 'the black cat'; echo ted-exit=\$?"
    result=""
    wait_for spm "^\[step 1\] Enter: run it" || result="no prompt"
    [ -z "$result" ] && { keys spm "chatxq"; wait_for spm "^\[step 2\] Enter: run it \(takes 'x', from the word typed\)" || result="typing 'chatxq' did not offer 'x' next"; }
    [ -z "$result" ] && { keys spm ""; wait_for spm "^\[step 3\] Enter: run it \(takes 'q', from the word typed\)" || result="Enter did not offer 'q' next"; }
    [ -z "$result" ] && { keys spm ""; wait_for spm "^\[step 4\] Enter" || result="Enter did not run step 3"; }
    [ -z "$result" ] && { keys spm "q"; wait_for spm "^ted-exit=[0-9]" || result="q did not quit"; }
    $T capture-pane -p -J -S - -t spm >"$work/pane-spm" 2>/dev/null
    got=$(sed -n "s/^step [0-9]*: chosen '\(.*\)' p=[0-9.e+-]* (forced; .*/\1/p" "$work/pane-spm" | paste -sd ' ' -)
    if [ -n "$result" ]; then
        fail step-interactive-word "$result: $(tail -n 5 "$work/pane-spm")"
    elif [ "$got" != "$(spm_pieces chatxq)" ]; then
        fail step-interactive-word "took '$got', sentencepiece says '$(spm_pieces chatxq)'"
    else
        ok step-interactive-word
    fi

    colour="$(printf '\033')\[\([0-9;]*;\)\{0,1\}\(1\|2\|3[1-7]\)m"
    if grep -q "$colour" "$work/pane-escapes"; then ok step-interactive-colors; else fail step-interactive-colors "no colours at a terminal"; fi

    # To the end with Enter alone, --no-color: the translation of ted translate.
    start plain "$TED step -m $MODEL --no-color --heads '$first'; echo ted-exit=\$?"
    result=""
    wait_for plain "^\[step 1\] Enter" || result="no prompt"
    k=1
    while [ -z "$result" ] && [ $k -le 30 ] && ! $T capture-pane -p -J -S - -t plain | grep -q "^ted-exit="; do
        keys plain ""
        k=$((k + 1))
        wait_for plain "^(\[step $k\] Enter|ted-exit=[0-9])" || result="step $((k - 1)) did not run"
    done
    $T capture-pane -p -J -S - -t plain >"$work/pane2" 2>/dev/null
    $T capture-pane -p -e -J -S - -t plain >"$work/pane2-escapes" 2>/dev/null
    expected=$("$TED" translate -m "$MODEL" "$first")
    if [ -n "$result" ]; then
        fail step-interactive-to-the-end "$result: $(tail -n 5 "$work/pane2")"
    elif ! grep -qx "translation: $expected" "$work/pane2" || ! grep -q "^ted-exit=0" "$work/pane2"; then
        fail step-interactive-to-the-end "$(grep -E '^translation|^ted-exit' "$work/pane2")"
    elif [ "$(grep -c '^step [0-9]*: chosen' "$work/pane2")" -ne "$(grep -c '^step [0-9]*: chosen' "$work/step1")" ]; then
        fail step-interactive-to-the-end "a different number of steps than --auto"
    elif ! grep -q "head $H" "$work/pane2"; then
        fail step-interactive-to-the-end "--heads shows no per-head column"
    else
        ok step-interactive-to-the-end
    fi
    if grep -q "$colour" "$work/pane2-escapes"; then
        fail step-interactive-no-color "colours with --no-color: $(grep "$colour" "$work/pane2-escapes" | head -n 1 | cat -v)"
    else
        ok step-interactive-no-color
    fi
fi
exit 0
