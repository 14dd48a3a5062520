// Package repotest holds tests of the repository as a whole: properties of the source tree
// that no one package owns, such as comments that name files which must exist. It has no
// code of its own; its tests read the tree from the module root.
package repotest
