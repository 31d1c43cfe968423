#!/bin/sh
# ted shortlist's input and output. The output (-o FILE) is never one of
# the inputs (the corpus, a file of the model), reached by whatever path,
# and an existing file is replaced only with --force; each refusal leaves
# the file byte for byte as it was (compared with a copy made before). The
# corpora are read as ted translate reads its input: a NUL byte is refused
# with one message naming the file and the line, and nothing is written.
TED=${TED:-build/ted}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

cp -r models/toy-en-fr "$work/model"
model=$work/model
head -n 40 models/toy-en-fr/test.en >"$work/corpus.en"
head -n 40 models/toy-en-fr/test.fr >"$work/corpus.fr"
cp "$work/corpus.en" "$work/corpus.en.orig"
cp "$model/config.yaml" "$work/config.yaml.orig"
cp "$model/vocab.tgt" "$work/vocab.tgt.orig"

# unchanged NAME FILE ORIGINAL: FILE still holds ORIGINAL's bytes.
unchanged() {
    if cmp -s "$2" "$3"; then ok "$1"; else fail "$1" "$2 changed"; fi
}

# no_temporaries NAME DIR: no FILE.XXXXXX left next to the output.
no_temporaries() {
    left=$(find "$2" -maxdepth 1 -name '*.??????' | grep -v '\.orig$' | head -n 3)
    if [ -z "$left" ]; then ok "$1"; else fail "$1" "left behind: $left"; fi
}

shortlist() {
    "$TED" shortlist -m "$model" --source "$work/corpus.en" --target "$work/corpus.fr" "$@"
}

# Over an input: refused, whatever --force says.
expect_error output-is-source "^ted: shortlist: -o .*corpus.en is the input .*corpus.en" \
    shortlist -o "$work/corpus.en"
unchanged output-is-source-kept "$work/corpus.en" "$work/corpus.en.orig"
expect_error output-is-source-forced "is the input" shortlist -o "$work/corpus.en" --force
unchanged output-is-source-forced-kept "$work/corpus.en" "$work/corpus.en.orig"
ln -s corpus.en "$work/link.en"
expect_error output-links-to-source "is the input" shortlist -o "$work/link.en" --force
unchanged output-links-to-source-kept "$work/corpus.en" "$work/corpus.en.orig"
expect_error output-is-config "^ted: shortlist: -o .*model/config.yaml is the input" \
    shortlist -o "$model/config.yaml" --force
unchanged output-is-config-kept "$model/config.yaml" "$work/config.yaml.orig"
expect_error output-is-vocabulary "is the input" shortlist -o "$model/./vocab.tgt" --force
unchanged output-is-vocabulary-kept "$model/vocab.tgt" "$work/vocab.tgt.orig"
if "$TED" translate -m "$model" "the cat ." >/dev/null 2>&1; then
    ok model-still-loads
else
    fail model-still-loads "ted translate -m $model fails after the refusals"
fi
expect_error output-is-directory "is a directory" shortlist -o "$model"

# An existing file: refused without --force, replaced with it.
printf 'keep me\n' >"$work/existing"
cp "$work/existing" "$work/existing.orig"
expect_error output-exists "^ted: shortlist: -o .*existing exists: give a new file, or --force" \
    shortlist -o "$work/existing"
unchanged output-exists-kept "$work/existing" "$work/existing.orig"
run "$work/out" "$work/err" shortlist -o "$work/existing" --force
if [ "$status" -eq 0 ] && [ "$(head -n 1 "$work/existing")" = "ted-shortlist 1" ]; then
    ok output-exists-forced
else
    fail output-exists-forced "exit $status, $(head -c 200 "$work/err")"
fi
run "$work/out" "$work/err" shortlist -o "$work/new"
if [ "$status" -eq 0 ] && [ "$(head -n 1 "$work/new")" = "ted-shortlist 1" ]; then
    ok output-new
else
    fail output-new "exit $status, $(head -c 200 "$work/err")"
fi
no_temporaries output-no-temporaries "$work"

# A NUL byte in either corpus: one message naming the file and the line.
printf 'the cat .\nthe \000 bird .\nthe dog .\n' >"$work/nul.en"
printf 'le chat .\nl oiseau .\nle chien .\n' >"$work/nul.fr"
expect_error source-nul-byte "^ted: $work/nul.en: line 2: contains a NUL byte$" \
    "$TED" shortlist -m "$model" --source "$work/nul.en" -o "$work/nul.out"
expect_error target-nul-byte "^ted: $work/nul.en: line 2: contains a NUL byte$" \
    "$TED" shortlist -m "$model" --source "$work/nul.fr" --target "$work/nul.en" \
    -o "$work/nul.out"
if [ -e "$work/nul.out" ]; then
    fail nul-byte-nothing-written "$work/nul.out was written"
else
    ok nul-byte-nothing-written
fi
