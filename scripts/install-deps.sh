#!/bin/sh
# Installs the Debian packages ted needs to build, test and run its Python
# tools, when any is missing. Needs root (or sudo) only when it installs.
set -e
packages="build-essential pkg-config libopenblas-dev libyaml-dev libcjson-dev libcriterion-dev
python3 python3-numpy python3-torch tmux chromium fonts-liberation valgrind"
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $missing
