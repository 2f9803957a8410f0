package panel

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/atomicfile"
	"github.com/mcpwrap/mcpwrap/internal/runstatus"
)

// LockName is the file in the state directory where a running panel
// leaves its launch URL, so that a second `mcpwrap ui` opens it instead of
// starting another. It holds the launch key: mode 0600, as the state
// directory's other files.
const LockName = "ui.json"

type lockFile struct {
	PID int    `json:"pid"`
	URL string `json:"url"`
}

// Publish records the launch URL of the panel this process serves, and
// returns the function that removes the record.
func Publish(stateDir, launchURL string) (remove func(), err error) {
	path := filepath.Join(stateDir, LockName)
	data, _ := json.Marshal(lockFile{PID: os.Getpid(), URL: launchURL})
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(path, data, 0o600, LockName+".tmp-*"); err != nil {
		return nil, err
	}
	return func() {
		// Only our own record: another panel may have replaced it.
		if b, err := os.ReadFile(path); err == nil && string(b) == string(data) {
			_ = os.Remove(path)
		}
	}, nil
}

// Running returns the launch URL of a panel running for stateDir, if one
// answers; alive (nil: runstatus.Alive) tells whether its process lives.
func Running(ctx context.Context, stateDir string, alive func(int) bool) (string, bool) {
	if alive == nil {
		alive = runstatus.Alive
	}
	data, err := os.ReadFile(filepath.Join(stateDir, LockName))
	if err != nil {
		return "", false
	}
	var l lockFile
	if json.Unmarshal(data, &l) != nil || l.PID == os.Getpid() || !alive(l.PID) {
		return "", false
	}
	u, err := url.Parse(l.URL)
	if err != nil || u.Scheme != "http" {
		return "", false
	}
	return l.URL, answers(ctx, "http://"+u.Host+"/static/icon.svg") == nil
}

// answers reports whether a panel serves target.
func answers(ctx context.Context, target string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}
