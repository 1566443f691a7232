// Package text holds the string helpers the packages of cairn share.
package text

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Truncate shortens s to at most n bytes without splitting a UTF-8 rune.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !runeStart(s[n]) {
		n--
	}
	return s[:n]
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// RedactURL returns raw with any password replaced by "xxxxx", for
// messages. A URL that does not parse keeps its text but for the password
// of its user information, the part between the first ':' after "//" and
// the last '@' before the path.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil {
		return u.Redacted()
	}
	i := strings.Index(raw, "//")
	if i < 0 {
		return raw
	}
	auth := raw[i+2:]
	if j := strings.IndexAny(auth, "/?#"); j >= 0 {
		auth = auth[:j]
	}
	at := strings.LastIndexByte(auth, '@')
	colon := strings.IndexByte(auth, ':')
	if at < 0 || colon < 0 || colon > at {
		return raw
	}
	return raw[:i+2+colon+1] + "xxxxx" + raw[i+2+at:]
}

// JSONText returns the object keys and the strings, numbers and booleans
// of a JSON value, in document order, separated by spaces: the words a
// text search sees in it. It returns what it read before the first error,
// "" for a value that is not JSON. A name twice in an object and invalid
// UTF-8 (read as U+FFFD) are not errors here.
func JSONText(value []byte) string {
	dec := jsontext.NewDecoder(bytes.NewReader(value), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var b strings.Builder
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			break
		}
		var s string
		switch tok.Kind() {
		case '"', '0':
			s = tok.String() // a string unquoted, a number as written
		case 't':
			s = "true"
		case 'f':
			s = "false"
		}
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}
