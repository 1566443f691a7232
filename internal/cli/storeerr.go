package cli

import (
	"errors"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/crypt"
)

// StoreFail returns err, from reading or writing session id, as a failure
// whose hint fits it: the key an encrypted session needs, the repair of a
// session with events in clear, the damage check, or the store check.
func StoreFail(id string, err error) error {
	return Fail(err, StoreHint(id, err))
}

// StoreHint returns the hint for an error of the store about session id.
func StoreHint(id string, err error) string {
	switch {
	case errors.Is(err, crypt.ErrEncrypted):
		return EncryptedHint(err)
	case errors.Is(err, crypt.ErrWrongKey):
		return "configure the namespace's key (persistence.encryption_key_file or CAIRN_ENCRYPTION_KEY_FILE); to move the namespace to this key, run `cairn sessions rekey --new-key FILE` with its key configured (docs/SECURITY.md)"
	case errors.Is(err, crypt.ErrUnknownKey):
		return "configure the key named above (persistence.encryption_key_file or CAIRN_ENCRYPTION_KEY_FILE); `cairn sessions rekey` moves sessions to a new key"
	case errors.Is(err, crypt.ErrPlaintext):
		return "events were written in clear by a process without the key: `cairn sessions repair " + id + "` seals them (docs/SECURITY.md)"
	case errors.Is(err, crypt.ErrTampered):
		return "the encrypted data was changed or moved: restore it from a backup"
	case errors.Is(err, cairn.ErrDamaged):
		return "`cairn doctor` reports what is damaged; the session is read-only"
	case errors.Is(err, cairn.ErrNotFound):
		return "`cairn sessions list` shows the saved sessions; check --store and --namespace"
	}
	return "`cairn doctor` checks the store"
}

// HintOf returns the hint an error carries, "" if none.
func HintOf(err error) string {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Hint
	}
	return ""
}
