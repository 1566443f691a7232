package crypt

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/longterm"
)

// LongTermRekeyResult counts what LongTerm.Rekey did.
type LongTermRekeyResult struct {
	Keys      int `json:"keys"`      // the text index's key and the namespaces' data keys
	Rewrapped int `json:"rewrapped"` // wrapped anew by the current key
	Current   int `json:"current"`   // already wrapped by the current key
}

// Rekey implements LongTerm.
func (s *longTerm) Rekey(ctx context.Context, progress func(done, total int)) (LongTermRekeyResult, error) {
	var res LongTermRekeyResult
	if err := s.guard.Check(); err != nil {
		return res, err
	}
	// The index key is the store's mark of its keys: a keyring that
	// cannot open it is refused before anything is written.
	if _, err := s.indexKey(ctx, false); err != nil {
		return res, fmt.Errorf("rekey memory: %w", err)
	}
	var keys []longterm.Item
	for cursor := ""; ; {
		page, err := s.inner.List(ctx, longterm.ListOptions{Prefix: LongTermKeys, Limit: longterm.MaxListLimit, Cursor: cursor})
		if err != nil {
			return res, fmt.Errorf("rekey memory: list keys: %w", err)
		}
		keys = append(keys, page.Items...)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	res.Keys = len(keys)
	for i, it := range keys {
		done, err := s.rekeyOne(ctx, it)
		if err != nil {
			return res, fmt.Errorf("rekey memory: %w", err)
		}
		if done {
			res.Rewrapped++
		} else {
			res.Current++
		}
		if progress != nil {
			progress(i+1, len(keys))
		}
	}
	return res, nil
}

// rekeyOne wraps one stored key by the current master key unless it is
// already; it reports whether it wrote. A key changed meanwhile is read
// again; one deleted meanwhile (its namespace erased) is done.
func (s *longTerm) rekeyOne(ctx context.Context, it longterm.Item) (bool, error) {
	what, ok := keyWhat(it.Namespace, it.Key)
	if !ok {
		return false, fmt.Errorf("%w: %s/%s is not a key the encrypting store keeps", ErrTampered, it.Namespace, it.Key)
	}
	for range 5 {
		kr, dek, err := s.parseKeyRecord(it.Value, what)
		if err != nil {
			return false, err
		}
		if kr.KID == s.ring.Current() {
			return false, nil
		}
		kid, wrapped, err := s.ring.wrap(dek, ltKeyAAD(what, kr.DataKey))
		if err != nil {
			return false, fmt.Errorf("wrap the key of %s: %w", what, err)
		}
		old := append([]wrapLT{{KID: kr.KID, Wrapped: kr.Wrapped}}, kr.Old...)
		v, _ := json.Marshal(keyRecordLT{KID: kid, DataKey: kr.DataKey, Wrapped: base64.StdEncoding.EncodeToString(wrapped), Old: old})
		_, err = s.inner.Put(ctx, longterm.Item{Namespace: it.Namespace, Key: it.Key, Value: v, Text: "-"}, longterm.PutOptions{IfVersion: it.Version})
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, longterm.ErrConflict) {
			return false, fmt.Errorf("store the key of %s: %w", what, err)
		}
		got, err := s.inner.Get(ctx, it.Namespace, it.Key)
		if errors.Is(err, longterm.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read the key of %s: %w", what, err)
		}
		it = *got
	}
	return false, fmt.Errorf("the key of %s kept changing: %w", what, longterm.ErrConflict)
}

// keyWhat names the key stored at (ns, key) of the wrapped store as its
// wrapping's associated data does (see indexKey and nsKey).
func keyWhat(ns, key string) (string, bool) {
	if ns == LongTermKeys && key == "index" {
		return "the text index", true
	}
	if n, ok := strings.CutPrefix(ns, LongTermKeys+"/"); ok && n != "" && key == "data" {
		return "namespace " + n, true
	}
	return "", false
}
