#!/bin/sh
# make install into a temporary prefix, then build the API example against
# the installed headers, library and pkg-config file, as a user would.
BUILD=${BUILD:-build}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
san_flags=""
[ "$SAN" = 1 ] && san_flags="-fsanitize=address,undefined"
if ! make --no-print-directory -s install SAN="$SAN" BUILD="$BUILD" PREFIX="$prefix" >"$prefix/log" 2>&1; then
    echo "FAIL install: $(tail -n 5 "$prefix/log")"
    exit 1
fi
for f in bin/ted lib/libted.a include/ted/ted.h include/ted/config.h lib/pkgconfig/ted.pc; do
    if [ -f "$prefix/$f" ]; then echo "ok installed-$f"; else echo "FAIL installed-$f: missing"; fi
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
if cc $san_flags examples/translate.c $(pkg-config --cflags --libs ted) -o "$prefix/example" 2>"$prefix/log"; then
    echo "ok example-builds-with-pkg-config"
else
    echo "FAIL example-builds-with-pkg-config: $(head -c 400 "$prefix/log")"
    exit 1
fi
if "$prefix/bin/ted" --version | grep -q '^ted [0-9]'; then
    echo "ok installed-ted-runs"
else
    echo "FAIL installed-ted-runs"
fi
