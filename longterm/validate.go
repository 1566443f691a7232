package longterm

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ValidateNamespace reports whether ns is a valid namespace: a slash path
// of 1 to MaxNamespaceLen bytes whose segments, separated by single
// slashes, are 1 to MaxSegmentLen characters of A-Z a-z 0-9 _ - (the
// characters of a session ID). So "users/ada" and "agents/support/facts"
// are namespaces; "", "/users", "users/", "users//ada", "users/../x" and
// "users/a b" are not. The error wraps ErrInvalid and says where the rule
// breaks.
func ValidateNamespace(ns string) error { return checkPath("namespace", ns) }

// ValidatePrefix reports whether prefix is a valid namespace prefix for
// List, Namespaces and Search: empty (every namespace) or a namespace.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return checkPath("prefix", prefix)
}

func checkPath(what, p string) error {
	if p == "" {
		return invalid(what, "it is empty")
	}
	if len(p) > MaxNamespaceLen {
		return invalid(what, "%q… is %d bytes long, the limit is %d", p[:32], len(p), MaxNamespaceLen)
	}
	if p[0] == '/' {
		return invalid(what, "%q starts with \"/\" (write users/ada, not /users/ada)", p)
	}
	if p[len(p)-1] == '/' {
		return invalid(what, "%q ends with \"/\"", p)
	}
	start := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '/':
			if i == start {
				return invalid(what, "%q has an empty segment at byte %d", p, i)
			}
			start = i + 1
		case !idByte(c):
			r, _ := utf8.DecodeRuneInString(p[i:])
			return invalid(what, "%q has %q at byte %d (allowed: A-Z a-z 0-9 _ - in segments separated by /)", p, r, i)
		case i-start >= MaxSegmentLen:
			return invalid(what, "%q has a segment longer than %d characters at byte %d", p, MaxSegmentLen, start)
		}
	}
	return nil
}

// ValidateKey reports whether key is a valid item key: 1 to MaxKeyLen
// bytes of A-Z a-z 0-9 and _ - . : @ + =, not made of dots alone. So
// "favorite-food", "2026-12-04", "ada@example.com" and "project:cairn"
// are keys; "", ".", "..", "a/b" and "a b" are not. The error wraps
// ErrInvalid and names the first offending character and its position.
func ValidateKey(key string) error {
	if key == "" {
		return invalid("key", "it is empty")
	}
	if len(key) > MaxKeyLen {
		return invalid("key", "%q… is %d bytes long, the limit is %d", key[:32], len(key), MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; !idByte(c) && !strings.ContainsRune(".:@+=", rune(c)) {
			r, _ := utf8.DecodeRuneInString(key[i:])
			return invalid("key", "%q has %q at byte %d (allowed: A-Z a-z 0-9 _ - . : @ + =)", key, r, i)
		}
	}
	if strings.Trim(key, ".") == "" {
		return invalid("key", "%q is made of dots alone", key)
	}
	return nil
}

// ValidateLabels reports whether labels are valid: at most MaxLabels, each
// name 1 to MaxLabelNameLen bytes and each value at most MaxLabelValueLen
// bytes of UTF-8 text without control characters.
func ValidateLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return invalid("labels", "%d labels, the limit is %d", len(labels), MaxLabels)
	}
	for name, value := range labels {
		switch {
		case name == "":
			return invalid("labels", "a label name is empty")
		case len(name) > MaxLabelNameLen:
			return invalid("labels", "name %q… is %d bytes long, the limit is %d", name[:16], len(name), MaxLabelNameLen)
		case len(value) > MaxLabelValueLen:
			return invalid("labels", "the value of %q is %d bytes long, the limit is %d", name, len(value), MaxLabelValueLen)
		}
		if err := plainText(name); err != nil {
			return invalid("labels", "name %q %v", name, err)
		}
		if err := plainText(value); err != nil {
			return invalid("labels", "the value of %q %v", name, err)
		}
	}
	return nil
}

// plainText checks that s is UTF-8 without control characters.
func plainText(s string) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return fmt.Errorf("is not UTF-8 at byte %d", i)
			}
		}
		if unicode.IsControl(r) {
			return fmt.Errorf("has control character %q at byte %d", r, i)
		}
	}
	return nil
}

// InPrefix reports whether namespace ns is prefix or under it: "users"
// holds "users" and "users/ada", not "users2". Every namespace is under
// the empty prefix.
func InPrefix(prefix, ns string) bool {
	if prefix == "" || ns == prefix {
		return true
	}
	return len(ns) > len(prefix) && ns[len(prefix)] == '/' && ns[:len(prefix)] == prefix
}

// PathOrder returns the key that orders namespaces as List and Namespaces
// do: ns with each "/" made a space. Compared bytewise, these keys order
// namespaces segment by segment, a namespace before those under it:
// "users", "users/ada", "users/ada/notes", "users/ada-x", "users/adam".
// (Bytewise on the namespaces themselves, "users/ada-x" would come between
// "users" and "users/ada", as '-' comes before '/'.) So the namespaces
// under a prefix are one range of keys (PrefixRange), and cutting
// namespaces to a depth keeps their order.
func PathOrder(ns string) string { return strings.ReplaceAll(ns, "/", " ") }

// ComparePaths compares two namespaces in PathOrder.
func ComparePaths(a, b string) int { return strings.Compare(PathOrder(a), PathOrder(b)) }

// PrefixRange returns the range of PathOrder keys of the namespace prefix
// and those under it: the namespaces ns with lo <= PathOrder(ns) < hi
// ("users" to "users!", since '!' follows ' ', which no namespace holds).
func PrefixRange(prefix string) (lo, hi string) {
	lo = PathOrder(prefix)
	return lo, lo + "!"
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
