# mcp-harness: bash reads this file instead of ~/.bashrc (--rcfile). It reads what bash
# would have read, then adds the shell integration after it.
if [[ -r /etc/bash.bashrc ]]; then
	. /etc/bash.bashrc
fi
if [[ -r ~/.bashrc ]]; then
	. ~/.bashrc
fi
. "${BASH_SOURCE[0]%/*}/bash.sh"
