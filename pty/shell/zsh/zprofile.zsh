# mcp-harness: a login zsh reads this (from our ZDOTDIR) before .zshrc; read the user's.
__mh_user_dir() {
	if [[ -n $__mh_user_zdotdir_set ]]; then ZDOTDIR=$__mh_user_zdotdir; else unset ZDOTDIR; fi
}
__mh_user_dir
if [[ -f ${ZDOTDIR:-$HOME}/.zprofile ]]; then
	builtin source ${ZDOTDIR:-$HOME}/.zprofile
fi
__mh_user_zdotdir=${ZDOTDIR-} __mh_user_zdotdir_set=${ZDOTDIR+x}
ZDOTDIR=$__mh_zdotdir
