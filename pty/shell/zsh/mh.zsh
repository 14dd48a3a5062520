# mcp-harness shell integration for zsh: OSC 133 marks (A prompt start, B input start,
# C output start, D;status command end) and OSC 7 (the directory), which the server reads
# and removes from the output. A and D are printed by a precmd hook rather than put in
# the prompt, so a prompt that zsh redraws (a transient prompt, vi mode, a resize) does
# not repeat them; only B is in PS1.

# __mh_precmd runs first among the precmd hooks; $? is read on its first line.
__mh_precmd() {
	local __mh_status=$?
	builtin printf '\e]133;D;%s\a' $__mh_status
	local p=${PWD//\%/%25}
	p=${p//$'\a'/%07}
	p=${p//$'\e'/%1B}
	p=${p//$'\n'/%0A}
	builtin printf '\e]7;file://%s%s\a' $HOST $p
	builtin printf '\e]133;A\a'
	# Rearm the preexec hook here, and the precmd hooks in preexec: a hook list is never
	# changed while zsh walks it.
	preexec_functions=(${preexec_functions:#__mh_preexec} __mh_preexec)
	return $__mh_status
}

# __mh_prompt_end runs last among the precmd hooks, after any theme that rewrote PS1.
__mh_prompt_end() {
	local __mh_status=$?
	if [[ $PS1 != *$'%{\e]133;B\a%}' ]]; then
		PS1=${PS1//$'%{\e]133;B\a%}'/}$'%{\e]133;B\a%}'
	fi
	return $__mh_status
}

# __mh_preexec runs last among the preexec hooks, right before the command's output. C
# carries the command line as typed ($1), with what would end the sequence, and %,
# percent-encoded (kitty's cmdline_url).
__mh_preexec() {
	local c=${1//\%/%25}
	c=${c//$'\a'/%07}
	c=${c//$'\e'/%1B}
	c=${c//$'\n'/%0A}
	c=${c//$'\r'/%0D}
	builtin printf '\e]133;C;cmdline_url=%s\a' "$c"
	precmd_functions=(__mh_precmd ${precmd_functions:#(__mh_precmd|__mh_prompt_end)} __mh_prompt_end)
}

precmd_functions=(__mh_precmd ${precmd_functions:#(__mh_precmd|__mh_prompt_end)} __mh_prompt_end)
preexec_functions=(${preexec_functions:#__mh_preexec} __mh_preexec)
