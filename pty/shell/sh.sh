# mcp-harness shell integration for POSIX shells (dash, ash, bash --posix), read through
# $ENV. These shells have no prompt hook and no PS0, but they expand parameters in PS1 at
# every prompt, and $? there is still the last command's status: the marks live in PS1
# (D;status, the directory, A before the prompt, B after it), and the server matches a
# command's end to the line it typed.
if [ -n "${MCP_HARNESS_ENV+x}" ]; then
	ENV=$MCP_HARNESS_ENV
	export ENV
	unset MCP_HARNESS_ENV
	if [ -n "$ENV" ] && [ -r "$ENV" ]; then
		. "$ENV"
	fi
else
	unset ENV
fi
__mh_e=$(printf '\033')
__mh_b=$(printf '\007')
PS1="${__mh_e}]133;D;\$?${__mh_b}${__mh_e}]7;file://\${HOSTNAME-}\${PWD}${__mh_b}${__mh_e}]133;A${__mh_b}${PS1-\$ }${__mh_e}]133;B${__mh_b}"
# The end of a continuation prompt too: a command's output starts after the last one.
PS2="${PS2-> }${__mh_e}]133;B${__mh_b}"
unset __mh_e __mh_b
