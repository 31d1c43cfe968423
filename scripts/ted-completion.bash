# Bash completion of ted (make install puts it in
# PREFIX/share/bash-completion/completions/ted). The commands and each
# command's options are read from the program's own --help, so they are
# those of the ted being completed.
_ted() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local ted=${COMP_WORDS[0]} words
    if [ "$COMP_CWORD" -eq 1 ]; then
        words=$("$ted" --help 2>/dev/null | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
        mapfile -t COMPREPLY < <(compgen -W "$words --help --version" -- "$cur")
        return
    fi
    case $prev in
    -m | --model)
        mapfile -t COMPREPLY < <(compgen -d -- "$cur")
        return
        ;;
    esac
    if [[ $cur == -* ]]; then
        words=$("$ted" "${COMP_WORDS[1]}" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' |
            sort -u)
        mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
        return
    fi
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -o filenames -F _ted ted
