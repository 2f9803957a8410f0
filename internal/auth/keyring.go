package auth

import (
	"errors"

	"github.com/zalando/go-keyring"
)

// The store's one item in the OS keychain (macOS Keychain, Windows
// Credential Manager, the Secret Service on Linux desktops), through
// github.com/zalando/go-keyring: pure Go, and on macOS it hands the secret
// to /usr/bin/security on stdin, never on a command line.
const (
	keyringService = "mcpwrap"
	keyringUser    = "oauth-tokens"
)

// keyringBackend keeps the document as one keychain item.
type keyringBackend struct{}

// openKeyring reports whether the OS keychain answers: a read of the item
// either finds it or says it is not there. Anything else (no D-Bus Secret
// Service on a headless Linux, a locked keychain) means no keychain.
func openKeyring() (backend, bool) {
	_, err := keyring.Get(keyringService, keyringUser)
	if err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return nil, false
	}
	return keyringBackend{}, true
}

func (keyringBackend) read() ([]byte, error) {
	s, err := keyring.Get(keyringService, keyringUser)
	if errors.Is(err, keyring.ErrNotFound) {
		return nil, nil
	}
	return []byte(s), err
}

func (keyringBackend) write(data []byte) error {
	return keyring.Set(keyringService, keyringUser, string(data))
}

func (keyringBackend) where() string { return "the OS keychain" }
