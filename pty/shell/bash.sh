# mcp-harness shell integration for bash (4.4 or later): OSC 133 marks (A prompt start,
# B input start, C output start, D;status command end) and OSC 7 (the directory), which
# the server reads and removes from the output. Sourced once, after the user's own rc
# files, so it sees the final PROMPT_COMMAND, PS0 and PS1, and re-armed at every prompt,
# so a hook that rewrites them later does not strip it.
#
# Every mark carries the session's nonce (mh=...), which the server passes in
# MCP_HARNESS_NONCE: it is kept in a shell variable that is not exported and taken out of
# the environment, so the commands the shell runs do not inherit it, and a mark they print
# is their output, not a prompt or an exit status.
if [[ -n "${__mh_installed-}" ]]; then
	return 0
fi
# An rc file may leave xtrace on (whose trace would print the nonce and the marks as
# text) or allexport (which would export what holds the nonce): both are off while this
# file runs, and in our hooks, and put back after.
__mh_set=
[[ $- != *a* ]] || __mh_set+=a
[[ $- != *x* ]] || __mh_set+=x
set +ax
if [[ -n ${MCP_HARNESS_NONCE+x} ]]; then
	__mh_nonce=$MCP_HARNESS_NONCE
	unset MCP_HARNESS_NONCE
fi
# PS0 and ${var@a} came with bash 4.4; an older bash (macOS's 3.2) goes without marks, and
# so does a bash the server did not start (no nonce), or one whose PROMPT_COMMAND is
# readonly: without its hook no prompt could be marked, and the server then sees a shell
# without integration.
if ((BASH_VERSINFO[0] < 4 || BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 4)) ||
	[[ -z ${__mh_nonce-} || ${PROMPT_COMMAND@a} == *r* ]]; then
	unset __mh_nonce
	[[ -z $__mh_set ]] || set "-$__mh_set"
	unset __mh_set
	return 0
fi
export -n __mh_nonce # set -a in an rc file would export it
__mh_installed=1
__mh_dir=${BASH_SOURCE[0]%/*}
# The marks that live in PS0 (C) and in PS1 and PS2 (B, in \[ \] so readline does not
# count them as printing characters; PS0 takes none, bash prints them literally there).
__mh_c=$'\e]133;C;mh='$__mh_nonce$'\a'
__mh_b='\[\e]133;B;mh='$__mh_nonce'\a\]'

# Where PROMPT_COMMAND loaded this file (bash started with --norc, a login shell), the
# loader must go: it is not the user's, and children must not inherit it.
if [[ -n ${PROMPT_COMMAND+x} && ${PROMPT_COMMAND@a} != *a* ]]; then
	PROMPT_COMMAND=${PROMPT_COMMAND//"__mh_load=1 . '$__mh_dir/bash.sh'"/}
	export -n PROMPT_COMMAND
fi

# Every hook starts with local - and set +ax (see above); local - restores the options
# when it returns. Bash still traces the line that calls a hook (++ __mh_precmd), which
# holds neither a mark nor the nonce.
__mh_cwd() {
	local -
	set +ax
	# Percent-encode what would end or break the escape sequence, and % itself.
	local p=${PWD//%/%25}
	p=${p//$'\a'/%07}
	p=${p//$'\e'/%1B}
	p=${p//$'\n'/%0A}
	builtin printf '\e]7;mh=%s;file://%s%s\a' "$__mh_nonce" "${HOSTNAME-}" "$p"
}

# __mh_precmd runs first at every prompt. $? must be read on its first line: anything
# run before it (another hook, even a local without a value) would replace the status.
# It returns the status again, so hooks after it (a prompt that shows it) still see it.
__mh_precmd() {
	local - __mh_status=$?
	set +ax
	builtin printf '\e]133;D;mh=%s;%s\a' "$__mh_nonce" "$__mh_status"
	__mh_cwd
	builtin printf '\e]133;A;mh=%s\a' "$__mh_nonce"
	__mh_arm
	return "$__mh_status"
}

# __mh_end runs last at every prompt, after any hook that rewrites PS0, PS1 or
# PROMPT_COMMAND, and puts the marks and the hooks back: a hook that replaced
# PROMPT_COMMAND at this prompt would otherwise leave the next one unmarked. C goes in
# PS0, which bash prints after it reads a command line and before it runs it (a DEBUG
# trap would fire for every simple command instead); B ends PS1, and PS2, so a
# continuation line is told from a prompt. The prompt variables hold the nonce, so they
# are not exported.
__mh_end() {
	local - __mh_status=$? __mh_ps
	set +ax
	__mh_arm
	# Variables that may be unset are read with a default: an rc may set -u.
	__mh_ps=${PS0-}
	if [[ $__mh_ps != *"$__mh_c" ]]; then
		PS0=${__mh_ps//"$__mh_c"/}$__mh_c
	fi
	__mh_ps=${PS1-}
	if [[ $__mh_ps != *"$__mh_b" ]]; then
		PS1=${__mh_ps//"$__mh_b"/}$__mh_b
	fi
	__mh_ps=${PS2-> }
	if [[ $__mh_ps != *"$__mh_b" ]]; then
		PS2=${__mh_ps//"$__mh_b"/}$__mh_b
	fi
	export -n PS0 PS1 PS2
	return "$__mh_status"
}

# __mh_arm keeps __mh_precmd first and __mh_end last in PROMPT_COMMAND (a string, or an
# array since bash 5.1), whatever an rc file or a framework such as bash-preexec did to it.
# A PROMPT_COMMAND made readonly meanwhile cannot be mended (the server then sees prompts
# without marks).
__mh_arm() {
	local -
	set +ax
	if [[ ${PROMPT_COMMAND@a} == *r* ]]; then
		return 0
	fi
	if [[ -n ${PROMPT_COMMAND+x} && ${PROMPT_COMMAND@a} == *a* ]]; then
		if [[ ${PROMPT_COMMAND[0]} != __mh_precmd || ${PROMPT_COMMAND[-1]} != __mh_end ]]; then
			# An element may be the string form (bash-preexec's PROMPT_COMMAND=(
			# "${PROMPT_COMMAND[@]}" ...) makes one): our hooks come out of it too.
			local __mh_pc=() __mh_e
			for __mh_e in "${PROMPT_COMMAND[@]}"; do
				[[ $__mh_e != __mh_precmd && $__mh_e != __mh_end ]] || continue
				__mh_e=${__mh_e//$'__mh_precmd\n'/}
				__mh_e=${__mh_e//$'\n__mh_end'/}
				[[ -z $__mh_e ]] || __mh_pc+=("$__mh_e")
			done
			PROMPT_COMMAND=(__mh_precmd "${__mh_pc[@]}" __mh_end)
		fi
		return 0
	fi
	if [[ ${PROMPT_COMMAND-} != $'__mh_precmd\n'*$'\n__mh_end' ]]; then
		local __mh_pc=${PROMPT_COMMAND-}
		__mh_pc=${__mh_pc//$'__mh_precmd\n'/}
		__mh_pc=${__mh_pc//$'\n__mh_end'/}
		PROMPT_COMMAND=$'__mh_precmd\n'"$__mh_pc"$'\n__mh_end'
	fi
}

__mh_arm
__mh_end
if [[ -n "${__mh_load-}" ]]; then
	# Loaded from PROMPT_COMMAND at the first prompt, after the rest of it ran: this
	# prompt's marks are due now.
	# The command that started this shell (an exec that handed the integration on)
	# succeeded: its end is this prompt's, with status 0, as at zsh's and dash's first
	# prompt.
	unset __mh_load
	builtin printf '\e]133;D;mh=%s;0\a' "$__mh_nonce"
	__mh_cwd
	builtin printf '\e]133;A;mh=%s\a' "$__mh_nonce"
fi
[[ -z $__mh_set ]] || set "-$__mh_set"
unset __mh_set
