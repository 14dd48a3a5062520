# mcp-harness shell integration for zsh: OSC 133 marks (A prompt start, B input start,
# C output start, D;status command end) and OSC 7 (the directory), which the server reads
# and removes from the output. A and D are printed by a precmd hook rather than put in
# the prompt, so a prompt that zsh redraws (a transient prompt, vi mode, a resize) does
# not repeat them; only B is in PS1 (and PS2, so a continuation line is told from a
# prompt). Every mark carries the session's nonce (mh=...), read by our .zshenv into a
# variable that is not exported: a mark a command prints is its output, not a prompt or
# an exit status. A zsh the server did not start (no nonce) goes without marks.
#
# An rc file may leave xtrace on (whose trace would print the nonce and the marks as
# text) or allexport (which would export what holds the nonce): this file runs in an
# anonymous function with both off, and so does every hook.
() {
setopt localoptions noxtrace noallexport
[[ -n $__mh_nonce ]] || return 0
typeset -g +x __mh_nonce
typeset -g __mh_b=$'%{\e]133;B;mh='$__mh_nonce$'\a%}'
# The first prompt ends the command that started this shell (an exec that handed the
# integration on), which succeeded: it says 0, not the status of the last line of the
# startup files.
typeset -g __mh_fresh=1

# __mh_precmd runs first among the precmd hooks; $? is read on its first line.
__mh_precmd() {
	local __mh_status=$? __mh_code=$?
	setopt localoptions noxtrace noallexport
	if (( ${+__mh_fresh} )); then
		__mh_code=0
		unset __mh_fresh
	fi
	builtin printf '\e]133;D;mh=%s;%s\a' $__mh_nonce $__mh_code
	__mh_handback
	local p=${PWD//\%/%25}
	p=${p//$'\a'/%07}
	p=${p//$'\e'/%1B}
	p=${p//$'\n'/%0A}
	builtin printf '\e]7;mh=%s;file://%s%s\a' $__mh_nonce $HOST $p
	builtin printf '\e]133;A;mh=%s\a' $__mh_nonce
	# Rearm the preexec hook here, and the precmd hooks in preexec: a hook list is never
	# changed while zsh walks it.
	preexec_functions=(${preexec_functions:#__mh_preexec} __mh_preexec)
	return $__mh_status
}

# __mh_prompt_end runs last among the precmd hooks, after any theme that rewrote PS1. The
# prompts hold the nonce, so they are not exported (zsh exports a PS1 it was given in the
# environment).
__mh_prompt_end() {
	local __mh_status=$?
	setopt localoptions noxtrace noallexport
	if [[ $PS1 != *"$__mh_b" ]]; then
		PS1=${PS1//"$__mh_b"/}$__mh_b
	fi
	if [[ $PS2 != *"$__mh_b" ]]; then
		PS2=${PS2//"$__mh_b"/}$__mh_b
	fi
	typeset -g +x PS1 PS2
	return $__mh_status
}

# __mh_preexec runs last among the preexec hooks, right before the command's output. C
# carries the command line as typed ($1), with what would end the sequence, and %,
# percent-encoded (kitty's cmdline_url).
__mh_preexec() {
	setopt localoptions noxtrace noallexport
	local c=${1//\%/%25}
	c=${c//$'\a'/%07}
	c=${c//$'\e'/%1B}
	c=${c//$'\n'/%0A}
	c=${c//$'\r'/%0D}
	__mh_handoff "$1"
	builtin printf '\e]133;C;mh=%s;cmdline_url=%s\a' $__mh_nonce "$c"
	precmd_functions=(__mh_precmd ${precmd_functions:#(__mh_precmd|__mh_prompt_end)} __mh_prompt_end)
}

# __mh_handoff: a command line that execs an interactive shell the server integrates
# with replaces this one, and the new shell is handed what it needs to integrate in turn:
# the nonce and the way to our scripts, in the environment, for that command alone. Only
# where the new shell takes them out before anything of the user's runs: zsh without -f
# (our .zshenv), bash with --norc and no login (PROMPT_COMMAND loads bash.sh at its first
# prompt), sh, dash and ash without login ($ENV). If the exec fails, __mh_handback takes
# them back at the next prompt.
__mh_handoff() {
	setopt localoptions noxtrace noallexport
	local -a w=(${(z)1})
	[[ $w[1] == exec && $#w -ge 2 ]] || return 0
	local sh=${w[2]:t} a norc= dir=${__mh_zdotdir:h}
	for a in $w[3,-1]; do
		case $a in
		--norc) norc=1 ;;
		--command* | --login | --no-rcs | --norcs) return 0 ;;
		--*) ;;
		[-+]*[clf]*) return 0 ;; # a command, a login shell, or zsh's no startup files
		[-+]*) ;;
		*) return 0 ;; # a script, or an option's value: not worth guessing
		esac
	done
	typeset -ga __mh_handed=()
	case $sh in
	zsh)
		(( ${+ZDOTDIR} )) && __mh_hand MCP_HARNESS_ZDOTDIR $ZDOTDIR
		__mh_hand ZDOTDIR $__mh_zdotdir
		;;
	bash)
		[[ -n $norc ]] || return 0
		__mh_hand PROMPT_COMMAND "__mh_load=1 . '$dir/bash.sh'"
		;;
	sh | dash | ash)
		(( ${+ENV} )) && __mh_hand MCP_HARNESS_ENV $ENV
		__mh_hand ENV $dir/sh.sh
		;;
	*) return 0 ;;
	esac
	__mh_hand MCP_HARNESS_NONCE $__mh_nonce
}

# __mh_hand exports name=value for the command about to run, noting what to put back.
__mh_hand() {
	setopt localoptions noxtrace noallexport
	if (( ${+parameters[$1]} )); then
		__mh_handed+=("$1" 1 "${(P)1}" "$parameters[$1]")
	else
		__mh_handed+=("$1" 0 '' '')
	fi
	typeset -gx $1=$2
}

# __mh_handback puts back what __mh_handoff changed, once the command has returned (the
# exec failed).
__mh_handback() {
	setopt localoptions noxtrace noallexport
	(( ${#__mh_handed} )) || return 0
	local i
	for ((i = 1; i < ${#__mh_handed}; i += 4)); do
		unset $__mh_handed[i]
		if (( $__mh_handed[i+1] )); then
			typeset -g $__mh_handed[i]=$__mh_handed[i+2]
			[[ $__mh_handed[i+3] == *export* ]] && export $__mh_handed[i]
		fi
	done
	__mh_handed=()
}

precmd_functions=(__mh_precmd ${precmd_functions:#(__mh_precmd|__mh_prompt_end)} __mh_prompt_end)
preexec_functions=(${preexec_functions:#__mh_preexec} __mh_preexec)
}
