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
