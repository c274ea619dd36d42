# bash completion for cordon. The flags come from `cordon COMMAND --help` itself, so they never drift.
_cordon() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local commands="run proxy check policy connect doctor"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    local command=${COMP_WORDS[1]}
    case " $commands " in *" $command "*) ;; *) return ;; esac
    local word
    for word in "${COMP_WORDS[@]:2:COMP_CWORD-2}"; do
        # After `cordon run ... --` the words belong to the jailed command.
        if [ "$command" = run ] && [ "$word" = -- ]; then
            COMPREPLY=($(compgen -c -- "$cur"))
            return
        fi
    done
    case "$prev" in
        --settings | --audit-log | --allow-write | --deny-write | --allow-read | --deny-read)
            COMPREPLY=($(compgen -f -- "$cur"))
            return
            ;;
        --managed-dir)
            COMPREPLY=($(compgen -d -- "$cur"))
            return
            ;;
    esac
    if [[ "$cur" == -* ]]; then
        local flags
        flags=$("${COMP_WORDS[0]}" "$command" --help 2>/dev/null | grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z0-9-]*' |
            tr -d ' ,' | sort -u)
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    fi
}
complete -o default -F _cordon cordon
