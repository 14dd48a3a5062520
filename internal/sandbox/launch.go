package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Where is the checked working directory a command starts in (workspace.Dir): its path
// as checked, the path a child enters to be in the directory held open (Exec), and that
// directory. Where the launcher starts commands in a view of the file system of its own
// (the mount layer), Exec would lead the child back into the server's view, so the
// launcher opens Path again in the command's view and starts the command only if it is
// the very directory held open.
type Where struct {
	Path string
	Exec string
	File *os.File
}

// ErrDirChanged is a working directory that is no longer the one checked when the
// command was about to start.
var ErrDirChanged = errors.New("the working directory changed after it was checked")

// Support is what this system can enforce, found when the launcher starts.
type Support struct {
	// Landlock is the kernel's Landlock ABI version; 0 without Landlock.
	Landlock int `json:"landlock"`
	// Seccomp reports a seccomp filter can be loaded (network off needs it).
	Seccomp bool `json:"seccomp"`
	// Mounts reports commands get a read-only view of the file system but for their
	// writable roots, with the state directory read-only inside them (chmod, chown, file
	// times and the state directory covered); MountsWhy says why not when false.
	Mounts    bool   `json:"mounts"`
	MountsWhy string `json:"mountsWhy,omitempty"`
	// Seatbelt reports the macOS sandbox (sandbox-exec) is used.
	Seatbelt bool `json:"seatbelt"`
}

// Launcher starts commands under their policies. One per server: it holds what confines
// each policy in use (on Linux, a thread per policy), so starting a confined command costs
// about what starting it unconfined does.
type Launcher struct {
	cfg      Config
	policy   Policy
	degraded string
	support  Support
	log      *slog.Logger

	mu     sync.Mutex
	closed bool
	plat   platform
}

// maxPolicies bounds the policies in use at once: each holds a thread (Linux) until the
// launcher closes. Two modes, two network settings and the server's own policy give at
// most four; more means a bug.
const maxPolicies = 8

// New probes what the system can enforce and makes the launcher for cfg. When the kernel
// cannot enforce cfg's policy, New fails if it was asked for explicitly (cfg.Explicit) and
// otherwise degrades to Off, which Degraded then explains: never silently unconfined.
func New(cfg Config, log *slog.Logger) (*Launcher, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !cfg.Mode.Valid() {
		return nil, fmt.Errorf("--sandbox %q: want one of %s", cfg.Mode, joinModes())
	}
	if !cfg.Network.Valid() {
		return nil, fmt.Errorf("--network %q: want on or off", cfg.Network)
	}
	for _, w := range cfg.Writable {
		if !filepath.IsAbs(w) {
			return nil, fmt.Errorf("--writable %q: want an absolute path", w)
		}
	}
	l := &Launcher{cfg: cfg, policy: cfg.Policy(), log: log}
	l.support = probe()
	noMounts := !l.support.Mounts // as probed; a failure to make them warns where it happens (spawner)
	if l.policy.Confined() {
		cfg.EnsureCaches()
	}
	why := l.enforce(l.policy)
	if why != "" && !cfg.Explicit && l.policy.Mode != Off {
		// Only the default mode may be given up, and only the mode: network off is never
		// a default (it is only ever asked for), so it is kept, or refused below.
		degraded := Policy{Mode: Off, Network: l.policy.Network}
		if again := l.enforce(degraded); again == "" {
			l.degraded = fmt.Sprintf("the sandbox is off: this system cannot enforce the default %s (%s); commands run unconfined", l.policy.Mode, why)
			if degraded.Network == NetworkOff {
				l.degraded = fmt.Sprintf("the file system sandbox is off: this system cannot enforce the default %s (%s); commands may write anywhere, with the network off", l.policy.Mode, why)
			}
			l.policy, why = degraded, ""
			log.Warn("sandbox: " + l.degraded)
		}
	}
	if why != "" {
		l.Close()
		return nil, fmt.Errorf("cannot enforce --sandbox %s --network %s here: %s", cfg.Mode, cfg.Network, why)
	}
	if l.policy.Mode != Off && noMounts && !l.support.Seatbelt {
		log.Warn("sandbox: commands get no read-only view of the file system, so chmod, chown and file times outside the writable roots are not refused, and the state directory inside the workspace is writable by them (put it outside with --state-dir)",
			"why", l.support.MountsWhy)
	}
	return l, nil
}

// Policy is the server's effective policy: what a call gets unless it tightens it.
// A nil Launcher confines nothing.
func (l *Launcher) Policy() Policy {
	if l == nil {
		return Unconfined
	}
	return l.policy
}

// Degraded is "" or why the sandbox is off although the default asked for it.
func (l *Launcher) Degraded() string {
	if l == nil {
		return ""
	}
	return l.degraded
}

// Support is what the system enforces.
func (l *Launcher) Support() Support {
	if l == nil {
		return Support{}
	}
	return l.support
}

// Roots are the writable roots of mode m on this server.
func (l *Launcher) Roots(m Mode) []Root {
	if l == nil {
		return nil
	}
	return l.cfg.Roots(m)
}

// Narrow applies a call's own sandbox and network arguments to the server's policy (see
// Policy.Narrow), and refuses a tighter policy this system cannot enforce: a call that
// asks for confinement never runs unconfined.
func (l *Launcher) Narrow(mode, network string) (Policy, error) {
	p, err := l.Policy().Narrow(mode, network)
	if err != nil {
		return p, err
	}
	if l == nil {
		if p.Confined() {
			return Unconfined, &UnavailableError{Policy: p, Why: "this process has no sandbox"}
		}
		return p, nil
	}
	if why := l.cannotEnforce(p); why != "" {
		return l.policy, &UnavailableError{Policy: p, Why: why}
	}
	return p, nil
}

// UnavailableError is a policy this system cannot enforce.
type UnavailableError struct {
	Policy Policy
	Why    string
}

// Is makes an UnavailableError an ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("cannot confine to %s on this system: %s", e.Policy, e.Why)
}

// enforce makes what confines p now, so that a system that refuses it (a container's
// seccomp profile, say) is found at start, not at the first command; it says why p cannot
// be enforced, or "".
func (l *Launcher) enforce(p Policy) string {
	if why := l.cannotEnforce(p); why != "" || !p.Confined() {
		return why
	}
	if err := l.warm(p); err != nil {
		return err.Error()
	}
	return ""
}

// cannotEnforce says why p cannot be enforced here, or "".
func (l *Launcher) cannotEnforce(p Policy) string {
	s := l.support
	if p.Mode != Off && s.Landlock == 0 && !s.Seatbelt {
		return "the kernel has no Landlock (Linux 5.13 or later, enabled at boot: lsm=landlock)"
	}
	if p.Network == NetworkOff && !s.Seccomp && !s.Seatbelt {
		return "seccomp filters are not available"
	}
	return ""
}

// Start starts cmd under p, in dir when given (cmd.Dir is then set here). p must come
// from Narrow or be the server's policy. A nil Launcher starts cmd unconfined, and
// refuses a confined p.
func (l *Launcher) Start(p Policy, cmd *exec.Cmd, dir *Where) error {
	if l == nil && p.Confined() {
		return &UnavailableError{Policy: p, Why: "this process has no sandbox"}
	}
	if !p.Confined() {
		if dir != nil {
			cmd.Dir = dir.Exec
		}
		return cmd.Start()
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errors.New("the sandbox is closed: the server is shutting down")
	}
	l.mu.Unlock()
	return l.start(p, cmd, dir)
}

// Close ends what confines each policy. The commands started must have ended: on Linux a
// policy's thread is the parent of its commands, which get SIGKILL when it ends.
func (l *Launcher) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.closePlatform()
	return nil
}
