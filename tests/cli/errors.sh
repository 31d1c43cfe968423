#!/bin/sh
# The ted program on a bad command line: one clear message on stderr naming
# what is wrong, exit status 1, never a crash; and every command's --help.
# Bad model files and bad input text: tests/cli/bad_inputs.sh. Each check
# prints "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

good=tests/data/tiny-model


# --- the command line (bad files and bad input text: tests/cli/bad_inputs.sh) ---
expect_error missing-model-dir "no-such-dir/config\.yaml" "$TED" translate -m "$work/no-such-dir" "s1"
expect_error no-model-option "-m DIR" "$TED" translate "s1"
expect_error unknown-option "unknown option '--frobnicate'" "$TED" translate --frobnicate -m "$good"
expect_error bad-number "--batch-size: 'zero' is not a whole number" \
    "$TED" translate -m "$good" --batch-size zero "s1"
expect_error unknown-command "unknown command 'frobnicate'" "$TED" frobnicate
expect_error logits-missing-target "--target" "$TED" logits -m "$good" --source "s1"

for command in translate logits info; do
    if "$TED" "$command" --help | grep -q "usage: ted $command"; then
        echo "ok help-$command"
    else
        echo "FAIL help-$command: no usage text"
    fi
done

# Option values a float cannot hold: the value as typed and the option's name,
# not "inf" or "0".
toy=models/toy-en-fr
expect_error float-overflow "--temperature: '1e39' is too large for a float" \
    "$TED" translate -m "$toy" --sample --temperature 1e39 "the cat ."
expect_error float-underflow "--top-p: '1e-50' is too small for a float" \
    "$TED" translate -m "$toy" --sample --top-p 1e-50 "the cat ."
expect_error double-overflow "--length-penalty: '1e999' is not a number" \
    "$TED" translate -m "$toy" --beam 2 --length-penalty 1e999 "the cat ."

# ted logits names the option at fault, and reports unknown words of both.
expect_error logits-bad-source "logits: --source: input byte offset 4: invalid UTF-8" \
    "$TED" logits -m "$toy" --source "$(printf 'the \377')" --target "le chat"
expect_error logits-bad-target "logits: --target: input byte offset 3: invalid UTF-8" \
    "$TED" logits -m "$toy" --source "the cat" --target "$(printf 'le \377')"
run "$work/out" "$work/err" "$TED" logits -m "$toy" --source "the zebra cat" --target "le zèbre chat"
if [ "$status" -eq 0 ] && [ "$(wc -l <"$work/out")" -eq 4 ] && [ "$(wc -l <"$work/err")" -eq 2 ] &&
    grep -q "^ted: --source: 1 word not in the vocabulary, fed as <unk>: 'zebra'$" "$work/err" &&
    grep -q "^ted: --target: 1 word not in the vocabulary, fed as <unk>: 'zèbre'$" "$work/err"; then
    ok logits-unknown-words-reported
else
    fail logits-unknown-words-reported "exit $status: $(head -c 300 "$work/err")"
fi
