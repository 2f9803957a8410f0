package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/mcpwrap/mcpwrap/internal/clientconfig"
)

// clientFile is a client config file that install, uninstall and doctor
// work on, read.
type clientFile struct {
	clientconfig.Location
	Data []byte
}

// clientFiles reads the config files of client (one of clientconfig's
// names, or "all"), or the file at path when path is set. Files that do
// not exist are skipped unless named by path; none existing is an error
// listing where they were looked for.
func clientFiles(client, path string) ([]clientFile, error) {
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return []clientFile{{Location: clientconfig.Location{Path: path}, Data: data}}, nil
	}
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	locs, err := clientconfig.Locations(client, clientconfig.Platform{Home: home, Dir: cwd, Getenv: os.Getenv})
	if err != nil {
		return nil, err
	}
	var files []clientFile
	for _, loc := range locs {
		data, err := os.ReadFile(loc.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files = append(files, clientFile{Location: loc, Data: data})
	}
	if len(files) == 0 {
		msg := "no client config file found; looked for:"
		for _, loc := range locs {
			msg += fmt.Sprintf("\n  %s (%s)", loc.Path, loc.Client)
		}
		return nil, errors.New(msg + "\nname one with --config-path")
	}
	return files, nil
}

// label names a file's client for a report: the client, or "custom" for a
// file given by path.
func (f clientFile) label() string {
	if f.Client == "" {
		return "custom"
	}
	return f.Client
}
