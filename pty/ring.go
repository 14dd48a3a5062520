package pty

// ring keeps the last size bytes of a session's output, addressed by absolute offsets in
// the stream (offset 0 is the first byte the program ever printed). Memory grows with the
// output up to size and never beyond, so an idle session that printed little costs little,
// and one that prints gigabytes costs size.
type ring struct {
	size int
	// buf holds bytes [end-len(buf), end). Until it first fills it is a plain prefix of
	// the stream; once len(buf) == size, the byte at offset o lives at buf[o%size].
	buf []byte
	end int64 // total bytes ever written: the offset one past the newest byte
}

func newRing(size int) ring { return ring{size: size} }

// start is the offset of the oldest byte still held.
func (r *ring) start() int64 { return r.end - int64(len(r.buf)) }

func (r *ring) write(p []byte) {
	if free := r.size - len(r.buf); free > 0 {
		k := min(free, len(p))
		if len(r.buf)+k > cap(r.buf) {
			// Grow geometrically but never past size, so the bound is exact.
			c := min(r.size, max(2*cap(r.buf), len(r.buf)+k, 4096))
			nb := make([]byte, len(r.buf), c)
			copy(nb, r.buf)
			r.buf = nb
		}
		r.buf = append(r.buf, p[:k]...)
		r.end += int64(k)
		p = p[k:]
	}
	if len(p) == 0 {
		return
	}
	if len(p) > r.size { // only the last size bytes can survive
		r.end += int64(len(p) - r.size)
		p = p[len(p)-r.size:]
	}
	pos := int(r.end % int64(r.size))
	n := copy(r.buf[pos:], p)
	copy(r.buf, p[n:])
	r.end += int64(len(p))
}

// appendFrom appends the held bytes from offset off (clamped to start) to the end onto dst,
// and returns the offset the copied bytes begin at.
func (r *ring) appendFrom(dst []byte, off int64) ([]byte, int64) {
	off = max(off, r.start())
	if off >= r.end {
		return dst, r.end
	}
	if len(r.buf) < r.size {
		return append(dst, r.buf[off-r.start():]...), off
	}
	pos := int(off % int64(r.size))
	n := int(r.end - off)
	first := min(n, r.size-pos)
	dst = append(dst, r.buf[pos:pos+first]...)
	return append(dst, r.buf[:n-first]...), off
}
