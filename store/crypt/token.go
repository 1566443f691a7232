package crypt

import (
	"strconv"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// makeToken returns the token of sealed, a value sealed by the data key
// dkid. A token is one sealed value as text, built by sealToken and read
// by ParseToken (sealed.go): "cairn1.<data key id>.<base64url of
// nonce‖ciphertext‖tag>". The data key ID says which data key sealed it.
func makeToken(dkid string, sealed []byte) string { return sealToken(dkid, sealed) }

func parseToken(tok string) (dkid string, sealed []byte, ok bool) { return ParseToken(tok) }

func isToken(s string) bool {
	_, _, ok := parseToken(s)
	return ok
}

// eventAAD returns the additional data bound into a sealed event; firstAAD
// and keyAAD, that bound into the sealed start of a session's first
// message and into a wrapped data key. The additional data bound into each
// sealed value says what it is and where it belongs: a value moved to
// another namespace, session, position, kind or run does not open.
func eventAAD(ns, id string, e cairn.Event) []byte {
	return []byte("cairn event v1\x00" + ns + "\x00" + id + "\x00" + strconv.FormatInt(e.Seq, 10) + "\x00" + string(e.Kind) + "\x00" + e.Run)
}

func firstAAD(ns, id string) []byte {
	return []byte("cairn first message v1\x00" + ns + "\x00" + id)
}

func keyAAD(ns, id, dkid string) []byte {
	return []byte("cairn data key v1\x00" + ns + "\x00" + id + "\x00" + dkid)
}

// maxFirst is how much of the first user message a sealed message.user
// keeps for listings: its token must fit in driver.MaxFirstMessage bytes.
const maxFirst = (driver.MaxFirstMessage-len(TokenPrefix)-9)*3/4 - 12 - 16
