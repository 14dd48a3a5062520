package ring

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRing checks the ring against the obvious model: the whole stream, of which the
// last size bytes are kept.
func TestRing(t *testing.T) {
	for _, size := range []int{1, 7, 4096, 10000, 2*ringBlock + 1000} {
		r := New(size)
		var stream []byte
		rng := rand.New(rand.NewPCG(1, uint64(size)))
		for i := range 300 {
			n := rng.IntN(3*size/2 + 2)
			p := make([]byte, n)
			for j := range p {
				p[j] = byte(i + j)
			}
			r.Write(p)
			stream = append(stream, p...)
			if r.end != int64(len(stream)) {
				t.Fatalf("size %d: end = %d, want %d", size, r.end, len(stream))
			}
			if held := r.Held(); held > size || held > len(stream)+ringBlock {
				t.Fatalf("size %d: %d bytes held after %d written, want at most the size and a block more than written", size, held, len(stream))
			}
			wantStart := max(0, len(stream)-size)
			for _, off := range []int64{0, int64(wantStart), r.end - 1, r.end, int64(rng.IntN(len(stream) + 1))} {
				got, from := r.AppendFrom(nil, off)
				wantFrom := min(max(off, int64(wantStart)), r.end)
				if from != wantFrom || !bytes.Equal(got, stream[wantFrom:]) {
					t.Fatalf("size %d: appendFrom(%d) = %d bytes from %d, want %d bytes from %d", size, off, len(got), from, len(stream)-int(wantFrom), wantFrom)
				}
			}
		}
	}
}

// A first write longer than the ring lands past blocks the ring has not made yet: the
// ring keeps its last size bytes, as any write longer than the ring does.
func TestRing_FirstWriteLongerThanRing(t *testing.T) {
	r := New(2*ringBlock + 1000)
	p := make([]byte, 4*ringBlock)
	for i := range p {
		p[i] = byte(i % 251)
	}
	r.Write(p)
	got, from := r.AppendFrom(nil, 0)
	if from != int64(len(p)-r.size) || !bytes.Equal(got, p[len(p)-r.size:]) {
		t.Fatalf("held %d bytes from %d, want the last %d bytes of the write", len(got), from, r.size)
	}
}
