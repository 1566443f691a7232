package crypt_test

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/store/crypt"
)

func TestParseKey(t *testing.T) {
	secret := make([]byte, 32)
	for i := range secret {
		secret[i] = byte(i)
	}
	want, err := crypt.NewKey("", secret)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.ID) != 8 {
		t.Fatalf("derived id %q, want 8 hex digits", want.ID)
	}
	// A raw key that starts and ends with white space and holds a colon.
	raw := append([]byte(" \n:"), secret[3:29]...)
	raw = append(raw, '\t', ' ', '\n')
	rawKey := mustKey(t, raw)
	tests := []struct {
		in, id, err string
	}{
		{hex.EncodeToString(secret) + "\n", want.ID, ""},
		{base64.StdEncoding.EncodeToString(secret), want.ID, ""},
		{" " + base64.RawURLEncoding.EncodeToString(secret) + " \n", want.ID, ""},
		{"prod-2026:" + base64.StdEncoding.EncodeToString(secret), "prod-2026", ""},
		{want.Encode(), want.ID, ""},
		{base64.StdEncoding.EncodeToString(secret[:16]), "", "not 32 bytes"},
		{"", "", "not 32 bytes"},
		{"bad id!:" + hex.EncodeToString(secret), "", "key id"},
		// Raw: exactly 32 bytes, any bytes, never trimmed; or "ID:" and 32 bytes.
		{string(secret), want.ID, ""},
		{"k1:" + string(secret), "k1", ""},
		{string(raw), rawKey.ID, ""},
		{string(raw) + "\n", "", "this one has 33"},
		{string(secret[:31]), "", "this one has 31"},
		// 32 printable bytes that would also be valid base64 text if they
		// were longer: the length says raw.
		{strings.Repeat("A", 32), mustKey(t, []byte(strings.Repeat("A", 32))).ID, ""},
	}
	for _, tt := range tests {
		k, err := crypt.ParseKey([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseKey(%q): got %v, want an error saying %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || k.ID != tt.id {
			t.Errorf("ParseKey(%q) = id %q, %v; want %q", tt.in, k.ID, err, tt.id)
		}
	}
}

func mustKey(t *testing.T, secret []byte) crypt.Key {
	t.Helper()
	k, err := crypt.NewKey("", secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestLoadKeyFile(t *testing.T) {
	k, err := crypt.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cairn.key")
	if err := os.WriteFile(path, []byte(k.Encode()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := crypt.LoadKeyFile(path)
	if err != nil || got.ID != k.ID {
		t.Fatalf("LoadKeyFile = %q, %v; want %q", got.ID, err, k.ID)
	}
	if _, err := crypt.LoadKeyFile(path + ".missing"); err == nil {
		t.Error("LoadKeyFile of a missing file succeeded")
	}
}

func TestNewKeyring(t *testing.T) {
	a, _ := crypt.GenerateKey()
	b, _ := crypt.GenerateKey()
	r, err := crypt.NewKeyring(a, b, a)
	if err != nil || r.Current() != a.ID || len(r.IDs()) != 2 {
		t.Fatalf("NewKeyring = %v, %v; want current %s and 2 keys", r, err, a.ID)
	}
	clash, _ := crypt.ParseKey([]byte(a.ID + ":" + strings.SplitN(b.Encode(), ":", 2)[1]))
	if _, err := crypt.NewKeyring(a, clash); err == nil {
		t.Error("NewKeyring with two different keys of one id succeeded")
	}
}
