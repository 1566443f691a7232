package longterm

import "testing"

// TestHasToken holds HasToken to Tokens: a text has a token exactly when
// Tokens finds one.
func TestHasToken(t *testing.T) {
	for _, s := range []string{"", " ", "!!! -- ", "a", "Z", "7", "é", "İ", "\u0301", "a\u0301", "\ue000", "٣", "Ⅷ", "½",
		"\xff", "\xff\xfe", "\ufffd", "_", "-", "日本", "✓", "  .x", "\t\n", "🙂", "🙂1"} {
		if got, want := HasToken(s), len(Tokens(s)) > 0; got != want {
			t.Errorf("HasToken(%q) = %v, want %v (Tokens: %q)", s, got, want, Tokens(s))
		}
	}
}

func FuzzHasToken(f *testing.F) {
	f.Add("hello")
	f.Add("\u0301\ufffd!")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := HasToken(s), len(Tokens(s)) > 0; got != want {
			t.Errorf("HasToken(%q) = %v, want %v", s, got, want)
		}
	})
}
