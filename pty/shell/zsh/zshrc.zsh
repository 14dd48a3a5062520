# mcp-harness: read the user's .zshrc, then add the shell integration after it. ZDOTDIR
# stays the user's from here on, so zsh reads their .zlogin and a nested zsh their files.
if [[ -n $__mh_user_zdotdir_set ]]; then ZDOTDIR=$__mh_user_zdotdir; else unset ZDOTDIR; fi
if [[ -f ${ZDOTDIR:-$HOME}/.zshrc ]]; then
	builtin source ${ZDOTDIR:-$HOME}/.zshrc
fi
builtin source $__mh_zdotdir/mh.zsh
unset __mh_user_zdotdir __mh_user_zdotdir_set
unfunction __mh_user_dir 2>/dev/null
