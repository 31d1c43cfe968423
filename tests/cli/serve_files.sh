#!/bin/sh
# ted serve's files at start (--api-keys FILE): a FIFO, a device, a file
# over the size limit or one holding a NUL byte is refused at once with one
# message naming the file, exit status 1; never a hang (a FIFO with no
# writer blocks open(), /dev/zero never ends) in a process that SIGTERM
# and SIGINT no longer stop. Each check prints "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh
LIMIT=20
MODEL=models/toy-en-fr

# `timeout` sends SIGTERM, then SIGKILL 2 s later: a server that ignores
# SIGTERM still ends, with status 137, which expect_error reports.
serve_keys() {  # $1: the keys file
    timeout -k 2 10 "$TED" serve -m "$MODEL" --port 0 --api-keys "$1"
}

mkfifo "$work/fifo"
expect_error keys-fifo "--api-keys: $work/fifo: not a regular file" serve_keys "$work/fifo"
expect_error keys-device '--api-keys: /dev/zero: not a regular file' serve_keys /dev/zero
# 17 MiB without a byte on disk: a file with a hole
truncate -s 17M "$work/large"
expect_error keys-too-large "--api-keys: $work/large: 17825792 bytes is larger than 16 MiB" \
    serve_keys "$work/large"
printf 'good-key\nbad\000key 60\n' >"$work/nul"
expect_error keys-nul "--api-keys: $work/nul:2: a NUL byte" serve_keys "$work/nul"
printf '# no key here\n\n' >"$work/empty"
expect_error keys-none "--api-keys: $work/empty: no key in the file" serve_keys "$work/empty"
