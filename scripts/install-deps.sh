#!/bin/sh
# Installs the Debian packages ted needs, when any is missing. Needs root (or
# sudo) only when it installs.
#   scripts/install-deps.sh          what building and running ted needs
#   scripts/install-deps.sh --test   also what the tests and make bench need: Criterion, the
#                                    Python side (PyTorch, NumPy, SentencePiece,
#                                    venv for the test-only packages of
#                                    tests/requirements.txt), tmux, Chromium,
#                                    valgrind, qemu-user (kernel choice on emulated CPUs),
#                                    OpenBLAS (make bench's sgemm yardstick), Universal
#                                    Ctags (scripts/check-structure.sh), matplotlib,
#                                    nbconvert and ipykernel (the Python notebook),
#                                    html5lib (the DOM of tests/serve/test_documents.py),
#                                    nginx and GNU parallel (tests/deploy)
set -e
packages="build-essential pkg-config libyaml-dev libcjson-dev libsentencepiece-dev
libmicrohttpd-dev libicu-dev libxml2-dev libexttextcat-dev libexttextcat-data"
if [ "${1:-}" = "--test" ]; then
    packages="$packages libcriterion-dev python3 python3-numpy python3-torch python3-sentencepiece
python3-venv python3-websocket tmux chromium fonts-liberation valgrind qemu-user
libopenblas-dev universal-ctags python3-matplotlib jupyter-nbconvert python3-ipykernel
python3-html5lib nginx parallel"
fi
# man-db: man -l renders the installed ted(1) in tests/cli/install.sh
[ "${1:-}" = "--test" ] && packages="$packages man-db"
# default-jre-headless: the Java of Spark's local cluster (tests/distributed)
[ "${1:-}" = "--test" ] && packages="$packages default-jre-headless"
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
