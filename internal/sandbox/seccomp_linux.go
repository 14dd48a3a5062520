package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// errnoAction is a seccomp result that fails the call with errno.
func errnoAction(errno unix.Errno) seccomp.Action {
	return seccomp.ActionErrno | seccomp.Action(errno)
}

// loadNetworkFilter loads, on the calling thread only, the seccomp filters of network off:
// no socket of any family but AF_UNIX (so no IPv4, IPv6, raw or packet socket: connect,
// bind and listen have nothing to work on), and no io_uring, whose socket operations do
// not pass through seccomp. The refusal is EACCES, the error a program already reports as
// "permission denied", as for Landlock's TCP rules.
func loadNetworkFilter() error {
	notUnix := seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}
	native := seccomp.Filter{Policy: seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: errnoAction(unix.EACCES), NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "socket", Conditions: notUnix},
				{Name: "socketpair", Conditions: notUnix},
			}},
			{Action: errnoAction(unix.ENOSYS), Names: []string{"io_uring_setup"}},
		},
	}}
	if err := seccomp.LoadFilter(native); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return loadCompatFilter()
}

// loadCompatFilter closes the door the native filter leaves open: go-seccomp-bpf allows
// every call made through another ABI than the native one (its filter jumps past its
// rules on another architecture), and on amd64 the i386 ABI (int 0x80) can make sockets
// too, through socketcall(2) or socket(2); on arm64 the 32-bit ARM ABI likewise. The
// library cannot assemble a policy for a foreign ABI, so this one is assembled with the
// BPF assembler it uses itself, from its own tables of architectures and call numbers.
func loadCompatFilter() error {
	compat := compatArch()
	if compat == nil {
		return nil
	}
	deny := uint32(errnoAction(unix.EACCES))
	allow := uint32(seccomp.ActionAllow)
	// seccomp_data: nr at 0, arch at 4, args from 16 (each 8 bytes, low half first).
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(compat.ID), SkipFalse: 1},
		bpf.Jump{Skip: 1},
		bpf.RetConstant{Val: allow},
		bpf.LoadAbsolute{Off: 0, Size: 4},
	}
	if nr, ok := compat.SyscallNames["socketcall"]; ok {
		// socketcall's arguments are behind a pointer a filter cannot follow: refused whole.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1}, bpf.RetConstant{Val: deny})
	}
	var numbers []uint32
	for _, name := range []string{"socket", "socketpair"} {
		if nr, ok := compat.SyscallNames[name]; ok {
			numbers = append(numbers, uint32(nr))
		}
	}
	for _, nr := range numbers {
		prog = append(prog,
			bpf.LoadAbsolute{Off: 0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 3},
			bpf.LoadAbsolute{Off: 16, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 1},
			bpf.RetConstant{Val: deny},
		)
	}
	prog = append(prog, bpf.RetConstant{Val: allow})
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("seccomp (compat): %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp (compat): %w", errno)
	}
	return nil
}

// compatArch is the 32-bit ABI this architecture's kernel may also run, or nil.
func compatArch() *arch.Info {
	switch runtime.GOARCH {
	case "amd64":
		return arch.I386
	case "arm64":
		return arch.ARM
	}
	return nil
}
