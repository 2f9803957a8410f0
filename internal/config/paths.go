package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
)

// Environment variables that locate mcpwrap's files.
const (
	EnvConfig   = "MCPWRAP_CONFIG"
	EnvStateDir = "MCPWRAP_STATE_DIR"
	EnvStore    = "MCPWRAP_STORE"
	// EnvStoreKey holds the key (base64 of 32 bytes) that seals sign-in
	// tokens kept in a PostgreSQL store; without it tokens stay on the
	// machine. It is only ever read from the environment.
	EnvStoreKey = "MCPWRAP_STORE_KEY"
)

// StoreFile is the store location of the file store in the state
// directory, the default store.
const StoreFile = "file"

// DefaultStore is the state store used when neither --store,
// $MCPWRAP_STORE nor the config file's `store` names one.
const DefaultStore = StoreFile

// StoreLocation resolves which state store to use: flag (--store) if set,
// else $MCPWRAP_STORE, else the config file's `store` (f may be nil), else
// [DefaultStore]. It returns the location, [StoreFile] or a postgres://
// URL (not checked here: the store's package parses it), and where it came
// from, for messages that must not repeat it ("--store", "$MCPWRAP_STORE",
// "the config file's store", "the default").
func StoreLocation(flag string, env func(string) string, f *File) (location, from string) {
	switch {
	case flag != "":
		return flag, "--store"
	case env(EnvStore) != "":
		return env(EnvStore), "$" + EnvStore
	case f.Store() != "":
		return f.Store(), "the config file's store"
	}
	return DefaultStore, "the default"
}

// ErrNoHome is returned when no location can be derived because the
// environment names no home or per-user directory.
var ErrNoHome = errors.New("cannot determine the per-user directory: the environment names no home")

// ConfigPath resolves the config file: flag (--config) if set, else
// $MCPWRAP_CONFIG, else <user config dir>/mcpwrap/config.json, where the user
// config dir follows os.UserConfigDir ($XDG_CONFIG_HOME or ~/.config on
// Unix, ~/Library/Application Support on macOS, %AppData% on Windows) except
// that a relative $XDG_CONFIG_HOME is ignored, as the XDG spec requires. env
// looks up environment variables (os.Getenv), so tests need not depend on
// the machine.
func ConfigPath(flag string, env func(string) string) (string, error) {
	return configPath(runtime.GOOS, flag, env)
}

// StateDir resolves the state directory: flag (--state-dir) if set, else
// $MCPWRAP_STATE_DIR, else a per-user state directory: $XDG_STATE_HOME/mcpwrap
// or ~/.local/state/mcpwrap on Unix, ~/Library/Application Support/mcpwrap/state
// on macOS, %LOCALAPPDATA%\mcpwrap\state on Windows. env is as for ConfigPath.
func StateDir(flag string, env func(string) string) (string, error) {
	return stateDir(runtime.GOOS, flag, env)
}

func configPath(goos, flag string, env func(string) string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if p := env(EnvConfig); p != "" {
		return p, nil
	}
	var base string
	switch goos {
	case "windows":
		base = env("AppData")
	case "darwin", "ios":
		base = inHome(env, "Library", "Application Support")
	case "plan9":
		base = inHome(env, "lib")
	default:
		base = absolute(env("XDG_CONFIG_HOME"))
		if base == "" {
			base = inHome(env, ".config")
		}
	}
	if base == "" {
		return "", ErrNoHome
	}
	return filepath.Join(base, "mcpwrap", "config.json"), nil
}

func stateDir(goos, flag string, env func(string) string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if p := env(EnvStateDir); p != "" {
		return p, nil
	}
	var dir string
	switch goos {
	case "windows":
		if base := env("LOCALAPPDATA"); base != "" {
			dir = filepath.Join(base, "mcpwrap", "state")
		}
	case "darwin", "ios":
		dir = inHome(env, "Library", "Application Support", "mcpwrap", "state")
	case "plan9":
		dir = inHome(env, "lib", "mcpwrap", "state")
	default:
		if base := absolute(env("XDG_STATE_HOME")); base != "" {
			dir = filepath.Join(base, "mcpwrap")
		} else {
			dir = inHome(env, ".local", "state", "mcpwrap")
		}
	}
	if dir == "" {
		return "", ErrNoHome
	}
	return dir, nil
}

// inHome joins elem to the home directory, or returns "" when there is none.
func inHome(env func(string) string, elem ...string) string {
	home := env("HOME")
	if home == "" {
		home = env("home") // Plan 9
	}
	if home == "" {
		return ""
	}
	return filepath.Join(append([]string{home}, elem...)...)
}

// absolute returns dir if it is an absolute path, else "".
func absolute(dir string) string {
	if filepath.IsAbs(dir) {
		return dir
	}
	return ""
}

// Open finds and loads the config file: the one flag (--config) names,
// else the one $MCPWRAP_CONFIG names, else the default location. A file
// named by the flag or the environment must exist: a typo would silently
// lift every lock the operator set. A missing default file means all
// defaults. env is as for ConfigPath.
func Open(flag string, env func(string) string) (*File, error) {
	path, err := ConfigPath(flag, env)
	if err != nil {
		return nil, fmt.Errorf("%w (use --config or $%s)", err, EnvConfig)
	}
	file, err := Load(path)
	if err != nil {
		return nil, err
	}
	switch {
	case file.Found:
	case flag != "":
		return nil, fmt.Errorf("--config %s: no such file", flag)
	case env(EnvConfig) != "":
		return nil, fmt.Errorf("$%s=%s: no such file", EnvConfig, path)
	}
	return file, nil
}
