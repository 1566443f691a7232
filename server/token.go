package server

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// minTokenBits is the least a token's characters must carry by their
// counts (CheckToken). A random token of 16 hexadecimal digits, the
// shortest random token of MinTokenLength characters in common use,
// carries 28.7 bits by this measure at the least, in 5 million drawn; a
// NewToken, 176 at the least.
const minTokenBits = 28

// CheckToken reports whether tok may be an access token: at least
// MinTokenLength characters, no white space, and not guessable. A token
// is guessable when it is a shorter part repeated ("aaaaaaaaaaaaaaaa",
// "abababababababab", "passwordpassword"), when its characters are too
// few or too unevenly used ("aaaaaaaaaaaabcde": minTokenBits by the
// counts of its characters), or when it is mostly a run of characters
// that follow each other ("abcdefghijklmnop", "9876543210zyxwvu").
// Random tokens (NewToken; `head -c 32 /dev/urandom | base64`) pass.
//
// The error says what is wrong with the token, without quoting it, as the
// end of a sentence whose subject is the token ("is one character
// repeated"), for the caller to name the token.
func CheckToken(tok string) error {
	n := utf8.RuneCountInString(tok)
	switch {
	case n < MinTokenLength:
		return fmt.Errorf("is %d characters long, the minimum is %d", n, MinTokenLength)
	case strings.ContainsAny(tok, " \t\r\n"):
		return fmt.Errorf("holds white space")
	}
	rs := []rune(tok)
	if p := period(rs); p == 1 {
		return fmt.Errorf("is easy to guess: it is one character repeated")
	} else if p > 0 {
		return fmt.Errorf("is easy to guess: it is a part of %d characters repeated", p)
	}
	count := map[rune]int{}
	for _, r := range rs {
		count[r]++
	}
	bits := 0.0
	for _, c := range count {
		bits -= float64(c) * math.Log2(float64(c)/float64(n))
	}
	if bits < minTokenBits {
		return fmt.Errorf("is easy to guess: its %d characters are %d different ones, unevenly used (about %.0f bits where %d are needed)",
			n, len(count), bits, minTokenBits)
	}
	steps := map[int]int{}
	for i := 1; i < n; i++ {
		if d := int(rs[i]) - int(rs[i-1]); d != 0 {
			if steps[d]++; 4*steps[d] >= 3*(n-1) {
				return fmt.Errorf("is easy to guess: it is mostly a run of characters that follow each other")
			}
		}
	}
	return nil
}

// period returns the length of the shortest part whose repetition makes
// rs (the last repetition may be cut short), when it repeats at least
// twice; 0 otherwise.
func period(rs []rune) int {
next:
	for p := 1; 2*p <= len(rs); p++ {
		for i := p; i < len(rs); i++ {
			if rs[i] != rs[i-p] {
				continue next
			}
		}
		return p
	}
	return 0
}
