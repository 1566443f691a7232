// Package text holds the string helpers the packages of cairn share.
package text

import (
	"net/url"
	"strings"
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
