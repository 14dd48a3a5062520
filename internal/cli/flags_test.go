package cli

import "testing"

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"4MiB", 4 << 20, true}, {"512KiB", 512 << 10, true}, {"100B", 100, true},
		{"100", 100, true}, {"1GiB", 1 << 30, true}, {" 2 MiB", 2 << 20, true},
		{"", 0, false}, {"0", 0, false}, {"-1KiB", 0, false}, {"4MB", 0, false}, {"KiB", 0, false},
		{"99999999999999GiB", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseByteSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d (ok=%v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
	var b byteSize
	for _, s := range []string{"4MiB", "3KiB", "7B"} {
		if err := b.Set(s); err != nil || b.String() != s {
			t.Errorf("byteSize round trip %q = %q, %v", s, b.String(), err)
		}
	}
}
