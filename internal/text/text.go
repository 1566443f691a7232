// Package text holds the string helpers the packages of cairn share.
package text

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"
	"sync"

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
	dec := jsonDecoders.Get().(*jsontext.Decoder)
	defer jsonDecoders.Put(dec)
	dec.Reset(bytes.NewReader(value), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	b := make([]byte, 0, len(value))
	for {
		var (
			k    = dec.PeekKind()
			mark = len(b)
			err  error
		)
		if len(b) > 0 {
			b = append(b, ' ')
		}
		switch k {
		case '"', '0':
			var v jsontext.Value
			if v, err = dec.ReadValue(); err == nil && k == '"' {
				b, _ = jsontext.AppendUnquote(b, v) // invalid UTF-8 comes out as U+FFFD
			} else if err == nil {
				b = append(b, v...) // a number as written
			}
		case 't', 'f':
			var tok jsontext.Token
			if tok, err = dec.ReadToken(); err == nil {
				b = strconv.AppendBool(b, tok.Bool())
			}
		default: // 0 at the end or an error, else a delimiter or null
			_, err = dec.ReadToken()
		}
		if len(b) == mark+1 && mark > 0 || err != nil {
			b = b[:mark] // nothing was added (an empty string), or nothing read
		}
		if err != nil {
			return string(b)
		}
	}
}

// jsonDecoders keeps JSONText's decoders, with their buffers, for reuse.
var jsonDecoders = sync.Pool{New: func() any { return jsontext.NewDecoder(bytes.NewReader(nil)) }}
