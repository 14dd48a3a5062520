package pty

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestParseSignal(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want syscall.Signal
	}{
		{"SIGTERM", syscall.SIGTERM}, {"TERM", syscall.SIGTERM}, {"term", syscall.SIGTERM},
		{"SIGKILL", syscall.SIGKILL}, {"hup", syscall.SIGHUP}, {" SIGINT ", syscall.SIGINT}, {"9", syscall.SIGKILL},
	} {
		if got, err := ParseSignal(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseSignal(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "SIGFOO", "TERMINATE"} {
		if _, err := ParseSignal(in); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "SIGTERM") {
			t.Errorf("ParseSignal(%q) = %v, want ErrInvalid listing the names", in, err)
		}
	}
	for _, in := range []string{"0", "65", "-1"} {
		if _, err := ParseSignal(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseSignal(%q) = %v, want ErrInvalid", in, err)
		}
	}
}

func TestSignalName(t *testing.T) {
	for _, sn := range signalNames {
		if got, err := ParseSignal(SignalName(sn.sig)); err != nil || got != sn.sig {
			t.Errorf("ParseSignal(SignalName(%d)) = %v, %v, want it back", sn.sig, got, err)
		}
	}
	if got := SignalName(syscall.Signal(40)); got != "SIG40" {
		t.Errorf("SignalName(40) = %q, want SIG40", got)
	}
	if got, err := ParseSignal("SIG40"); err != nil || got != 40 {
		t.Errorf("ParseSignal(SIG40) = %v, %v, want 40", got, err)
	}
}
