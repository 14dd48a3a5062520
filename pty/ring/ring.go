// Package ring keeps the last bytes of a stream in bounded memory, addressed by absolute
// offsets in the stream: a session's output, which its reader writes and every read,
// wait and screen copies out of. It is not safe for concurrent use; the session's lock
// guards it.
package ring

// ringBlock is the unit a Buffer's memory grows by.
const ringBlock = 64 << 10

// Buffer keeps the last size bytes of a session's output, addressed by absolute offsets in
// the stream (offset 0 is the first byte the program ever printed). Memory grows with the
// output up to size and never beyond, so an idle session that printed little costs little,
// and one that prints gigabytes costs size.
//
// The bytes live in blocks of ringBlock bytes, made as the output first reaches them:
// the byte at offset o is at position o%size, in block (o%size)/ringBlock. Growing a
// single buffer by doubling left each outgrown buffer behind for the collector, as much
// again as the ring at its largest, in every session's peak.
type Buffer struct {
	size   int
	blocks [][]byte
	end    int64 // total bytes ever written: the offset one past the newest byte
}

// New returns an empty Buffer that keeps the last size bytes written to it.
func New(size int) Buffer { return Buffer{size: size} }

// Start is the offset of the oldest byte still held.
func (r *Buffer) Start() int64 { return max(0, r.end-int64(r.size)) }

// End is the offset one past the newest byte: how many bytes were ever written.
func (r *Buffer) End() int64 { return r.end }

// Held is how many bytes of memory the ring holds.
func (r *Buffer) Held() int {
	n := 0
	for _, b := range r.blocks {
		n += len(b)
	}
	return n
}

// block returns the block holding position pos and pos's index in it; with grow, the
// block (and any before it) is made if the output first reaches it now.
func (r *Buffer) block(pos int, grow bool) ([]byte, int) {
	i := pos / ringBlock
	// A write longer than the ring skips ahead (write), possibly past blocks never made.
	for grow && i >= len(r.blocks) {
		k := len(r.blocks)
		r.blocks = append(r.blocks, make([]byte, min(ringBlock, r.size-k*ringBlock)))
	}
	return r.blocks[i], pos % ringBlock
}

// Write appends p to the stream, dropping the oldest bytes beyond the size.
func (r *Buffer) Write(p []byte) {
	if len(p) > r.size { // only the last size bytes can survive
		r.end += int64(len(p) - r.size)
		p = p[len(p)-r.size:]
	}
	for len(p) > 0 {
		b, j := r.block(int(r.end%int64(r.size)), true)
		n := copy(b[j:], p)
		p = p[n:]
		r.end += int64(n)
	}
}

// AppendFrom appends the held bytes from offset off (clamped to start) to the end onto dst,
// and returns the offset the copied bytes begin at.
func (r *Buffer) AppendFrom(dst []byte, off int64) ([]byte, int64) {
	return r.AppendRange(dst, off, r.end)
}

// AppendRange is AppendFrom up to offset to (clamped to End).
func (r *Buffer) AppendRange(dst []byte, from, to int64) ([]byte, int64) {
	from = max(from, r.Start())
	to = min(to, r.end)
	for o := from; o < to; {
		b, j := r.block(int(o%int64(r.size)), false)
		n := min(int64(len(b)-j), to-o)
		dst = append(dst, b[j:j+int(n)]...)
		o += n
	}
	return dst, from
}
