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
	var out []string
	start := -1
	for i, r := range text {
		if IsTokenRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, strings.ToLower(text[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, strings.ToLower(text[start:]))
	}
	return out
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
