package crypt

import (
	"errors"

	"github.com/cairnhq/cairn"
)

// Errors of the encrypting store. Each wraps the context it was found in:
// the session, the seq and the key IDs involved.
var (
	// ErrUnknownKey is returned when a session's data key is wrapped by a
	// master key the keyring does not hold: the wrong key file, or an old
	// key that was dropped before `cairn sessions rekey` ran.
	ErrUnknownKey = errors.New("master key not in the keyring")

	// ErrWrongKey is returned by a write through a store whose current
	// master key is not one of its namespace's (a *WrongKeyError, naming
	// the namespace and the keys): the wrong key file. A namespace gains a
	// key only by Rekey (`cairn sessions rekey`), run with one of its keys.
	ErrWrongKey = errors.New("master key is not the namespace's")

	// ErrTampered is returned when a sealed value does not authenticate:
	// it was changed, moved to another session or position, or sealed
	// under another data key.
	ErrTampered = errors.New("encrypted data does not authenticate")

	// ErrPlaintext is returned when a store opened with a key finds an
	// event or a first message that is not encrypted.
	ErrPlaintext = errors.New("unencrypted data in an encrypted store")

	// ErrEncrypted is returned when a store opened without a key finds
	// encrypted data: a namespace marked encrypted (an *EncryptedError,
	// naming its master keys) or a session whose events are sealed (a
	// *SealedError). It is cairn.ErrSealed, which the core returns
	// for a sealed session read without this package.
	ErrEncrypted = cairn.ErrSealed
)
