package crypt

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// KeySize is the size of a master key and of a session's data key: 32
// bytes, for AES-256.
const KeySize = 32

// Key is a master key: 32 secret bytes and the ID that names it in what
// it wraps. The ID is not secret.
type Key struct {
	ID     string
	secret []byte
}

var kidRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// NewKey returns a Key holding secret, which must be KeySize bytes. An
// empty id is derived from the secret: the first 8 hex digits of its
// SHA-256.
func NewKey(id string, secret []byte) (Key, error) {
	if len(secret) != KeySize {
		return Key{}, fmt.Errorf("key is %d bytes, want %d", len(secret), KeySize)
	}
	if id == "" {
		sum := sha256.Sum256(secret)
		id = hex.EncodeToString(sum[:4])
	}
	if !kidRe.MatchString(id) {
		return Key{}, fmt.Errorf("key id %q: want 1-64 characters of A-Z a-z 0-9 _ -", id)
	}
	return Key{ID: id, secret: slices.Clone(secret)}, nil
}

// Fingerprint returns a digest of the key's secret that tells two keys
// apart whatever their IDs: 16 hex digits of a SHA-256 of the secret,
// distinct from the digest a derived ID is made of. Like the ID, it is not
// secret; an encrypted namespace's marker records it beside the ID, so
// that another key given the same ID is not taken for the namespace's.
func (k Key) Fingerprint() string {
	h := sha256.New()
	h.Write([]byte("cairn master key fingerprint\x00"))
	h.Write(k.secret)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// GenerateKey returns a new random key with a derived ID.
func GenerateKey() (Key, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return Key{}, fmt.Errorf("generate key: %w", err)
	}
	return NewKey("", b)
}

// ParseKey reads a key file's contents, in one of three forms:
//
//   - raw: exactly 32 bytes, taken as they are (head -c 32 /dev/urandom);
//   - raw with an ID: "ID:" and then exactly 32 bytes;
//   - text: optionally "ID:", then the 32 bytes as 64 hex digits or as
//     base64 (standard or URL alphabet, padded or not); white space around
//     it is ignored.
//
// The forms cannot be mistaken for one another: written as text, 32 bytes
// take at least 43 characters, so a file (or the part after "ID:") of
// exactly 32 bytes is never text, and text is never 32 bytes long. A raw
// key is never trimmed, since any byte may be part of it.
func ParseKey(data []byte) (Key, error) {
	if len(data) == KeySize {
		return NewKey("", data)
	}
	if i := bytes.IndexByte(data, ':'); i > 0 && len(data)-i-1 == KeySize && kidRe.Match(data[:i]) {
		return NewKey(string(data[:i]), data[i+1:])
	}
	s := strings.TrimSpace(string(data))
	id := ""
	if i := strings.IndexByte(s, ':'); i >= 0 {
		id, s = s[:i], strings.TrimSpace(s[i+1:])
	}
	secret, err := decodeSecret(s, len(data))
	if err != nil {
		return Key{}, err
	}
	return NewKey(id, secret)
}

func decodeSecret(s string, size int) ([]byte, error) {
	if len(s) == 2*KeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("key is not %d bytes: not hex (64 digits), not base64 (44 characters), and not raw (a file of exactly %d bytes; this one has %d)",
		KeySize, KeySize, size)
}

// LoadKeyFile reads and parses a key file (see ParseKey). Make one with
//
//	head -c 32 /dev/urandom | base64 > cairn.key
//
// or, raw, head -c 32 /dev/urandom > cairn.key.
func LoadKeyFile(path string) (Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("read key file: %w", err)
	}
	k, err := ParseKey(data)
	if err != nil {
		return Key{}, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// Encode returns the key in the form ParseKey reads: "ID:base64".
func (k Key) Encode() string {
	return k.ID + ":" + base64.StdEncoding.EncodeToString(k.secret)
}

// Keyring holds the current master key, which wraps new data keys, and
// older keys that still unwrap the data keys they wrapped.
type Keyring struct {
	current Key
	byID    map[string]Key
}

// NewKeyring returns a keyring whose current key is current, also able to
// unwrap with old. Two different keys with one ID are an error.
func NewKeyring(current Key, old ...Key) (*Keyring, error) {
	r := &Keyring{current: current, byID: map[string]Key{}}
	for _, k := range append([]Key{current}, old...) {
		if len(k.secret) != KeySize {
			return nil, errors.New("keyring: a key is not set")
		}
		if o, ok := r.byID[k.ID]; ok && !slices.Equal(o.secret, k.secret) {
			return nil, fmt.Errorf("keyring: two different keys have the id %q", k.ID)
		}
		r.byID[k.ID] = k
	}
	return r, nil
}

// Current returns the ID of the key that wraps new data keys.
func (r *Keyring) Current() string { return r.current.ID }

// IDs returns the IDs of every key in the ring, sorted.
func (r *Keyring) IDs() []string {
	ids := make([]string, 0, len(r.byID))
	for id := range r.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// has reports whether the keyring holds the master key kid.
func (r *Keyring) has(kid string) bool {
	_, ok := r.byID[kid]
	return ok
}

// wrap seals a data key with the current master key.
func (r *Keyring) wrap(dek, aad []byte) (kid string, sealed []byte, err error) {
	sealed, err = seal(r.current.secret, dek, aad)
	return r.current.ID, sealed, err
}

// unwrap opens a data key wrapped by the key named kid.
func (r *Keyring) unwrap(kid string, sealed, aad []byte) ([]byte, error) {
	k, ok := r.byID[kid]
	if !ok {
		return nil, fmt.Errorf("%w: wrapped by key %s; the keyring holds %s", ErrUnknownKey, kid, strings.Join(r.IDs(), ", "))
	}
	dek, err := open(k.secret, sealed, aad)
	if err != nil || len(dek) != KeySize {
		return nil, fmt.Errorf("%w: data key wrapped by key %s does not open with it", ErrTampered, kid)
	}
	return dek, nil
}

// seal encrypts plain with AES-256-GCM under key and returns nonce‖ciphertext.
func seal(key, plain, aad []byte) ([]byte, error) {
	g, err := gcm(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, g.NonceSize(), g.NonceSize()+len(plain)+g.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return g.Seal(nonce, nonce, plain, aad), nil
}

// open reverses seal; it fails if anything, the additional data included,
// differs from what was sealed.
func open(key, sealed, aad []byte) ([]byte, error) {
	g, err := gcm(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < g.NonceSize()+g.Overhead() {
		return nil, errors.New("sealed value is too short")
	}
	n := g.NonceSize()
	return g.Open(nil, sealed[:n], sealed[n:], aad)
}

func gcm(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// dataKeyID names a data key in the tokens it seals without revealing it.
func dataKeyID(dek []byte) string {
	h := sha256.New()
	h.Write([]byte("cairn data key id\x00"))
	h.Write(dek)
	return hex.EncodeToString(h.Sum(nil)[:4])
}
