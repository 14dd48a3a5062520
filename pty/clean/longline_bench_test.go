package clean

import (
	"bytes"
	"testing"
)

func BenchmarkCapped_longLine(b *testing.B) {
	data := bytes.Repeat([]byte("a"), 8<<20)
	for _, cols := range []int{0, 80} {
		b.Run(map[int]string{0: "nowrap", 80: "wrap80"}[cols], func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				k := NewCapped(16384, len(data))
				for off := 0; off < len(data); off += 64 << 10 {
					k.WriteAt(data[off:off+64<<10], int64(off), []Width{{0, cols}})
				}
				k.Text(0, true)
			}
		})
	}
	b.Run("lines100wrap80", func(b *testing.B) {
		d := bytes.Repeat(append(bytes.Repeat([]byte("a"), 100), '\n'), (8<<20)/101)
		b.SetBytes(int64(len(d)))
		for i := 0; i < b.N; i++ {
			k := NewCapped(16384, len(d))
			k.WriteAt(d, 0, []Width{{0, 80}})
			k.Text(0, true)
		}
	})
}
