#!/bin/sh
# HTML pages split as a browser splits them (comments, bogus comments,
# doctypes and CDATA anywhere in a page stay markup; nothing that was not
# text reaches the model; no element or attribute appears), judged by
# html5lib: tests/cli/html_markup.py, over BUILD/document-check and the
# shipped model models/en-fr.
BUILD=${BUILD:-build}
TED=${TED:-$BUILD/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
export BUILD TED
if ! "$PYTHON" -c 'import html5lib' 2>/dev/null; then
    echo "FAIL html-markup: $PYTHON has no html5lib (Debian's python3-html5lib)"
    exit 1
fi
if [ ! -x "$BUILD/document-check" ]; then
    echo "FAIL html-markup: $BUILD/document-check is not built (make $BUILD/document-check)"
    exit 1
fi
exec "$PYTHON" tests/cli/html_markup.py
