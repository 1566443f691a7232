package driver_test

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

func TestPrefixRange(t *testing.T) {
	cases := []struct {
		prefix, lo, hi string
		ok             bool
	}{
		{"ab", "ab", "ac", true},
		{"a_", "a_", "a`", true},
		{"z", "z", "{", true},
		{"Z-9", "Z-9", "Z-:", true},
		{"", "", "", false},
		{"a/b", "", "", false},
		{"é", "", "", false},
		{strings.Repeat("a", cairn.MaxIDLen+1), "", "", false},
	}
	for _, c := range cases {
		lo, hi, ok := driver.PrefixRange(c.prefix)
		if lo != c.lo || hi != c.hi || ok != c.ok {
			t.Errorf("PrefixRange(%q) = %q, %q, %v; want %q, %q, %v", c.prefix, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
}
