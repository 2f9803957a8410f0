package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeEnv is an injected environment.
func fakeEnv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestConfigPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		goos    string
		flag    string
		env     map[string]string
		want    string
		wantErr error
	}{
		{name: "flag wins", goos: "linux", flag: "/etc/x.json", env: map[string]string{"MCPWRAP_CONFIG": "/env.json", "HOME": "/h"}, want: "/etc/x.json"},
		{name: "env beats the default", goos: "linux", env: map[string]string{"MCPWRAP_CONFIG": "/env.json", "HOME": "/h"}, want: "/env.json"},
		{name: "linux XDG", goos: "linux", env: map[string]string{"XDG_CONFIG_HOME": "/xdg", "HOME": "/h"}, want: filepath.Join("/xdg", "mcpwrap", "config.json")},
		{name: "linux relative XDG ignored", goos: "linux", env: map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": "/h"}, want: filepath.Join("/h", ".config", "mcpwrap", "config.json")},
		{name: "linux home", goos: "linux", env: map[string]string{"HOME": "/h"}, want: filepath.Join("/h", ".config", "mcpwrap", "config.json")},
		{name: "linux no home", goos: "linux", env: map[string]string{}, wantErr: ErrNoHome},
		{name: "freebsd is unix", goos: "freebsd", env: map[string]string{"HOME": "/h"}, want: filepath.Join("/h", ".config", "mcpwrap", "config.json")},
		{name: "macOS", goos: "darwin", env: map[string]string{"HOME": "/Users/me", "XDG_CONFIG_HOME": "/xdg"}, want: filepath.Join("/Users/me", "Library", "Application Support", "mcpwrap", "config.json")},
		{name: "windows", goos: "windows", env: map[string]string{"AppData": `C:\Users\me\AppData\Roaming`}, want: filepath.Join(`C:\Users\me\AppData\Roaming`, "mcpwrap", "config.json")},
		{name: "windows without AppData", goos: "windows", env: map[string]string{"HOME": "/h"}, wantErr: ErrNoHome},
		{name: "plan9", goos: "plan9", env: map[string]string{"home": "/usr/me"}, want: filepath.Join("/usr/me", "lib", "mcpwrap", "config.json")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := configPath(tt.goos, tt.flag, fakeEnv(tt.env))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestStateDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		goos    string
		flag    string
		env     map[string]string
		want    string
		wantErr error
	}{
		{name: "flag wins", goos: "linux", flag: "/s", env: map[string]string{"MCPWRAP_STATE_DIR": "/env", "HOME": "/h"}, want: "/s"},
		{name: "env beats the default", goos: "linux", env: map[string]string{"MCPWRAP_STATE_DIR": "/env", "HOME": "/h"}, want: "/env"},
		{name: "linux XDG", goos: "linux", env: map[string]string{"XDG_STATE_HOME": "/xdg", "HOME": "/h"}, want: filepath.Join("/xdg", "mcpwrap")},
		{name: "linux relative XDG ignored", goos: "linux", env: map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, want: filepath.Join("/h", ".local", "state", "mcpwrap")},
		{name: "linux home", goos: "linux", env: map[string]string{"HOME": "/h"}, want: filepath.Join("/h", ".local", "state", "mcpwrap")},
		{name: "linux no home", goos: "linux", env: map[string]string{"XDG_STATE_HOME": "rel"}, wantErr: ErrNoHome},
		{name: "macOS", goos: "darwin", env: map[string]string{"HOME": "/Users/me"}, want: filepath.Join("/Users/me", "Library", "Application Support", "mcpwrap", "state")},
		{name: "windows", goos: "windows", env: map[string]string{"LOCALAPPDATA": `C:\Users\me\AppData\Local`}, want: filepath.Join(`C:\Users\me\AppData\Local`, "mcpwrap", "state")},
		{name: "windows without LOCALAPPDATA", goos: "windows", env: map[string]string{"HOME": "/h"}, wantErr: ErrNoHome},
		{name: "plan9", goos: "plan9", env: map[string]string{"home": "/usr/me"}, want: filepath.Join("/usr/me", "lib", "mcpwrap", "state")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := stateDir(tt.goos, tt.flag, fakeEnv(tt.env))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestPathsOnThisOS checks the exported wrappers honour flag and environment.
func TestPathsOnThisOS(t *testing.T) {
	t.Parallel()
	env := fakeEnv(map[string]string{"MCPWRAP_CONFIG": "/c.json", "MCPWRAP_STATE_DIR": "/state"})
	got, err := ConfigPath("", env)
	require.NoError(t, err)
	assert.Equal(t, "/c.json", got)
	got, err = StateDir("", env)
	require.NoError(t, err)
	assert.Equal(t, "/state", got)
	got, err = StateDir("/flag", env)
	require.NoError(t, err)
	assert.Equal(t, "/flag", got)
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	present := filepath.Join(dir, "present.json")
	require.NoError(t, os.WriteFile(present, []byte(`{}`), 0o600))
	missing := filepath.Join(dir, "missing.json")
	tests := []struct {
		name      string
		flag      string
		env       map[string]string
		wantFound bool
		wantErr   string
	}{
		{name: "flag names a file", flag: present, wantFound: true},
		{name: "flag names no file", flag: missing, wantErr: "--config " + missing + ": no such file"},
		{name: "environment names a file", env: map[string]string{EnvConfig: present}, wantFound: true},
		{name: "environment names no file", env: map[string]string{EnvConfig: missing}, wantErr: "$MCPWRAP_CONFIG=" + missing + ": no such file"},
		{name: "no default file: all defaults", env: map[string]string{"HOME": dir, "XDG_CONFIG_HOME": dir, "AppData": dir}},
		{name: "no home at all", wantErr: "use --config or $MCPWRAP_CONFIG"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, err := Open(tt.flag, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantFound, file.Found)
		})
	}
}

func TestStoreLocation(t *testing.T) {
	file, err := Parse("config.json", []byte(`{"store": "postgres://db/from-file"}`))
	require.NoError(t, err)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvStore {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name     string
		flag     string
		env      string
		file     *File
		want     string
		wantFrom string
	}{
		{name: "default", want: DefaultStore, wantFrom: "the default"},
		{name: "file", file: file, want: "postgres://db/from-file", wantFrom: "the config file's store"},
		{name: "env over file", env: "postgres://db/from-env", file: file, want: "postgres://db/from-env", wantFrom: "$MCPWRAP_STORE"},
		{name: "flag over all", flag: StoreFile, env: "postgres://db/from-env", file: file, want: StoreFile, wantFrom: "--store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, from := StoreLocation(tt.flag, env(tt.env), tt.file)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantFrom, from)
		})
	}
}
