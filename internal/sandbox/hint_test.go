package sandbox

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// hintRoots are the writable roots of a workspace-write server on /home/u/ws.
var hintRoots = []Root{
	{Path: "/home/u/ws", Kind: RootWorkspace},
	{Path: "/tmp", Kind: RootTemp},
	{Path: "/var/tmp", Kind: RootTemp},
	{Path: "/dev/shm", Kind: RootTemp},
	{Path: "/home/u/.cache", Kind: RootCache},
	{Path: "/dev/null", Kind: RootDevice},
	{Path: "/dev/tty", Kind: RootDevice},
	{Path: "/dev/pts", Kind: RootDevice},
}

// hintRORoots are those of read-only: no workspace, no caches.
var hintRORoots = []Root{
	{Path: "/tmp", Kind: RootTemp},
	{Path: "/var/tmp", Kind: RootTemp},
	{Path: "/dev/null", Kind: RootDevice},
}

var (
	hintWW       = Policy{Mode: WorkspaceWrite, Network: NetworkOn}
	hintWWNetOff = Policy{Mode: WorkspaceWrite, Network: NetworkOff}
	hintRO       = Policy{Mode: ReadOnly, Network: NetworkOn}
	hintOffNet   = Policy{Mode: Off, Network: NetworkOff}
)

func wwHint(path, dir string) string {
	return "sandbox: writing " + path + " was denied (workspace-write); allow it with --writable " + dir + ", or run the server with --sandbox off"
}

func roHint(path string) string {
	return "sandbox: writing " + path + ` was denied (read-only); allow it with sandbox: "workspace-write" (call) or --sandbox workspace-write (server)`
}

// The outputs below are what the real programs printed on Debian 12 (coreutils 9.1, bash
// 5.2, dash, Python 3.11, Node 20, npm 11, Go 1.26, git 2.39, curl 7.88, wget 1.21,
// OpenSSH 9.2, perl 5.36, cargo 1.95): writes to a read-only tmpfs (Read-only file system:
// what the mount layer gives), writes as nobody to a directory of root's (Permission
// denied: what Landlock gives), and connections under a seccomp filter that fails
// socket(AF_INET*) with EACCES or EPERM (what network off gives). Where a case needs the
// path elsewhere (inside the workspace, say) only the path is changed. Three lines are
// written from the programs' formats, not captured: Go's error for a connect refused by
// Landlock's TCP rules, docker's and systemctl's Unix-socket errors.

func TestHint_Files(t *testing.T) {
	for _, tc := range []struct {
		name   string
		output string
		policy Policy
		roots  []Root
		want   string
	}{
		// Read-only file system (EROFS).
		{"touch", `touch: cannot touch '/srv/ro/new': Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/new", "/srv/ro")},
		{"touch-d", `touch: cannot touch '/srv/ro/file': Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/file", "/srv/ro")},
		{"bash", `bash: line 1: /srv/ro/new: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/new", "/srv/ro")},
		{"bashByPath", `/usr/bin/bash: line 1: /srv/ro/new: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/new", "/srv/ro")},
		{"shByPath", `/bin/sh: 1: cannot create /srv/ro/new: Permission denied`, hintWW, hintRoots, wwHint("/srv/ro/new", "/srv/ro")},
		{"dash", `dash: 1: cannot create /srv/ro/new: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/new", "/srv/ro")},
		{"mkdirUTF8Quotes", `mkdir: cannot create directory ‘/srv/ro/d2’: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/d2", "/srv/ro")},
		{"rm", `rm: cannot remove '/srv/ro/dir': Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/dir", "/srv/ro")},
		{"cp", `cp: cannot create regular file '/srv/ro/dir/hostname': Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/dir/hostname", "/srv/ro/dir")},
		// Two paths: the source in /tmp is writable, the target is not.
		{"mvInterDevice", `mv: inter-device move failed: '/tmp/mvsrc' to '/srv/ro/moved'; unable to remove target: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/moved", "/srv/ro")},
		{"mvRemove", `mv: cannot remove '/srv/ro/file': Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/file", "/srv/ro")},
		{"ln", `ln: failed to create symbolic link '/srv/ro/link': Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/link", "/srv/ro")},
		{"chmod", `chmod: changing permissions of '/srv/ro/file': Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/file", "/srv/ro")},
		{"chown", `chown: changing ownership of '/srv/ro/file': Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/file", "/srv/ro")},
		{"tee", "tee: /srv/ro/new: Read-only file system\nx\n", hintWW, hintRoots, wwHint("/srv/ro/new", "/srv/ro")},
		{"sed", `sed: couldn't open temporary file /srv/ro/seda6QtLG: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/seda6QtLG", "/srv/ro")},
		{"dd", `dd: failed to open '/srv/ro/dd': Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/dd", "/srv/ro")},
		{"install", `install: cannot create regular file '/srv/ro/inst': Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/inst", "/srv/ro")},
		{"tar", "tar: /srv/ro/x.tar: Cannot open: Read-only file system\ntar: Error is not recoverable: exiting now\n", hintWW, hintRoots, wwHint("/srv/ro/x.tar", "/srv/ro")},
		{"truncate", `truncate: cannot open '/srv/ro/file' for writing: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/file", "/srv/ro")},
		{"python", `Traceback (most recent call last):
  File "<string>", line 1, in <module>
OSError: [Errno 30] Read-only file system: '/srv/ro/new'
`, hintWW, hintRoots, wwHint("/srv/ro/new", "/srv/ro")},
		{"gitConfig", `error: could not lock config file /srv/ro/.gitconfig: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/.gitconfig", "/srv/ro")},
		{"gitInit", `fatal: cannot mkdir /srv/ro/repo: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/repo", "/srv/ro")},
		{"gitInitHere", `/srv/ro/.git: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/.git", "/srv/ro")},
		{"goOpen", "open /srv/ro/gofile: read-only file system\nmkdir /srv/ro/gofiled: read-only file system\n", hintWW, hintRoots, wwHint("/srv/ro/gofile", "/srv/ro")},
		{"goBuildCache", `failed to initialize build cache at /srv/ro/gocache: mkdir /srv/ro/gocache: read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/gocache", "/srv/ro")},
		{"goModCache", `go: could not create module cache: mkdir /srv/ro/gopath: read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/gopath", "/srv/ro")},
		{"node", `node:fs:2380
    return binding.writeFileUtf8(
                   ^

Error: EROFS: read-only file system, open '/srv/ro/n'
    at Object.writeFileSync (node:fs:2380:20)
    at [eval]:1:15
    at node:internal/main/eval_string:51:3 {
  errno: -30,
  code: 'EROFS',
  syscall: 'open',
  path: '/srv/ro/n'
}

Node.js v20.20.2
`, hintWW, hintRoots, wwHint("/srv/ro/n", "/srv/ro")},
		{"perl", `cannot open /srv/ro/p: Read-only file system at -e line 1.`, hintWW, hintRoots, wwHint("/srv/ro/p", "/srv/ro")},
		// The denial on a line of its own, the path three lines up.
		{"cargo", "    Creating binary (application) `cg` package\nerror: failed to create package `cg` at `/srv/ro/cg`\n\nCaused by:\n  failed to create directory `/srv/ro/cg`\n\nCaused by:\n  Read-only file system (os error 30)\n", hintWW, hintRoots, wwHint("/srv/ro/cg", "/srv/ro")},

		// Permission denied (EACCES) and Operation not permitted (EPERM).
		{"touchEACCES", `touch: cannot touch '/srv/pd/new': Permission denied`, hintWW, hintRoots, wwHint("/srv/pd/new", "/srv/pd")},
		{"bashEACCES", `bash: line 1: /srv/pd/new: Permission denied`, hintWW, hintRoots, wwHint("/srv/pd/new", "/srv/pd")},
		{"dashEACCES", `dash: 1: cannot create /srv/pd/new: Permission denied`, hintWW, hintRoots, wwHint("/srv/pd/new", "/srv/pd")},
		{"mkdirEACCES", `mkdir: cannot create directory ‘/srv/pd/d2’: Permission denied`, hintWW, hintRoots, wwHint("/srv/pd/d2", "/srv/pd")},
		{"mvEACCES", `mv: cannot move '/tmp/mvsrc2' to '/srv/pd/moved': Permission denied`, hintWW, hintRoots, wwHint("/srv/pd/moved", "/srv/pd")},
		{"chmodEPERM", `chmod: changing permissions of '/srv/pd/file': Operation not permitted`, hintWW, hintRoots, wwHint("/srv/pd/file", "/srv/pd")},
		{"truncateEACCES", `truncate: cannot open '/srv/pd/file' for writing: Permission denied`, hintWW, hintRoots, wwHint("/srv/pd/file", "/srv/pd")},
		{"pythonEACCES", `Traceback (most recent call last):
  File "<string>", line 1, in <module>
PermissionError: [Errno 13] Permission denied: '/srv/pd/pd'`, hintWW, hintRoots, wwHint("/srv/pd/pd", "/srv/pd")},
		{"gitEACCES", `error: could not lock config file /srv/pd/.gitconfig: Permission denied`, hintWW, hintRoots, wwHint("/srv/pd/.gitconfig", "/srv/pd")},
		{"goEACCES", `failed to initialize build cache at /srv/pd/.cache/go-build: mkdir /srv/pd/.cache: permission denied`, hintWW, hintRoots, wwHint("/srv/pd/.cache/go-build", "/srv/pd/.cache")},
		{"nodeEACCES", `Error: EACCES: permission denied, open '/srv/pd/n'`, hintWW, hintRoots, wwHint("/srv/pd/n", "/srv/pd")},
		{"npmGlobal", `npm error code EACCES
npm error syscall mkdir
npm error path /usr/lib/node_modules/left-pad
npm error errno -13
npm error Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/left-pad'
npm error     at async mkdir (node:internal/fs/promises:856:10)
npm error     at async /usr/lib/node_modules/npm/node_modules/@npmcli/arborist/lib/arborist/reify.js:624:20
npm error   errno: -13,
npm error   code: 'EACCES',
npm error   syscall: 'mkdir',
npm error   path: '/usr/lib/node_modules/left-pad'
npm error }
npm error
npm error The operation was rejected by your operating system.
`, hintWW, hintRoots, wwHint("/usr/lib/node_modules/left-pad", "/usr/lib/node_modules")},
		{"perlEACCES", `cannot open /srv/pd/p: Permission denied at -e line 1.`, hintWW, hintRoots, wwHint("/srv/pd/p", "/srv/pd")},
		// Running a file that is not executable reads the same as a denied redirection.
		{"bashExec", `/tmp/hintout/pd.sh: line 36: /srv/pd/file: Permission denied`, hintWW, hintRoots, wwHint("/srv/pd/file", "/srv/pd")},
		// So does cat of a file the user may not read: a known false positive.
		{"catUnreadable", `cat: /root/.bashrc: Permission denied`, hintWW, hintRoots, wwHint("/root/.bashrc", "/root")},

		// Read-only: a write to the workspace is denied as well.
		{"readOnlyWorkspace", `touch: cannot touch '/home/u/ws/out.txt': Read-only file system`, hintRO, hintRORoots, roHint("/home/u/ws/out.txt")},
		{"readOnlyElsewhere", `bash: line 1: /srv/pd/new: Permission denied`, hintRO, hintRORoots, roHint("/srv/pd/new")},
		{"readOnlyTemp", `touch: cannot touch '/tmp/x': Permission denied`, hintRO, hintRORoots, ""},

		// Not the sandbox's doing.
		{"insideWorkspace", `touch: cannot touch '/home/u/ws/out.txt': Read-only file system`, hintWW, hintRoots, ""},
		{"insideCache", `mkdir /home/u/.cache/go-build/00: permission denied`, hintWW, hintRoots, ""},
		{"insideTemp", `mv: cannot move '/tmp/a' to '/tmp/b/c': Permission denied`, hintWW, hintRoots, ""},
		{"device", `bash: /dev/null: Permission denied`, hintWW, hintRoots, ""},
		{"noSuchFile", `touch: cannot touch '/srv/none/x': No such file or directory`, hintWW, hintRoots, ""},
		// npm reports a mkdir -p on a read-only file system as ENOENT: nothing to go by.
		{"npmENOENT", "npm error code ENOENT\nnpm error syscall mkdir\nnpm error path /srv/ro/np\nnpm error enoent ENOENT: no such file or directory, mkdir '/srv/ro/np'\n", hintWW, hintRoots, ""},
		{"headForReading", `head: cannot open '/root/.bashrc' for reading: Permission denied`, hintWW, hintRoots, ""},
		{"lsDirectory", `ls: cannot open directory '/root': Permission denied`, hintWW, hintRoots, ""},
		{"lsAccess", `ls: cannot access '/root/x': Permission denied`, hintWW, hintRoots, ""},
		{"nodeScandir", `Error: EACCES: permission denied, scandir '/root'`, hintWW, hintRoots, ""},
		{"goStat", `stat /root/x: permission denied`, hintWW, hintRoots, ""},
		{"relativePath", `touch: cannot touch 'out/x': Read-only file system`, hintWW, hintRoots, ""},
		{"tildePath", `touch: cannot touch '~/x': Read-only file system`, hintWW, hintRoots, ""},
		{"pathWithoutDenial", `wrote /srv/ro/new`, hintWW, hintRoots, ""},
		{"sandboxOff", `touch: cannot touch '/srv/ro/new': Read-only file system`, Unconfined, hintRoots, ""},
		{"modeOffNetworkOff", `touch: cannot touch '/srv/ro/new': Read-only file system`, hintOffNet, nil, ""},
		// A Python traceback's source files are never taken for the path.
		{"tracebackFrames", `  File "/usr/lib/python3.11/shutil.py", line 1, in copy
PermissionError: [Errno 13] Permission denied`, hintWW, hintRoots, ""},
		{"unixSocket", `dial unix /var/run/docker.sock: connect: permission denied`, hintWW, hintRoots, ""},

		// Network off does not hide a file denial, nor make one.
		{"netOffFile", `touch: cannot touch '/srv/ro/new': Read-only file system`, hintWWNetOff, hintRoots, wwHint("/srv/ro/new", "/srv/ro")},
		{"netOffFileInside", `touch: cannot touch '/home/u/ws/x': Permission denied`, hintWWNetOff, hintRoots, ""},
		// The first denial found is named.
		{"first", "cp: cannot create regular file '/srv/a/x': Permission denied\ncp: cannot create regular file '/srv/b/y': Permission denied\n", hintWW, hintRoots, wwHint("/srv/a/x", "/srv/a")},
		{"firstOutside", "touch: cannot touch '/home/u/ws/x': Permission denied\ntouch: cannot touch '/srv/b/y': Permission denied\n", hintWW, hintRoots, wwHint("/srv/b/y", "/srv/b")},

		// What a terminal adds: colours, CRLF.
		{"colours", "\x1b[31mnpm error\x1b[0m Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/x'\r\n", hintWW, hintRoots, wwHint("/usr/lib/node_modules/x", "/usr/lib/node_modules")},
		{"crlf", "touch: cannot touch '/srv/ro/new': Read-only file system\r\n$ ", hintWW, hintRoots, wwHint("/srv/ro/new", "/srv/ro")},
		{"spaceInQuotedPath", `touch: cannot touch '/srv/my dir/x': Read-only file system`, hintWW, hintRoots, wwHint("/srv/my dir/x", "'/srv/my dir'")},
		{"quoteInPath", `touch: cannot touch "/srv/it's/x": Read-only file system`, hintWW, hintRoots, wwHint("/srv/it's/x", `'/srv/it'\''s'`)},
		{"uncleanPath", `bash: /srv/ro//a/../new: Read-only file system`, hintWW, hintRoots, wwHint("/srv/ro/new", "/srv/ro")},
		{"rootsUnclean", `touch: cannot touch '/home/u/ws/x': Read-only file system`, hintWW, []Root{{Path: "/home/u/ws/", Kind: RootWorkspace}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Hint(tc.output, tc.policy, tc.roots, ""); got != tc.want {
				t.Errorf("Hint(%q, %s) =\n\t%q\nwant\n\t%q", tc.output, tc.policy, got, tc.want)
			}
		})
	}
}

// A quoted relative path is taken from the directory the command worked in: outside the
// roots it is named whole, inside them it is no denial of the sandbox's.
func TestHint_relativePath(t *testing.T) {
	for _, tc := range []struct {
		name, output, cwd, want string
	}{
		{"home", `touch: cannot touch 'pwned': Read-only file system`, "/root", wwHint("/root/pwned", "/root")},
		{"python", `PermissionError: [Errno 13] Permission denied: 'sub/f.txt'`, "/srv/ro", wwHint("/srv/ro/sub/f.txt", "/srv/ro/sub")},
		{"insideRoot", `touch: cannot touch 'x': Read-only file system`, "/home/u/ws", ""},
		{"noCwd", `touch: cannot touch 'pwned': Read-only file system`, "", ""},
		{"bareWord", `bash: pwned: Read-only file system`, "/root", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Hint(tc.output, hintWW, hintRoots, tc.cwd); got != tc.want {
				t.Errorf("Hint(%q, cwd %q) = %q, want %q", tc.output, tc.cwd, got, tc.want)
			}
		})
	}
}

func TestHint_Network(t *testing.T) {
	for _, tc := range []struct {
		name, output string
	}{
		{"curlResolve", `curl: (6) Could not resolve host: example.com`},
		{"curlConnect", `curl: (7) Failed to connect to 1.1.1.1 port 443 after 0 ms: Couldn't connect to server`},
		{"wget", "Connecting to 1.1.1.1:443... failed: Permission denied.\nGiving up.\n"},
		{"wgetEPERM", "Connecting to 1.1.1.1:443... failed: Operation not permitted.\nGiving up.\n"},
		{"pythonSocket", `Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/socket.py", line 232, in __init__
    _socket.socket.__init__(self, family, type, proto, fileno)
PermissionError: [Errno 13] Permission denied`},
		{"pythonSocketEPERM", "    _socket.socket.__init__(self, family, type, proto, fileno)\nPermissionError: [Errno 1] Operation not permitted\n"},
		{"pythonURLLib", `urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>`},
		{"pythonResolver", `socket.gaierror: [Errno -3] Temporary failure in name resolution`},
		{"nodeConnect", "      throw er; // Unhandled 'error' event\n      ^\n\nError: connect EACCES 1.1.1.1:80 - Local (undefined:undefined)\n"},
		{"nodeConnectEPERM", `Error: connect EPERM 1.1.1.1:80 - Local (undefined:undefined)`},
		{"nodeFetch", `TypeError: fetch failed getaddrinfo EAI_AGAIN example.com`},
		{"nodeListen", `Error: listen EACCES: permission denied 0.0.0.0:8080`},
		{"goDial", `dial tcp 1.1.1.1:80: socket: permission denied`},
		{"goListen", `listen tcp :8080: socket: permission denied`},
		{"goListenEPERM", `listen tcp :8080: socket: operation not permitted`},
		{"goHTTP", `Get "http://example.com": dial tcp: lookup example.com on 10.255.255.53:53: dial udp 10.255.255.53:53: socket: permission denied`},
		{"goLandlock", `dial tcp 1.1.1.1:80: connect: permission denied`},
		{"git", `fatal: unable to access 'https://github.com/golang/go/': Could not resolve host: github.com`},
		{"ssh", "socket: Permission denied\nssh: connect to host 1.1.1.1 port 22: failure\n"},
		{"sshResolve", `ssh: Could not resolve hostname github.com: Temporary failure in name resolution`},
		{"pip", `WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7fd5652dfe10>: Failed to establish a new connection: [Errno -2] Name or service not known')': /simple/six/`},
		{"npm", "npm error code EAI_AGAIN\nnpm error syscall getaddrinfo\nnpm error errno EAI_AGAIN\nnpm error request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\n"},
		{"bashSocket", `bash: socket: Permission denied`},
		{"bashDevTCP", `bash: line 1: /dev/tcp/1.1.1.1/80: Permission denied`},
		{"perl", `connect: IO::Socket::INET: Permission denied`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []Policy{hintWWNetOff, hintOffNet, {Mode: ReadOnly, Network: NetworkOff}} {
				if got := Hint(tc.output, p, hintRoots, ""); got != netHint {
					t.Errorf("Hint(%q, %s) = %q, want %q", tc.output, p, got, netHint)
				}
			}
			// With the network on, a failed connection is none of the sandbox's doing.
			if got := Hint(tc.output, hintWW, hintRoots, ""); got != "" {
				t.Errorf("Hint(%q, %s) = %q, want \"\"", tc.output, hintWW, got)
			}
		})
	}
	for _, tc := range []struct {
		name, output string
	}{
		// Unix sockets stay with the network off: their errors are their permissions'.
		{"dockerSocket", `Got permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: dial unix /var/run/docker.sock: connect: permission denied`},
		{"dbus", `Failed to connect to bus: No such file or directory`},
		{"noDenial", `curl: (22) The requested URL returned error: 404`},
		{"permissionFarFromSocket", "socket opened\n1\n2\n3\n4\n5\nsudo: Permission denied\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Hint(tc.output, hintOffNet, nil, ""); got != "" {
				t.Errorf("Hint(%q, %s) = %q, want \"\"", tc.output, hintOffNet, got)
			}
		})
	}
}

func TestHint_Length(t *testing.T) {
	long := "/srv/" + strings.Repeat("verylongdirectoryname/", 20) + "file.txt"
	for _, tc := range []struct {
		name   string
		output string
		policy Policy
	}{
		{"LongPath", "touch: cannot touch '" + long + "': Read-only file system", hintWW},
		{"LongPathReadOnly", "touch: cannot touch '" + long + "': Read-only file system", hintRO},
		{"LongQuotes", "touch: cannot touch \"/" + strings.Repeat("'", 300) + "/x\": Read-only file system", hintWW},
		{"LongMultibyte", "touch: cannot touch '/" + strings.Repeat("é/", 200) + "x': Read-only file system", hintWW},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Hint(tc.output, tc.policy, hintRoots, "")
			if got == "" || len(got) >= maxHint || !utf8.ValidString(got) {
				t.Fatalf("Hint = %q (%d bytes), want a valid line under %d bytes", got, len(got), maxHint)
			}
			if !strings.Contains(got, "...") {
				t.Errorf("Hint = %q: want the path shortened with ...", got)
			}
		})
	}
	// The file name, at the end of the path, survives the shortening.
	if got := Hint("touch: cannot touch '"+long+"': Read-only file system", hintWW, hintRoots, ""); !strings.Contains(got, "file.txt was denied") {
		t.Errorf("Hint = %q: want the file name kept", got)
	}
}

// Only the last 64 KiB are read: a denial before them is not seen, and the line cut in
// two at their start is not read as a shorter path.
func TestHint_Tail(t *testing.T) {
	denial := "touch: cannot touch '/srv/ro/new': Read-only file system\n"
	filler := strings.Repeat("building...\n", hintScan/12+1)
	if got := Hint(denial+filler, hintWW, hintRoots, ""); got != "" {
		t.Errorf("Hint(denial + %d bytes) = %q, want \"\"", len(filler), got)
	}
	if got, want := Hint(filler+denial, hintWW, hintRoots, ""), wwHint("/srv/ro/new", "/srv/ro"); got != want {
		t.Errorf("Hint(%d bytes + denial) = %q, want %q", len(filler), got, want)
	}
	// The 64 KiB start inside "/srv/ro/deep/new": "/new" alone must not be named.
	line := "bash: /srv/ro/deep/new: Read-only file system"
	cut := strings.Index(line, "/new")
	out := line + "\n" + strings.Repeat("x", hintScan-(len(line)-cut)-1)
	if got := Hint(out, hintWW, hintRoots, ""); got != "" {
		t.Errorf("Hint(a cut line) = %q, want \"\"", got)
	}
}

// Whatever the output, Hint does not panic and returns "" or one valid line under 200
// bytes that starts with "sandbox: ".
func FuzzHint(f *testing.F) {
	f.Add("touch: cannot touch '/srv/ro/new': Read-only file system", true)
	f.Add("mkdir: cannot create directory ‘/srv/ro/d2’: Permission denied", false)
	f.Add("Caused by:\n  failed to create directory `/srv/ro/cg`\n\nCaused by:\n  Read-only file system (os error 30)", true)
	f.Add("dial tcp 1.1.1.1:80: socket: permission denied", true)
	f.Add("bash: /\x00\n: Read-only file system", false)
	f.Add("\x1b]0;title\x07\x1b[1mbash: /a\u2028b: EROFS\x1b", true)
	f.Add("cp: '`/x' \"/y\" ‘/z: EACCES", false)
	f.Fuzz(func(t *testing.T, output string, netOff bool) {
		for _, p := range []Policy{hintWW, hintRO, hintOffNet, {Mode: WorkspaceWrite, Network: NetworkOff}} {
			if !netOff && p.Network == NetworkOff {
				continue
			}
			got := Hint(output, p, hintRoots, "")
			if got == "" {
				continue
			}
			if strings.ContainsAny(got, "\n\r") || len(got) >= maxHint || !utf8.ValidString(got) || !strings.HasPrefix(got, "sandbox: ") {
				t.Fatalf("Hint(%q, %s) = %q: want \"\" or one line under %d bytes", output, p, got, maxHint)
			}
		}
	})
}
