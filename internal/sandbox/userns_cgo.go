//go:build linux && cgo

package sandbox

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// mcp_harness_userns_errno is 0 once the process entered its user namespace, else the
// errno of the step that failed; -1 when it was not asked to.
int mcp_harness_userns_errno = -1;

static int mcp_harness_write_file(const char *path, const char *text) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) return errno;
	ssize_t n = write(fd, text, strlen(text));
	int err = n < 0 ? errno : 0;
	close(fd);
	return err;
}

// Runs before the Go runtime starts, while the process has one thread: the one moment a
// Go program can enter a user namespace (unshare refuses a process with several threads).
// Only when the variable asks for it (userns_linux.go sets it and executes the program
// again). The uid and gid are mapped to themselves; setgroups must be denied first for an
// unprivileged process to write its gid map, and the supplementary groups it has stay.
__attribute__((constructor)) static void mcp_harness_enter_userns(void) {
	const char *want = getenv("MCP_HARNESS_INTERNAL_USERNS");
	if (want == NULL || strcmp(want, "1") != 0) return;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER) != 0) {
		mcp_harness_userns_errno = errno;
		return;
	}
	char map[64];
	int err = mcp_harness_write_file("/proc/self/setgroups", "deny");
	if (err == 0) {
		snprintf(map, sizeof map, "%u %u 1", (unsigned) uid, (unsigned) uid);
		err = mcp_harness_write_file("/proc/self/uid_map", map);
	}
	if (err == 0) {
		snprintf(map, sizeof map, "%u %u 1", (unsigned) gid, (unsigned) gid);
		err = mcp_harness_write_file("/proc/self/gid_map", map);
	}
	mcp_harness_userns_errno = err;
}
*/
import "C"

const usernsCodeLinked = true

func usernsErrno() int { return int(C.mcp_harness_userns_errno) }
