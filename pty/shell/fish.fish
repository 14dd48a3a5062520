# mcp-harness shell integration for fish: OSC 133 marks (A prompt start, B input start,
# C output start, D;status command end) and OSC 7 (the directory), which the server reads
# and removes from the output. Loaded with --init-command, after the user's
# configuration; fish's events fire at every prompt whatever the prompt function is.
# Every mark carries the session's nonce (mh=...), kept in a global variable that is not
# exported and taken out of the environment: a mark a command prints is its output, not a
# prompt or an exit status. A fish the server did not start (no nonce) goes without marks.
set -g __mh_nonce $MCP_HARNESS_NONCE
set -e MCP_HARNESS_NONCE
if test -z "$__mh_nonce"
    exit 0
end
function __mh_postexec --on-event fish_postexec
    set -l __mh_status $status
    printf '\e]133;D;mh=%s;%s\a' $__mh_nonce $__mh_status
end

# C carries the command line, percent-encoded (kitty's cmdline_url).
function __mh_preexec --on-event fish_preexec
    printf '\e]133;C;mh=%s;cmdline_url=%s\a' $__mh_nonce (string escape --style=url -- $argv[1])
end

function __mh_prompt --on-event fish_prompt
    printf '\e]7;mh=%s;file://%s%s\a' $__mh_nonce $hostname (string escape --style=url -- $PWD)
    printf '\e]133;A;mh=%s\a' $__mh_nonce
    __mh_wrap_prompt
end

# B goes at the end of the prompt: fish_prompt is wrapped, and wrapped again whenever a
# theme or the user replaces it.
function __mh_wrap_prompt
    if not functions -q fish_prompt
        return
    end
    if string match -q '*__mh_user_prompt*' -- (functions fish_prompt | string collect)
        return
    end
    functions -e __mh_user_prompt
    functions -c fish_prompt __mh_user_prompt
    function fish_prompt
        __mh_user_prompt
        printf '\e]133;B;mh=%s\a' $__mh_nonce
    end
end
__mh_wrap_prompt
