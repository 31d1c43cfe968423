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

# --- a staged install (DESTDIR), as a package build does it ------------------
stage=$(mktemp -d)
trap 'rm -rf "$prefix" "$stage"' EXIT
dest=$stage/root
usr=$dest/usr/local
if ! make --no-print-directory -s install SAN="$SAN" BUILD="$BUILD" PREFIX=/usr/local \
    DESTDIR="$dest" >"$stage/log" 2>&1; then
    echo "FAIL destdir-install: $(tail -n 5 "$stage/log")"
    exit 1
fi
for f in bin/ted lib/libted.a lib/pkgconfig/ted.pc share/man/man1/ted.1 \
    share/bash-completion/completions/ted include/ted/ted.h; do
    if [ -f "$usr/$f" ]; then echo "ok destdir-installed-$f"; else echo "FAIL destdir-installed-$f: missing"; fi
done
if grep -qx 'prefix=/usr/local' "$usr/lib/pkgconfig/ted.pc"; then
    echo "ok destdir-pc-prefix"
else
    echo "FAIL destdir-pc-prefix: $(grep '^prefix=' "$usr/lib/pkgconfig/ted.pc")"
fi

# The shared library: libted.so -> libted.so.MAJOR -> libted.so.MAJOR.MINOR.PATCH,
# whose soname is libted.so.MAJOR, the name a program linked with -lted
# records and loads.
version=$(sed -n 's/^#define TED_VERSION "\(.*\)"/\1/p' include/ted/ted.h)
major=${version%%.*}
if [ "$(readlink "$usr/lib/libted.so")" = "libted.so.$major" ] &&
    [ "$(readlink "$usr/lib/libted.so.$major")" = "libted.so.$version" ] &&
    [ -f "$usr/lib/libted.so.$version" ] && [ ! -L "$usr/lib/libted.so.$version" ]; then
    echo "ok shared-library-links"
else
    echo "FAIL shared-library-links: $(ls -l "$usr/lib" | tr '\n' ' ')"
fi
soname=$(readelf -d "$usr/lib/libted.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" = "libted.so.$major" ]; then
    echo "ok shared-library-soname"
else
    echo "FAIL shared-library-soname: '$soname', expected libted.so.$major"
fi
if cc $san_flags -I"$usr/include" examples/translate.c -L"$usr/lib" -lted -o "$stage/example" \
    2>"$stage/log" &&
    readelf -d "$stage/example" | grep -q "(NEEDED).*\[libted.so.$major\]"; then
    want=$("$BUILD/ted" translate -m models/toy-en-fr "the black cat eats the small bird .")
    got=$(LD_LIBRARY_PATH="$usr/lib" "$stage/example" models/toy-en-fr "the black cat eats the small bird ." 2>&1)
    loaded=$(LD_LIBRARY_PATH="$usr/lib" ldd "$stage/example" | sed -n 's/.*libted.so[^ ]* => \([^ ]*\).*/\1/p')
    if [ "$got" = "$want" ] && [ "$loaded" = "$usr/lib/libted.so.$major" ]; then
        echo "ok example-runs-on-shared-library"
    else
        echo "FAIL example-runs-on-shared-library: got '$got' (ted translate: '$want'), loads '$loaded'"
    fi
else
    echo "FAIL example-runs-on-shared-library: $(head -c 400 "$stage/log")"
fi

# ted(1): renders without a warning, and holds every command's help.
if ! command -v man >/dev/null 2>&1; then
    echo "FAIL man-page-renders: man is missing (scripts/install-deps.sh --test installs man-db)"
else
    MANWIDTH=100 man --warnings -l "$usr/share/man/man1/ted.1" >"$stage/man" 2>"$stage/man.err"
    missing=""
    for command in $("$BUILD/ted" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' | grep -vx version); do
        first=$("$BUILD/ted" "$command" --help | head -n 1 | sed 's/^ *//')
        grep -qF -- "$first" "$stage/man" || missing="$missing $command"
    done
    if [ ! -s "$stage/man.err" ] && [ -z "$missing" ] && grep -q '^NAME' "$stage/man" &&
        grep -qF -- '--force' "$stage/man"; then
        echo "ok man-page-renders"
    else
        echo "FAIL man-page-renders: missing:$missing; $(head -c 300 "$stage/man.err")"
    fi
fi

# The bash completion: sources in bash, completes the commands and a
# command's options.
complete_words() {  # complete_words WORD...: what completing the last word offers
    PATH="$usr/bin:$PATH" bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _ted; echo "${COMPREPLY[*]}"' sh "$usr/share/bash-completion/completions/ted" "$@" 2>&1
}
if [ "$(complete_words ted tr)" = translate ] && [ "$(complete_words ted sho)" = shortlist ] &&
    [ "$(complete_words ted shortlist --fo)" = --force ] &&
    complete_words ted "" | grep -qw attention; then
    echo "ok bash-completion"
else
    echo "FAIL bash-completion: 'ted tr' -> '$(complete_words ted tr)', 'ted shortlist --fo' -> '$(complete_words ted shortlist --fo)'"
fi

# make uninstall removes every file install wrote, and nothing else.
touch "$usr/lib/other-library.so"
if make --no-print-directory -s uninstall SAN="$SAN" BUILD="$BUILD" PREFIX=/usr/local \
    DESTDIR="$dest" >"$stage/log" 2>&1; then
    left=$(find "$dest" ! -type d ! -name other-library.so | head -n 5 | tr '\n' ' ')
    if [ -z "$left" ] && [ -f "$usr/lib/other-library.so" ] && [ ! -d "$usr/include/ted" ]; then
        echo "ok uninstall-removes-everything"
    else
        echo "FAIL uninstall-removes-everything: left $left"
    fi
else
    echo "FAIL uninstall-removes-everything: $(tail -n 5 "$stage/log")"
fi
