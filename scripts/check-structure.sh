#!/bin/sh
# Checks the mechanical rules of CONTRIBUTING.md on src/ and include/ted/, and
# prints each violation on one line:
#   - no function over 60 lines (ctags' line and end: the signature's first
#     line to the closing brace);
#   - no function definition with more than 7 parameters outside src/kernels/
#     (except the ALLOWED_PARAMS below, whose signature a library imposes);
#   - #include edges between the directories of src/ only along the ALLOWED
#     edges below, include/ted/ including nothing of src/;
#   - the front ends (the directories of src/ that are not LIBRARY: cli,
#     serve, frontend, document) include no header of libted's directories:
#     they reach the library through its public API, include/ted/ (the
#     utilities they share with it, errors, allocation, files, UTF-8, the
#     clock, in ted/util.h), and share among themselves what is theirs
#     alone in frontend/ (the decoding options as users spell them, output
#     files, the front ends' limits), except the PRIVATE_ALLOWED below;
#   - no include cycle between the directories, between modules (a module:
#     x.c with x.h; module A uses module B when A's source or header
#     includes B's header) or between headers;
#   - the option words of the decoding-option table (OPTION_WORDS below)
#     spelled as a C string only in the table's files (OPTION_TABLE).
# Exits 0 when there is nothing to print, 1 on a violation, 2 when it cannot
# check (Universal Ctags missing: scripts/install-deps.sh --test installs it).
#   scripts/check-structure.sh         from anywhere inside the repository
set -u
cd "$(dirname "$0")/.." || exit 2

MAX_LINES=60
MAX_PARAMS=7

# Directory -> the directories of src/ it may include from ("ted/", the
# public API of include/ted/, is open to all). The library points downward:
# core <- kernels <- layers <- model, io <- model, model <- learn (the trace
# of a decode, ted/learn.h). The front ends sit above the public API and
# include none of the library's directories: frontend (what the front ends
# share: decoding options as users spell them, output files, their
# limits), document (paragraphs and HTML pages as sentences), serve, cli.
ALLOWED='
core:
kernels:   core
layers:    kernels core
io:        core
model:     core kernels layers io
learn:     model layers kernels io core
frontend:
document:  frontend
serve:     frontend document
cli:       serve frontend document
'

# The directories of libted (include/ted/ is their public API); the others
# are the front ends, which reach libted through include/ted/ alone.
LIBRARY='core kernels layers io model learn'

# Private headers of libted that a front end still includes, as "FILE
# HEADER", each for the reason under it.
PRIVATE_ALLOWED='
'

# Include cycles between modules still open, as the line the check prints,
# each for the reason under it.
ALLOWED_CYCLES='
'

# The decoding-option table (src/model/options.c) and the config key table
# whose words it reads (src/io/config.c): the only files that spell the
# option words below as C strings. A front end spells an option through
# ted_option_key, ted_option_word and ted_option_words_text.
OPTION_TABLE='src/model/options.c src/io/config.c'
OPTION_WORDS='gnmt power never beam_size'

# Functions whose parameter list a library fixes, as "FILE FUNCTION".
ALLOWED_PARAMS='
src/serve/server.c handle
src/serve/fields.c visit_form
'
# handle: libmicrohttpd's MHD_AccessHandlerCallback (8 parameters).
# visit_form: libmicrohttpd's MHD_PostDataIterator (9 parameters).

if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
    echo "check-structure: Universal Ctags is needed (apt-get install universal-ctags)" >&2
    exit 2
fi

out=$(mktemp)
tmp=$(mktemp)
trap 'rm -f "$out" "$tmp"' EXIT

sources=$(find src -name '*.c' -o -name '*.cc' -o -name '*.h' | LC_ALL=C sort)

# ---- function length and parameter count -----------------------------------
# shellcheck disable=SC2086
ctags --fields=+neS --kinds-C=f --kinds-C++=f --output-format=u-ctags -o - $sources 2>/dev/null |
    awk -F '\t' -v max_lines="$MAX_LINES" -v max_params="$MAX_PARAMS" \
        -v allowed="$ALLOWED_PARAMS" '
    BEGIN {
        n = split(allowed, a, "\n")
        for (i = 1; i <= n; i++) if (a[i] != "") ok[a[i]] = 1
    }
    /^!/ { next }
    {
        name = $1; file = $2; line = end = sig = ""
        for (i = 4; i <= NF; i++) {
            if ($i ~ /^line:/) line = substr($i, 6)
            else if ($i ~ /^end:/) end = substr($i, 5)
            else if ($i ~ /^signature:/) sig = substr($i, 11)
        }
        if (line != "" && end != "" && end - line + 1 > max_lines)
            printf "%s:%d: function %s has %d lines (limit %d)\n",
                   file, line, name, end - line + 1, max_lines
        if (file ~ /^src\/kernels\// || sig == "" || ok[file " " name]) next
        # parameters: the commas at the outer level of the signature, plus one
        depth = 0; commas = 0; inner = 0
        for (i = 1; i <= length(sig); i++) {
            c = substr(sig, i, 1)
            if (c == "(") depth++
            else if (c == ")") depth--
            else if (c == "," && depth == 1) commas++
            else if (depth == 1 && c != " ") inner = 1
        }
        params = (sig == "(void)" || !inner) ? 0 : commas + 1
        if (params > max_params)
            printf "%s:%d: function %s has %d parameters (limit %d outside src/kernels)\n",
                   file, line, name, params, max_params
    }' | LC_ALL=C sort -t: -k1,1 -k2,2n >>"$out"

# ---- the include graph -----------------------------------------------------
# Every #include "X" of src/ and include/ted/, as "FILE LINE TARGET", the
# target resolved as the compiler does (-Iinclude -Isrc, or beside the file).
# shellcheck disable=SC2086
grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $sources include/ted/*.h |
    sed 's/^\([^:]*\):\([0-9]*\):[^"]*"\([^"]*\)".*/\1 \2 \3/' |
    while read -r file line target; do
        dir=${file%/*}
        if [ -e "$dir/$target" ]; then
            echo "$file $line $dir/$target"
        elif [ -e "src/$target" ]; then
            echo "$file $line src/$target"
        elif [ -e "include/$target" ]; then
            echo "$file $line include/$target"
        else
            echo "$file $line ?$target"
        fi
    done >"$tmp"

awk -v allowed="$ALLOWED" -v library_dirs="$LIBRARY" -v private_allowed="$PRIVATE_ALLOWED" '
    function area(path,   p) {  # src/DIR/... -> DIR, include/ted/... -> ted
        if (path ~ /^include\/ted\//) return "ted"
        split(path, p, "/")
        return p[1] == "src" ? p[2] : ""
    }
    BEGIN {
        n = split(library_dirs, l, " ")
        for (i = 1; i <= n; i++) library[l[i]] = 1
        n = split(private_allowed, l, "\n")
        for (i = 1; i <= n; i++) if (l[i] != "") private_ok[l[i]] = 1
        n = split(allowed, rows, "\n")
        for (i = 1; i <= n; i++) {
            if (split(rows[i], f, /[: ]+/) < 1 || f[1] == "") continue
            known[f[1]] = 1
            for (j = 2; j in f; j++) if (f[j] != "") may[f[1], f[j]] = 1
        }
    }
    {
        from = area($1); to = area($3)
        if ($3 ~ /^\?/) { printf "%s:%d: #include \"%s\" names no file of the tree\n", $1, $2, substr($3, 2); next }
        if (from == "ted") {
            if (to != "ted")
                printf "%s:%d: the public API includes %s (src/%s)\n", $1, $2, $3, to
            next
        }
        if (from == "" || to == "ted" || to == from) next
        if (!(from in known)) {
            if (!(from in unknown)) printf "src/%s/: a directory with no line in ALLOWED of scripts/check-structure.sh\n", from
            unknown[from] = 1
            next
        }
        if (private_ok[$1 " " substr($3, 5)]) next
        if (!(from in library) && (to in library))
            printf "%s:%d: the front end %s includes %s, a private header of libted (front ends use include/ted/)\n", $1, $2, from, $3
        else if (!may[from, to])
            printf "%s:%d: %s includes %s (%s -> %s is not an allowed edge)\n", $1, $2, from, $3, from, to
    }' "$tmp" >>"$out"

# Cycles, with tsort: between directories; between modules, where module A
# uses module B when A's source or header (src/x/a.c, src/x/a.h) includes
# B's header (a module: a file without its extension, src/cli/cli.c and
# src/cli/cli.h are src/cli/cli): document.c including parts.h while
# parts.h includes document.h is a cycle of two modules; and between
# headers.
report_cycles() {  # $1: what the nodes are; stdin: "FROM TO" pairs
    tsort 2>&1 >/dev/null | awk -v what="$1" '
        /input contains a loop/ { if (n) print line; line = "include cycle between " what ":"; n = 0; next }
        /^tsort: / { sub(/^tsort: /, ""); line = line " " $0; n++ }
        END { if (n) print line }'
}
{
    awk '$3 !~ /^\?/ {
            split($1, a, "/"); split($3, b, "/")
            if (a[1] == "src" && b[1] == "src" && a[2] != b[2]) print a[2], b[2]
        }' "$tmp" | sort -u | report_cycles "directories"
    awk '$3 !~ /^\?/ {
            from = $1; to = $3
            sub(/\.[a-z]+$/, "", from); sub(/\.[a-z]+$/, "", to)
            if (from != to) print from, to
        }' "$tmp" | sort -u | report_cycles "modules"
    awk '$3 !~ /^\?/ && $1 ~ /\.h$/ { print $1, $3 }' "$tmp" | sort -u |
        report_cycles "headers"
} | grep -v -x -F "$(printf '%s\n' "$ALLOWED_CYCLES" | sed '/^$/d')" >>"$out"

# ---- option words -----------------------------------------------------------
for word in $OPTION_WORDS; do
    # shellcheck disable=SC2086
    grep -n "\"$word\"" $sources include/ted/*.h | while IFS=: read -r file line text; do
        case " $OPTION_TABLE " in *" $file "*) continue ;; esac
        # in a comment (a line of one, or after /* or //): not spelled
        code=$(printf '%s\n' "$text" | sed 's@/[*/].*@@; s@^[[:space:]]*[*].*@@')
        case $code in *"\"$word\""*) ;; *) continue ;; esac
        echo "$file:$line: the option word \"$word\" is spelled outside the option table ($OPTION_TABLE)"
    done
done >>"$out"

if [ -s "$out" ]; then
    cat "$out"
    echo "check-structure: $(wc -l <"$out") violation(s)" >&2
    exit 1
fi
exit 0
