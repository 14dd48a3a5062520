# mcp-harness shell integration for POSIX shells (dash, ash, bash --posix), read through
# $ENV. These shells have no prompt hook and no PS0, but they expand parameters in PS1 at
# every prompt, and $? there is still the last command's status: the marks live in PS1
# (D;status, the directory, A before the prompt, B after it), and the server matches a
# command's end to the line it typed. Every mark carries the session's nonce (mh=...),
# taken out of the environment first; the prompts that hold it are not exported. The
# directory goes as it is (raw): these shells cannot percent-encode it.
# xtrace would print the nonce as text, allexport export the prompts that hold it: both
# are off while this file runs (an ENV file may turn them on), and put back after.
__mh_set=
case $- in *a*) __mh_set=a ;; esac
case $- in *x*) __mh_set=${__mh_set}x ;; esac
set +ax
__mh_nonce=${MCP_HARNESS_NONCE-}
unset MCP_HARNESS_NONCE
if [ -n "${MCP_HARNESS_ENV+x}" ]; then
	ENV=$MCP_HARNESS_ENV
	export ENV
	unset MCP_HARNESS_ENV
	if [ -n "$ENV" ] && [ -r "$ENV" ]; then
		[ -z "$__mh_set" ] || set "-$__mh_set"
		. "$ENV"
		__mh_set=
		case $- in *a*) __mh_set=a ;; esac
		case $- in *x*) __mh_set=${__mh_set}x ;; esac
		set +ax
	fi
else
	unset ENV
fi
if [ -n "$__mh_nonce" ]; then
	__mh_e=$(printf '\033')
	__mh_b=$(printf '\007')
	__mh_m="mh=$__mh_nonce"
	__mh_1="${__mh_e}]133;D;$__mh_m;\$?${__mh_b}${__mh_e}]7;$__mh_m;raw;file://\${HOSTNAME-}\${PWD}${__mh_b}${__mh_e}]133;A;$__mh_m${__mh_b}${PS1-\$ }${__mh_e}]133;B;$__mh_m${__mh_b}"
	# The end of a continuation prompt too: a command's output starts after the last one.
	__mh_2="${PS2-> }${__mh_e}]133;B;$__mh_m${__mh_b}"
	# Unset first: a prompt from the environment is exported, and an unset drops that;
	# allexport is off here, and the prompts are never assigned again.
	unset PS1 PS2
	PS1=$__mh_1 PS2=$__mh_2
	unset __mh_e __mh_b __mh_m __mh_1 __mh_2
fi
unset __mh_nonce
[ -z "$__mh_set" ] || set "-$__mh_set"
unset __mh_set
