package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// denySource is a program that runs its arguments as a system that lacks some of what the
// sandbox builds on: `deny WHAT... -- PROGRAM ARGS...` installs a seccomp filter that
// fails the system calls of each WHAT, then executes PROGRAM, which inherits the filter
// with everything it starts:
//
//	landlock  landlock_create_ruleset, landlock_add_rule, landlock_restrict_self: ENOSYS,
//	          as on a kernel without Landlock
//	seccomp   seccomp(2) and prctl(PR_SET_SECCOMP): ENOSYS/EINVAL, as on a kernel without
//	          seccomp filters
//	mounts    unshare(2) and the new mount API (open_tree, mount_setattr, move_mount):
//	          EPERM, as in a container without mount rights
const denySource = `
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "deny: unsupported architecture"
#endif
/* Landlock's and the mount API's numbers are the same on every architecture. */
#define NR_landlock_create_ruleset 444
#define NR_landlock_add_rule 445
#define NR_landlock_restrict_self 446
#define NR_open_tree 428
#define NR_move_mount 429
#define NR_mount_setattr 442

#define LD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define FAIL(nr, err) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

int main(int argc, char **argv) {
	struct sock_filter prog[64];
	int n = 0, i;
	prog[n++] = (struct sock_filter) LD(arch);
	prog[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
	prog[n++] = (struct sock_filter) ALLOW;
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		struct sock_filter f[] = {LD(nr), FAIL(0, 0)};
		int nrs[4], errs[4], k = 0, j;
		if (strcmp(argv[i], "landlock") == 0) {
			nrs[k] = NR_landlock_create_ruleset; errs[k++] = ENOSYS;
			nrs[k] = NR_landlock_add_rule; errs[k++] = ENOSYS;
			nrs[k] = NR_landlock_restrict_self; errs[k++] = ENOSYS;
		} else if (strcmp(argv[i], "seccomp") == 0) {
			nrs[k] = __NR_seccomp; errs[k++] = ENOSYS;
		} else if (strcmp(argv[i], "mounts") == 0) {
			nrs[k] = __NR_unshare; errs[k++] = EPERM;
			nrs[k] = NR_open_tree; errs[k++] = EPERM;
			nrs[k] = NR_mount_setattr; errs[k++] = EPERM;
			nrs[k] = NR_move_mount; errs[k++] = EPERM;
		} else {
			fprintf(stderr, "deny: unknown %s\n", argv[i]);
			return 2;
		}
		for (j = 0; j < k; j++) {
			f[1].k = nrs[j];
			f[2].k = SECCOMP_RET_ERRNO | errs[j];
			memcpy(&prog[n], f, sizeof f);
			n += 3;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: deny landlock|seccomp|mounts... -- program args...\n");
		return 2;
	}
	prog[n++] = (struct sock_filter) ALLOW;
	struct sock_fprog fprog = {.len = n, .filter = prog};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
		perror("deny: seccomp");
		return 2;
	}
	execv(argv[i + 1], argv + i + 1);
	perror("deny: exec");
	return 2;
}
`

// buildDeny compiles denySource with the system's C compiler into a directory the
// ordinary user can read, and returns its path; it skips t, saying why, without one.
func buildDeny(t *testing.T, dir string) string {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the deny wrapper knows the system calls of amd64 and arm64, not %s", runtime.GOARCH)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) to build the wrapper that makes Landlock, seccomp or mounts unavailable")
	}
	src := filepath.Join(dir, "deny.c")
	if err := os.WriteFile(src, []byte(denySource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "deny")
	if out, err := exec.Command(cc, "-O", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc deny.c: %v\n%s", err, out)
	}
	return bin
}
