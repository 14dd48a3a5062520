package procid

import (
	"os"
	"os/exec"
	"testing"
)

func TestIdentity_DeadProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id := Identify(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if id.Alive() {
		t.Errorf("identity of a reaped process is alive")
	}
	self := Identify(os.Getpid())
	self.ProcStart++
	if self.Alive() {
		t.Errorf("identity with another start time is alive")
	}
}
