package server

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

func TestCheckToken(t *testing.T) {
	for _, tc := range []struct{ tok, want string }{
		{"short", "is 5 characters long, the minimum is 16"},
		{"ééééééééééééééé", "is 15 characters long"},
		{"a token with spaces in it", "holds white space"},
		{"aaaaaaaaaaaaaaaa", "one character repeated"},
		{strings.Repeat("x", 64), "one character repeated"},
		{"ééééééééééééééééé", "one character repeated"},
		{"abababababababab", "a part of 2 characters repeated"},
		{"abcabcabcabcabca", "a part of 3 characters repeated"},
		{"aabbaabbaabbaabb", "a part of 4 characters repeated"},
		{"passwordpassword", "a part of 8 characters repeated"},
		{"0000111100001111", "a part of 8 characters repeated"},
		{"aaaaaaaaaaaabcde", "its 16 characters are 5 different ones, unevenly used"},
		{"aaaaaaaaaaaaaaab", "its 16 characters are 2 different ones"},
		{"aabbbaabababbbaa", "its 16 characters are 2 different ones"},
		{"abcdefghijklmnop", "a run of characters"},
		{"ponmlkjihgfedcba", "a run of characters"},
		{"0123456789abcdef", "a run of characters"},
		{"acegikmoqsuwyace", "a run of characters"},
	} {
		err := CheckToken(tc.tok)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckToken(%q) = %v, want an error containing %q", tc.tok, err, tc.want)
			continue
		}
		if len(tc.tok) >= MinTokenLength && strings.Contains(err.Error(), tc.tok[:4]) {
			t.Errorf("CheckToken(%q) = %v: the error quotes the token", tc.tok, err)
		}
	}
	for _, tok := range []string{
		testToken,
		"correct-horse-battery-staple",
		"9f86d081884c7d65", // 16 hexadecimal digits
		"4096739415283510", // 16 decimal digits
		"f47ac10b-58cc-4372-a567-0e02b2c3d479",
	} {
		if err := CheckToken(tok); err != nil {
			t.Errorf("CheckToken(%q) = %v, want it accepted", tok, err)
		}
	}
	// Random tokens pass: those NewToken makes (cairn serve's), those of
	// `head -c 32 /dev/urandom | base64`, which cairn serve's hint
	// suggests, and those of `openssl rand -hex 16`.
	for range 20000 {
		var b [32]byte
		rand.Read(b[:])
		for _, tok := range []string{NewToken(), base64.StdEncoding.EncodeToString(b[:]), hex.EncodeToString(b[:16])} {
			if err := CheckToken(tok); err != nil {
				t.Fatalf("CheckToken(%q) = %v, want a random token accepted", tok, err)
			}
		}
	}
}
