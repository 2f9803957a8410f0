package auth

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// A sealed document is sealMagic, the 4-byte id of the key, a 12-byte
// nonce, then the document encrypted with AES-256-GCM (its 16-byte tag
// last). The header and the store's label are the additional data, so a
// document moved to another label, or its key id changed, does not open.
const (
	sealMagic = "mcpwrap-sealed-v1:"
	keyIDLen  = 4
	keyLen    = 32
)

// ErrWrongKey is matched by the error of a sealed sign-in document that
// this process cannot open: sealed with another key, altered, or not
// sealed at all. Nothing is written over such a document.
var ErrWrongKey = errors.New("the stored sign-ins cannot be opened with this key")

// KeyError says why a sealed document does not open. It never carries a
// key or the document; key ids are a digest of the key, safe to show.
type KeyError struct {
	// Where is the store, as its String says.
	Where string
	// Have is the id of this process's key; Sealed the id of the key the
	// document was sealed with, "" when it does not say.
	Have, Sealed string
	// Reason is what is wrong, for people.
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("the sign-ins in %s cannot be opened with $MCPWRAP_STORE_KEY (key %s): %s; %s",
		e.Where, e.Have, e.Reason, e.Hint())
}

// Hint says how to fix it.
func (e *KeyError) Hint() string {
	return "give every mcpwrap that shares the store the same key, or, if that key is lost, remove them from the store and sign in again"
}

// Is reports whether target is [ErrWrongKey].
func (e *KeyError) Is(target error) bool { return target == ErrWrongKey }

// Key seals sign-in documents with AES-256-GCM. It never shows its bytes:
// it prints, and logs, as its id.
type Key struct {
	aead cipher.AEAD
	id   [keyIDLen]byte
}

// ParseKey reads a key given as the base64 of 32 random bytes (standard
// or URL alphabet, padded or not), as `openssl rand -base64 32` prints it.
// Its errors never quote s.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	var raw []byte
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			raw = b
			break
		}
	}
	if raw == nil {
		return nil, errors.New("$MCPWRAP_STORE_KEY is not base64: give the base64 of 32 random bytes (openssl rand -base64 32)")
	}
	if len(raw) != keyLen {
		return nil, fmt.Errorf("$MCPWRAP_STORE_KEY decodes to %d bytes, not 32: give the base64 of 32 random bytes (openssl rand -base64 32)", len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	k := &Key{aead: aead}
	sum := sha256.Sum256(append([]byte("mcpwrap store key id\x00"), raw...))
	copy(k.id[:], sum[:])
	return k, nil
}

// ID is the key's id: the start of a digest of it, which tells keys apart
// without revealing them.
func (k *Key) ID() string { return hex.EncodeToString(k.id[:]) }

// String implements fmt.Stringer: the id, never the key.
func (k *Key) String() string { return "key " + k.ID() }

// LogValue implements slog.LogValuer: the id, never the key.
func (k *Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// seal encrypts plain under k, bound to label.
func (k *Key) seal(label string, plain []byte) []byte {
	header := append([]byte(sealMagic), k.id[:]...)
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	out := append(header, nonce...)
	return k.aead.Seal(out, nonce, plain, append(header[:len(header):len(header)], label...))
}

// open decrypts what seal made under k for label. Its errors say what is
// wrong without quoting data.
func (k *Key) open(label string, data []byte) (plain []byte, sealedWith string, err error) {
	rest, ok := bytes.CutPrefix(data, []byte(sealMagic))
	if !ok {
		return nil, "", errors.New("they are not sealed")
	}
	if len(rest) < keyIDLen+k.aead.NonceSize()+k.aead.Overhead() {
		return nil, "", errors.New("they are cut short")
	}
	id, rest := rest[:keyIDLen], rest[keyIDLen:]
	sealedWith = hex.EncodeToString(id)
	if !bytes.Equal(id, k.id[:]) {
		return nil, sealedWith, errors.New("they were sealed with key " + sealedWith)
	}
	nonce, ct := rest[:k.aead.NonceSize()], rest[k.aead.NonceSize():]
	header := data[:len(sealMagic)+keyIDLen]
	plain, err = k.aead.Open(nil, nonce, ct, append(header[:len(header):len(header)], label...))
	if err != nil {
		return nil, sealedWith, errors.New("they were altered")
	}
	return plain, sealedWith, nil
}

// Seal returns inner with its document sealed under key: encrypted before
// it is written, and opened after it is read, so that inner (a shared
// database) never holds a token in the clear. label binds the documents to
// their purpose (the row's name). A document that does not open with key
// fails every Load and Update with a [KeyError] and is never written over.
func Seal(inner TokenStore, key *Key, label string) TokenStore {
	return &sealed{inner: inner, key: key, label: label}
}

// sealed is [Seal]'s TokenStore: a delegate and the key.
type sealed struct {
	inner TokenStore
	key   *Key
	label string
}

func (s *sealed) String() string { return s.inner.String() + ", sealed with " + s.key.String() }

func (s *sealed) open(data []byte) ([]byte, error) {
	if len(data) == 0 {
		return nil, nil
	}
	plain, sealedWith, err := s.key.open(s.label, data)
	if err != nil {
		return nil, &KeyError{Where: s.inner.String(), Have: s.key.ID(), Sealed: sealedWith, Reason: err.Error()}
	}
	return plain, nil
}

func (s *sealed) Load(ctx context.Context) ([]byte, error) {
	data, err := s.inner.Load(ctx)
	if err != nil {
		return nil, err
	}
	return s.open(data)
}

func (s *sealed) Update(ctx context.Context, fn func([]byte) ([]byte, error)) error {
	return s.inner.Update(ctx, func(old []byte) ([]byte, error) {
		plain, err := s.open(old)
		if err != nil {
			return nil, err
		}
		next, err := fn(plain)
		if err != nil {
			return nil, err
		}
		return s.key.seal(s.label, next), nil
	})
}

func (s *sealed) Lock(ctx context.Context, name string) (func(), error) {
	return s.inner.Lock(ctx, name)
}

func (s *sealed) TryLock(ctx context.Context, name string) (func(), bool, error) {
	return s.inner.TryLock(ctx, name)
}

func (s *sealed) Generation(ctx context.Context) (string, error) { return s.inner.Generation(ctx) }

// Unwrap returns the store the sealed documents are kept in, whose
// optional capabilities (a [Notifier]) are the sealed store's too.
func (s *sealed) Unwrap() TokenStore { return s.inner }
