#!/bin/sh
# What `ted step` says a rule on the scores did to each candidate
# (no_repeat_ngram_size, min_length, repetition_penalty, bad_words_ids, the
# config's banned_ids), held to transformers' logits processors: at every step, the
# candidates ted says a rule banned or penalised are exactly those the
# processor, given the same prefix, sets to -infinity or changes, and the
# n-gram ted names is the prefix's last tokens and the candidate; a model
# that forces the target language's code says so at step 1. Each check
# prints "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
TEST_PYTHON=${TEST_PYTHON:-$PYTHON}  # transformers: the reference processors
MODEL=models/toy-en-fr
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

SENTENCE="the cat eats the cat ."

# step_run NAME OPTIONS...: ted step --auto on $SENTENCE into $work/NAME.
step_run() {
    name=$1
    shift
    run "$work/$name" "$work/$name.err" "$TED" step -m "$MODEL" --auto --top 8 "$@" "$SENTENCE"
    if [ "$status" -ne 0 ]; then
        fail "$name-runs" "exit $status: $(head -c 300 "$work/$name.err")"
        return 1
    fi
}

# target ids of the toy vocabulary (line n is id n - 1)
target_id() {
    echo $(($(grep -n -x "$1" "$MODEL/vocab.tgt" | cut -d: -f1) - 1))
}

step_run ngram --no-repeat-ngram-size 2 &&
    step_run min-length --min-length 9 &&
    step_run penalty --repetition-penalty 1.5 &&
    step_run bad-words --bad-words-ids "$(target_id le),$(target_id chat)" \
        --bad-words-ids "$(target_id mange)" &&
    step_run plain || exit 0

if ! "$TEST_PYTHON" -c "import torch, transformers" 2>/dev/null; then
    skip learning-rules "transformers is not installed in $TEST_PYTHON"
    exit 0
fi

"$TEST_PYTHON" - "$work" "$MODEL" <<'EOF'
import re
import sys

import torch
from transformers import (MinLengthLogitsProcessor, NoBadWordsLogitsProcessor,
                          NoRepeatNGramLogitsProcessor, RepetitionPenaltyLogitsProcessor)

work, model = sys.argv[1], sys.argv[2]
with open(model + "/vocab.tgt", encoding="utf-8") as f:
    ids = {line.rstrip("\n"): i for i, line in enumerate(f)}
vocab, eos = len(ids), ids["<eos>"]
REASON = re.compile(r"(banned: .*|penalised .*|suppressed: .*)$")


def steps(name):
    """Each step of `ted step`'s output: (prefix tokens, chosen, [(token, reason)])."""
    out, step = [], None
    for line in open("%s/%s" % (work, name), encoding="utf-8"):
        line = line.rstrip("\n")
        m = re.match(r"step \d+: prefix (.*)$", line)
        if m:
            step = (m.group(1).split(" "), None, [])
            out.append(step)
            continue
        m = re.match(r"step \d+: chosen '(.*)' p=", line)
        if m:
            out[-1] = step = (step[0], m.group(1), step[2])
            continue
        m = re.match(r"\s+\d+\. (\S+)\s+[0-9.e+-]+", line)
        if m and step is not None:
            reason = REASON.search(line)
            step[2].append((m.group(1), reason.group(1) if reason else ""))
    return out


def check(name, run, processor, reason_of, seen_pattern):
    """Every candidate's reason against `processor` on the step's prefix:
    reason_of(prefix, token, changed) is the reason ted must give."""
    wrong, seen = [], 0
    for k, (prefix, chosen, candidates) in enumerate(steps(run)):
        input_ids = torch.tensor([[ids[t] for t in prefix]])
        scores = torch.rand(1, vocab) + 1.0  # positive, as logits may be
        after = processor(input_ids, scores.clone())
        if chosen is not None and after[0, ids[chosen]] == float("-inf"):
            wrong.append("step %d: chose %s, which transformers bans" % (k + 1, chosen))
        for token, reason in candidates:
            changed = bool(after[0, ids[token]] != scores[0, ids[token]])
            want = reason_of(prefix, token, changed)
            seen += bool(re.match(seen_pattern, want))
            if reason != want:
                wrong.append("step %d: %s: ted says %r, transformers %r" %
                             (k + 1, token, reason, want))
    if wrong:
        print("FAIL %s: %s" % (name, "; ".join(wrong[:4])))
    elif not seen:
        print("FAIL %s: no step has a candidate the rule changes: nothing compared" % name)
    else:
        print("ok %s (%d candidates changed, as transformers' processor changes them)" %
              (name, seen))


check("step-no-repeat-ngram", "ngram", NoRepeatNGramLogitsProcessor(2),
      lambda prefix, token, changed:
          "banned: would repeat the 2-gram '%s %s'" % (prefix[-1], token) if changed else "",
      "banned")
check("step-min-length", "min-length", MinLengthLogitsProcessor(9, eos),
      lambda prefix, token, changed:
          "banned: end of sentence before min_length 9" if changed else "",
      "banned")


def penalised(prefix, token, changed):
    if not changed:
        return ""
    first = prefix.index(token)
    return "penalised \u00d71.5: already " + (
        "in the history (the decoder's start token)" if first == 0
        else "generated at step %d" % first)


check("step-repetition-penalty", "penalty", RepetitionPenaltyLogitsProcessor(1.5), penalised, "penalised")


def bad_word(prefix, token, changed):
    if not changed:
        return ""
    if token == "mange":
        return "banned: a bad word (bad_words_ids)"
    return "banned: would complete the bad words '%s %s' (bad_words_ids)" % (prefix[-1], token)


check("step-bad-words", "bad-words",
      NoBadWordsLogitsProcessor([[ids["le"], ids["chat"]], [ids["mange"]]], eos), bad_word,
      "banned: would complete")

# Without a rule no candidate carries a reason, and the banned 2-gram's
# token is the model's own first choice: the rule changes the translation.
plain = steps("plain")
if any(reason for _, _, candidates in plain for _, reason in candidates):
    print("FAIL step-no-rule-no-reason: a candidate has a reason without any rule")
else:
    print("ok step-no-rule-no-reason")
ngram = steps("ngram")
chosen_plain = [c for _, c, _ in plain]
chosen_ngram = [c for _, c, _ in ngram]
banned_first = [k for k, (_, c, cands) in enumerate(ngram)
                if cands and cands[0][1].startswith("banned") and chosen_plain[k] == cands[0][0]]
if chosen_plain != chosen_ngram and banned_first:
    print("ok step-banned-choice-changes (step %d: '%s' banned, the model's choice without "
          "the rule)" % (banned_first[0] + 1, ngram[banned_first[0]][2][0][0]))
else:
    print("FAIL step-banned-choice-changes: %s / %s" % (chosen_plain, chosen_ngram))
EOF

# The rule's option is checked as ted translate checks it.
expect_error step-rule-bad-value "--repetition-penalty" \
    "$TED" step -m "$MODEL" --auto --repetition-penalty -1 "$SENTENCE"

# A model that forces the target language's code as its first token says so
# at step 1, where the code taken is the one asked for.
run "$work/lang" "$work/lang.err" "$TED" step -m models/multi-en-fr-es --auto --top 2 \
    --source-lang eng_Latn --target-lang spa_Latn "the cat ."
if [ "$status" -eq 0 ] && grep -q "^step 1: chosen 'spa_Latn'" "$work/lang" &&
    sed -n '/^step 1: chosen/{n;p;}' "$work/lang" | grep -qx "  forced: the target language's code first" &&
    [ "$(grep -c "^  forced: " "$work/lang")" -eq 1 ]; then
    ok step-forced-language-code
else
    fail step-forced-language-code "$(grep -A1 '^step 1: chosen' "$work/lang" | head -2) $(head -c 200 "$work/lang.err")"
fi
