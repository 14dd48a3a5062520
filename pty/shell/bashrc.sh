# mcp-harness: bash reads this file instead of ~/.bashrc (--rcfile). It reads what bash
# would have read, then adds the shell integration after it. The session's nonce is taken
# out of the environment first, so nothing the user's rc files start inherits it.
if [[ -n ${MCP_HARNESS_NONCE+x} ]]; then
	__mh_nonce=$MCP_HARNESS_NONCE
	unset MCP_HARNESS_NONCE
fi
if [[ -r /etc/bash.bashrc ]]; then
	. /etc/bash.bashrc
fi
if [[ -r ~/.bashrc ]]; then
	. ~/.bashrc
fi
. "${BASH_SOURCE[0]%/*}/bash.sh"
