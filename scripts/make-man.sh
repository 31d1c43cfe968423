#!/bin/sh
# Writes ted(1) on standard output, from the program's own help: `ted --help`
# for the synopsis and the list of commands, then each command's
# `ted COMMAND --help` as a section of its own, so the page says what the
# program says.
#   scripts/make-man.sh build/ted >build/ted.1
set -e
ted=${1:?usage: scripts/make-man.sh PATH_TO_TED}
version=$("$ted" --version | sed -n 's/^ted //p')
commands=$("$ted" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' | grep -vx version)

# roff text: a backslash as \e, a hyphen as \- (an ASCII minus, as options
# are typed), a line starting with . or ' escaped.
roff() {
    sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

cat <<EOF
.TH TED 1 "" "ted $version" "User Commands"
.SH NAME
ted \\- translate with, inspect and learn from encoder\\-decoder Transformers
.SH SYNOPSIS
.B ted
.I COMMAND
.RI [ OPTIONS ]
.br
.B ted \\-\\-help
|
.B ted \\-\\-version
.SH DESCRIPTION
EOF
echo ".nf"
"$ted" --help | roff
echo ".fi"
echo ".SH COMMANDS"
for command in $commands; do
    echo ".SS ted $command"
    echo ".nf"
    "$ted" "$command" --help | roff
    echo ".fi"
done
cat <<EOF
.SH EXIT STATUS
0 on success; 1 after an error, which one line on standard error names
(the file, option or field and what is wrong).
.SH SEE ALSO
The documentation in the source tree: README.md and docs/.
EOF
