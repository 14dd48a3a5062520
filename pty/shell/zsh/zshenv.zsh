# mcp-harness: zsh reads this first because ZDOTDIR points here. Each of the user's own
# files is read from where zsh would have found it, and ZDOTDIR points back here until
# .zshrc, which adds the shell integration after the user's .zshrc. A ZDOTDIR the user's
# .zshenv sets is kept: that is where their other files are.
typeset -g __mh_zdotdir=$ZDOTDIR
# The session's nonce, which every mark carries (see mh.zsh), is kept in a variable that
# is not exported and taken out of the environment before any file of the user's runs.
typeset -g __mh_nonce=${MCP_HARNESS_NONCE-}
unset MCP_HARNESS_NONCE
if [[ -n ${MCP_HARNESS_ZDOTDIR+x} ]]; then
	export ZDOTDIR=$MCP_HARNESS_ZDOTDIR
	unset MCP_HARNESS_ZDOTDIR
else
	unset ZDOTDIR
fi
if [[ -f ${ZDOTDIR:-$HOME}/.zshenv ]]; then
	builtin source ${ZDOTDIR:-$HOME}/.zshenv
fi
if [[ -o interactive ]]; then
	typeset -g __mh_user_zdotdir=${ZDOTDIR-} __mh_user_zdotdir_set=${ZDOTDIR+x}
	ZDOTDIR=$__mh_zdotdir
fi
