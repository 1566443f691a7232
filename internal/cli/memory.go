package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/crypt"
)

// OpenMemory opens the long-term memory of the configured store: the same
// URL as the sessions' (--store, CAIRN_STORE, cairn.toml or the default)
// and, on the backends that keep one memory per session namespace, the
// configured namespace's (--namespace); through store/crypt when an
// encryption key is configured, so that items are encrypted at rest as
// events are. It returns the store and its URL.
func (a *App) OpenMemory(ctx context.Context) (longterm.Store, string, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, "", err
	}
	u := cfg.StoreURL()
	ring, err := a.Keyring()
	if err != nil {
		return nil, "", err
	}
	opts := longterm.Options{Namespace: cfg.Persistence.Namespace}
	var s longterm.Store
	if ring != nil {
		s, err = crypt.OpenLongTerm(ctx, withTimeouts(u), opts, ring)
	} else {
		s, err = longterm.Open(ctx, withTimeouts(u), opts)
	}
	switch {
	case errors.Is(err, longterm.ErrEncrypted):
		return nil, "", Fail(fmt.Errorf("open memory store %s: its long-term memory is encrypted, and no key is configured", text.RedactURL(u)),
			"set persistence.encryption_key_file or CAIRN_ENCRYPTION_KEY_FILE to the file of its key (docs/SECURITY.md)")
	case err != nil:
		return nil, "", Fail(fmt.Errorf("open memory store %s: %w", text.RedactURL(u), err), storeHint(u, err))
	}
	if ns := cfg.Persistence.Namespace; ns != "" && ns != cairn.DefaultNamespace && strings.HasPrefix(u, "memory:") {
		a.Notef("note: the memory store keeps one long-term memory for all its session namespaces; --namespace %s does not divide it (docs/MEMORY.md)", ns)
	}
	return s, u, nil
}

// MemoryFail returns the error of a long-term memory operation for a
// person: a usage error (exit 2) for an argument that breaks the rules,
// a failure (exit 1) with a hint otherwise. what says what was being done
// ("put users/ada food").
func MemoryFail(what string, err error) error {
	err = fmt.Errorf("%s: %w", what, err)
	switch {
	case errors.Is(err, longterm.ErrInvalid):
		hint := "see docs/MEMORY.md"
		if ie, ok := errors.AsType[*longterm.InvalidError](err); ok && ie.Rule() != "" {
			hint = ie.Rule()
		}
		return &Error{Err: err, Hint: hint, Code: ExitUsage}
	case errors.Is(err, longterm.ErrNotFound):
		return Fail(err, "`cairn memory list --ns NAMESPACE` shows what is stored there")
	case errors.Is(err, longterm.ErrConflict):
		return Fail(err, "another writer changed it first: read it again and retry")
	case errors.Is(err, cairn.ErrTooLarge):
		return Fail(err, "an item's value and text together are at most 1 MiB")
	case errors.Is(err, cairn.ErrUnavailable):
		return Fail(err, "is the store's server running and reachable? `cairn doctor` checks")
	case errors.Is(err, crypt.ErrUnknownKey):
		return Fail(err, "configure the key named above (persistence.encryption_key_file or CAIRN_ENCRYPTION_KEY_FILE); `cairn sessions rekey` moves the memory to a new key with the sessions")
	case errors.Is(err, crypt.ErrTampered):
		return Fail(err, "the encrypted data was changed or moved: restore it from a backup")
	}
	return Fail(err, "see docs/MEMORY.md")
}

// MemoryRules says what namespaces, keys and labels of long-term memory
// may hold.
const MemoryRules = longterm.Rules
