package longterm

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/text"
)

// Tokens returns the tokens of text as search sees them: the runs of
// letters, digits and private-use characters (Unicode categories L, N and
// Co), in lower case, in order. Everything else separates tokens. It is
// the rule SQLite's FTS5 unicode61 tokenizer follows, so that every
// backend splits a text the same way.
func Tokens(text string) []string {
	out := make([]string, 0, countTokens(text))
	start := -1   // where the token being read begins; -1 between tokens
	plain := true // the token holds only lower-case ASCII letters and digits
	for i := 0; i < len(text); {
		c, size, in := text[i], 1, false
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			in = true
		case c >= 'A' && c <= 'Z':
			in, plain = true, false
		case c >= utf8.RuneSelf:
			var r rune
			r, size = utf8.DecodeRuneInString(text[i:])
			if in = IsTokenRune(r); in {
				plain = false
			}
		}
		if in && start < 0 {
			start = i
		} else if !in && start >= 0 {
			out = appendToken(out, text[start:i], plain)
			start, plain = -1, true
		}
		i += size
	}
	if start >= 0 {
		out = appendToken(out, text[start:], plain)
	}
	return out
}

// countTokens returns len(Tokens(text)), without making them.
func countTokens(text string) int {
	n, in := 0, false
	for i := 0; i < len(text); {
		c, size, tok := text[i], 1, false
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			tok = true
		case c >= utf8.RuneSelf:
			var r rune
			r, size = utf8.DecodeRuneInString(text[i:])
			tok = IsTokenRune(r)
		}
		if tok && !in {
			n++
		}
		in = tok
		i += size
	}
	return n
}

// appendToken appends tok to out in lower case: as it is when plain says
// that it already is.
func appendToken(out []string, tok string, plain bool) []string {
	if !plain {
		tok = strings.ToLower(tok)
	}
	return append(out, tok)
}

// HasToken reports whether text holds a token: whether Tokens(text) is
// not empty, without making them.
func HasToken(text string) bool { return strings.IndexFunc(text, IsTokenRune) >= 0 }

// IsTokenRune reports whether r belongs in a token, as Tokens reads
// them: a letter, a digit or a private-use character.
func IsTokenRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r))
}

// Phrases returns the phrases of a query as Search reads it: each word
// (a run of characters between white space) is the phrase of its Tokens.
// Words without a token are dropped, a phrase given twice counts once, and
// only the first MaxQueryPhrases distinct phrases are kept. Nothing in a
// query is syntax: quotes, stars, minus signs and words such as OR or
// NEAR are punctuation and words like any other.
func Phrases(query string) [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, w := range strings.Fields(query) {
		toks := Tokens(w)
		if len(toks) == 0 {
			continue
		}
		k := strings.Join(toks, " ")
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, toks)
		if len(out) == MaxQueryPhrases {
			break
		}
	}
	return out
}

// DeriveText returns the text Put gives an item whose Text is empty: the
// object keys and the strings, numbers and booleans of the JSON value, in
// document order, separated by spaces. It returns "" for a value that is
// not valid JSON.
func DeriveText(value json.RawMessage) string { return text.JSONText(value) }
