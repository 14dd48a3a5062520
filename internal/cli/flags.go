package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// flagsFromEnv sets every flag not given on the command line from its environment variable,
// if that is set: --max-wait from MCP_HARNESS_MAX_WAIT.
func flagsFromEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := EnvPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = usageError{fmt.Errorf("%s=%q: %v", name, v, e)}
			}
		}
	})
	return err
}

// byteSize is a flag value for sizes: a number of bytes with an optional B, KiB or MiB
// (or GiB) suffix.
type byteSize int64

func (b *byteSize) String() string {
	switch n := int64(*b); {
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	case n != 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "KiB"
	default:
		return strconv.FormatInt(n, 10) + "B"
	}
}

func (b *byteSize) Set(s string) error {
	n, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) Type() string { return "size" }

// ParseByteSize reads a size as the size flags take it: a positive number of bytes with an
// optional B, KiB, MiB or GiB suffix, at most 1TiB.
func ParseByteSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a size: want a positive number with an optional B, KiB, MiB or GiB suffix", s)
	}
	return n * mult, nil
}

// checkFlagValues refuses the values of fs that make no sense: a negative duration or
// count in any flag, and zero in the flags named in positive, for which zero means nothing
// (a --max-wait of 0s would make every wait return at once). Sizes check themselves
// (byteSize refuses anything under one byte).
func checkFlagValues(fs *pflag.FlagSet, positive ...string) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		var neg, zero bool
		switch f.Value.Type() {
		case "duration":
			d, _ := time.ParseDuration(f.Value.String())
			neg, zero = d < 0, d == 0
		case "int", "int64":
			neg, zero = strings.HasPrefix(f.Value.String(), "-"), f.Value.String() == "0"
		default:
			return
		}
		want := "0 or more"
		mustBePositive := false
		for _, p := range positive {
			if p == f.Name {
				want, mustBePositive = "more than 0", true
			}
		}
		if neg || zero && mustBePositive {
			err = usagef("--%s %s: want %s", f.Name, f.Value, want)
		}
	})
	return err
}
