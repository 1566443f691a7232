package crypt

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// LongTermKeys is the namespace under which an encrypting long-term store
// keeps its keys in the store it wraps: the index key at LongTermKeys, key
// "index", and the data key of namespace NS at LongTermKeys/NS, key
// "data". Namespaces under it are refused through the encrypting store.
const LongTermKeys = longterm.KeysNamespace

// LongTerm is an encrypting long-term store (see WrapLongTerm). It is a
// longterm.Sweeper when the store it wraps is one.
type LongTerm interface {
	longterm.Store
	// Inner returns the wrapped store, which holds the sealed items.
	Inner() longterm.Store
	// Rekey wraps the store's keys (the text index's and each
	// namespace's data key) by the keyring's current master key, so that
	// the store opens with that key alone; no item is rewritten. The
	// keyring must also hold the key they are wrapped by now: one that
	// cannot open the index key is refused (ErrUnknownKey) before
	// anything is written. Each key is replaced on its version, so it is
	// safe beside other writers, and a run after an interruption goes on
	// where it stopped. progress, if not nil, is called after each key.
	Rekey(ctx context.Context, progress func(done, total int)) (LongTermRekeyResult, error)
}

// longTerm seals items before they reach inner and opens them on the way
// back.
type longTerm struct {
	inner longterm.Store
	ring  *Keyring
	opts  longterm.Options
	guard ltdriver.Guard

	mu    sync.Mutex
	index []byte             // the index key, once read or made
	keys  map[string]*nsKeyT // the data keys of namespaces, by namespace
}

// nsKeyT is a namespace's data key, opened.
type nsKeyT struct {
	id  string
	dek []byte
}

type sweepingLongTerm struct{ *longTerm }

var (
	_ LongTerm         = (*longTerm)(nil)
	_ longterm.Sweeper = sweepingLongTerm{}
)

// WrapLongTerm returns a long-term store that encrypts, before they reach
// inner, each item's value, text and vector, and opens them on the way
// back; what stays in clear is the namespace, the key, the labels, the
// provenance, the version and the times. The text
// index of the store it wraps holds, for each word, a keyed hash
// (HMAC-SHA-256 under the store's index key): searches match words without
// the words being stored. Vector search opens the vectors of the items
// under the prefix and compares them here. docs/MEMORY.md tells what this
// hides and what it does not.
//
// opts are the encrypting store's: its Embedder computes vectors from the
// texts before they are sealed, and its MaxItemSize bounds the items
// before sealing; open inner without an Embedder, with InnerItemSize of
// that limit and with Sealed set (longterm.Open refuses an encrypted
// store otherwise). Keys are kept in inner under LongTermKeys, wrapped by the
// keyring's master keys. Closing the store closes inner.
func WrapLongTerm(inner longterm.Store, ring *Keyring, opts longterm.Options) (LongTerm, error) {
	if ring == nil {
		return nil, errors.New("crypt: wrap long-term store: no keyring")
	}
	s := &longTerm{inner: inner, ring: ring, opts: opts.WithDefaults(), keys: map[string]*nsKeyT{}}
	if _, ok := inner.(longterm.Sweeper); ok {
		return sweepingLongTerm{s}, nil
	}
	return s, nil
}

// InnerItemSize returns the item size limit to open an inner store with,
// so that it takes the sealed form of every item that n allows (0: the
// default): sealing adds a third (base64) to the value, text and vector,
// and a word of the text becomes a hash of 17 bytes.
func InnerItemSize(n int) int {
	if n <= 0 {
		n = longterm.DefaultMaxItemSize
	}
	return 8*n + 4*longterm.MaxVectorDims*4/3 + 4096
}

// OpenLongTerm opens the long-term store at rawURL and wraps it
// (WrapLongTerm).
func OpenLongTerm(ctx context.Context, rawURL string, opts longterm.Options, ring *Keyring) (LongTerm, error) {
	inner, err := longterm.Open(ctx, rawURL, longterm.Options{Now: opts.Now, MaxItemSize: InnerItemSize(opts.MaxItemSize), Sealed: true, Namespace: opts.Namespace})
	if err != nil {
		return nil, err
	}
	s, err := WrapLongTerm(inner, ring, opts)
	if err != nil {
		inner.Close()
		return nil, err
	}
	return s, nil
}

// Inner implements LongTerm.
func (s *longTerm) Inner() longterm.Store { return s.inner }

// Close implements longterm.Store: it closes inner.
func (s *longTerm) Close() error {
	if !s.guard.Close() {
		return nil
	}
	return s.inner.Close()
}

// reserved refuses a namespace or prefix under LongTermKeys, and one too
// long to have its key's namespace.
func reserved(what, ns string) error {
	if longterm.InPrefix(LongTermKeys, ns) && ns != "" {
		return &longterm.InvalidError{What: what, Why: fmt.Sprintf("%q is under %s, where the encrypting store keeps its keys", ns, LongTermKeys)}
	}
	if len(ns)+len(LongTermKeys)+1 > longterm.MaxNamespaceLen {
		return &longterm.InvalidError{What: what, Why: fmt.Sprintf("%q is %d bytes long; through an encrypting store the limit is %d",
			ns, len(ns), longterm.MaxNamespaceLen-len(LongTermKeys)-1)}
	}
	return nil
}

// keyRecordLT is the value of a key item: a data key wrapped by a master
// key, and by the keys it was wrapped by before Rekey (newest first), so
// that a process still configured with the old key reads on until the old
// key file is destroyed, as with session keys.
type keyRecordLT struct {
	KID     string   `json:"kid"`           // the master key that wrapped it
	DataKey string   `json:"dk"`            // the data key's ID
	Wrapped string   `json:"w"`             // base64 of nonce‖ciphertext‖tag
	Old     []wrapLT `json:"old,omitempty"` // earlier wrappings, newest first
}

// wrapLT is an earlier wrapping of a data key.
type wrapLT struct {
	KID     string `json:"kid"`
	Wrapped string `json:"w"`
}

// parseKeyRecord reads a key item's value and opens its data key with the
// newest wrapping whose master key the keyring holds.
func (s *longTerm) parseKeyRecord(value []byte, what string) (keyRecordLT, []byte, error) {
	var kr keyRecordLT
	if err := json.Unmarshal(value, &kr); err != nil || kr.DataKey == "" {
		return kr, nil, fmt.Errorf("%w: the key of %s is malformed", ErrTampered, what)
	}
	w := wrapLT{KID: kr.KID, Wrapped: kr.Wrapped}
	for _, o := range kr.Old {
		if !s.ring.has(w.KID) && s.ring.has(o.KID) {
			w = o
		}
	}
	sealed, err := base64.StdEncoding.DecodeString(w.Wrapped)
	if err != nil {
		return kr, nil, fmt.Errorf("%w: the key of %s is not base64", ErrTampered, what)
	}
	dek, err := s.ring.unwrap(w.KID, sealed, ltKeyAAD(what, kr.DataKey))
	if err != nil {
		return kr, nil, fmt.Errorf("the key of %s: %w", what, err)
	}
	if dataKeyID(dek) != kr.DataKey {
		return kr, nil, fmt.Errorf("%w: the key of %s does not match its id", ErrTampered, what)
	}
	return kr, dek, nil
}

func ltKeyAAD(what, dkid string) []byte {
	return []byte("cairn longterm key v1\x00" + what + "\x00" + dkid)
}

// readKey returns the data key stored at (ns, key) of inner, opened; nil
// when there is none.
func (s *longTerm) readKey(ctx context.Context, ns, key, what string) (*nsKeyT, error) {
	it, err := s.inner.Get(ctx, ns, key)
	if errors.Is(err, longterm.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	kr, dek, err := s.parseKeyRecord(it.Value, what)
	if err != nil {
		return nil, err
	}
	return &nsKeyT{id: kr.DataKey, dek: dek}, nil
}

// makeKey stores a new data key at (ns, key) of inner, unless another
// writer stored one first, and returns the one stored.
func (s *longTerm) makeKey(ctx context.Context, ns, key, what string) (*nsKeyT, error) {
	dek := make([]byte, KeySize)
	if _, err := rand.Read(dek); err != nil {
		return nil, fmt.Errorf("make data key: %w", err)
	}
	k := &nsKeyT{id: dataKeyID(dek), dek: dek}
	kid, sealed, err := s.ring.wrap(dek, ltKeyAAD(what, k.id))
	if err != nil {
		return nil, fmt.Errorf("wrap the key of %s: %w", what, err)
	}
	v, _ := json.Marshal(keyRecordLT{KID: kid, DataKey: k.id, Wrapped: base64.StdEncoding.EncodeToString(sealed)})
	_, err = s.inner.Put(ctx, longterm.Item{Namespace: ns, Key: key, Value: v, Text: "-"}, longterm.PutOptions{IfVersion: longterm.IfAbsent})
	if errors.Is(err, longterm.ErrConflict) {
		return s.readKey(ctx, ns, key, what) // another writer made it: use theirs
	}
	if err != nil {
		return nil, fmt.Errorf("store the key of %s: %w", what, err)
	}
	return k, nil
}

// key returns a data key, from the cache or inner; with create, one is
// made when there is none. nil, nil: none, and create is false.
func (s *longTerm) key(ctx context.Context, ns, key, what string, create bool) (*nsKeyT, error) {
	k, err := s.readKey(ctx, ns, key, what)
	if err == nil && k == nil && create {
		k, err = s.makeKey(ctx, ns, key, what)
	}
	return k, err
}

// indexKey returns the store's index key, made at the first write. A
// keyring that cannot open it (the wrong key) fails every call.
func (s *longTerm) indexKey(ctx context.Context, create bool) ([]byte, error) {
	s.mu.Lock()
	ik := s.index
	s.mu.Unlock()
	if ik != nil {
		return ik, nil
	}
	k, err := s.key(ctx, LongTermKeys, "index", "the text index", create)
	if err != nil || k == nil {
		return nil, err
	}
	s.mu.Lock()
	s.index = k.dek
	s.mu.Unlock()
	return k.dek, nil
}

// nsKey returns namespace ns's data key; with create, one is made when
// there is none. nil, nil: none.
func (s *longTerm) nsKey(ctx context.Context, ns string, create bool) (*nsKeyT, error) {
	s.mu.Lock()
	k := s.keys[ns]
	s.mu.Unlock()
	if k != nil {
		return k, nil
	}
	k, err := s.key(ctx, LongTermKeys+"/"+ns, "data", "namespace "+ns, create)
	if err != nil || k == nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.keys) >= maxCached {
		clear(s.keys)
	}
	s.keys[ns] = k
	s.mu.Unlock()
	return k, nil
}

// forgetKeys drops the cached data keys of prefix and the namespaces under
// it.
func (s *longTerm) forgetKeys(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ns := range s.keys {
		if longterm.InPrefix(prefix, ns) {
			delete(s.keys, ns)
		}
	}
}

// blind returns the keyed hash that stands for a token in the text index:
// "h" and 16 hex digits, a token of letters and digits as every backend's
// tokenizer reads it.
func blind(ik []byte, token string) string {
	m := hmac.New(sha256.New, ik)
	m.Write([]byte(token))
	return "h" + hex.EncodeToString(m.Sum(nil)[:8])
}

// blindText returns what the text index is given for text: its tokens'
// hashes, in order, so that phrases still match in a row.
func blindText(ik []byte, text string) string {
	toks := longterm.Tokens(text)
	for i, t := range toks {
		toks[i] = blind(ik, t)
	}
	if len(toks) == 0 {
		return "-"
	}
	return strings.Join(toks, " ")
}

// blindQuery returns the query that finds a query's phrases in a blinded
// index: each phrase a word of its tokens' hashes joined by '-'.
func blindQuery(ik []byte, phrases [][]string) string {
	words := make([]string, len(phrases))
	for i, p := range phrases {
		hs := make([]string, len(p))
		for j, t := range p {
			hs[j] = blind(ik, t)
		}
		words[i] = strings.Join(hs, "-")
	}
	return strings.Join(words, " ")
}
