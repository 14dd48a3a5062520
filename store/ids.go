package store

import (
	"crypto/rand"
	"sync"
	"time"
)

// crockford is Crockford's base32 alphabet: no I, L, O or U, so ids read aloud and copied by
// a model survive, and its order matches ASCII order, so encoded times sort as strings.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var idClock struct {
	sync.Mutex
	last int64
}

// NewID returns prefix followed by a 16-character id: 10 characters of milliseconds since
// the epoch and 6 random ones. Ids from one process sort in creation order as plain
// strings (a second id in the same millisecond takes the next millisecond); ids from
// different processes sort by creation time to the millisecond. They are safe as file
// names.
func NewID(prefix string) string {
	idClock.Lock()
	ms := time.Now().UnixMilli()
	if ms <= idClock.last {
		ms = idClock.last + 1
	}
	idClock.last = ms
	idClock.Unlock()

	var b [16]byte
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	var r [6]byte
	rand.Read(r[:])
	for i, x := range r {
		b[10+i] = crockford[x&31]
	}
	return prefix + string(b[:])
}
