package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMisspeltCommand(t *testing.T) {
	onPath := map[string]bool{"tool": true}
	lookPath := func(name string) (string, error) {
		if onPath[name] {
			return "/usr/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
	tests := []struct {
		name string
		word string
		want string
	}{
		{name: "a letter missing", word: "instal", want: "install"},
		{name: "a letter missing inside", word: "doctr", want: "doctor"},
		{name: "tols", word: "tols", want: "tools"},
		{name: "neighbours swapped", word: "statsu", want: "status"},
		{name: "a letter more", word: "loginn", want: "login"},
		{name: "capitals", word: "Instal", want: "install"},
		{name: "help", word: "hepl", want: "help"},
		{name: "a two-letter program is not taken for ui", word: "uv", want: ""},
		{name: "a program that is installed", word: "tool"},
		{name: "two edits away", word: "docker"},
		{name: "a real server", word: "npx"},
		{name: "a path", word: "./instal"},
		{name: "a flag", word: "--nme"},
		{name: "a subcommand itself is not a typo of another", word: "status"},
		{name: "empty", word: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, misspeltCommand(tt.word, lookPath))
		})
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"install", "install", 0},
		{"instal", "install", 1}, {"ab", "ba", 1}, {"docker", "doctor", 2}, {"kitten", "sitting", 3},
	} {
		assert.Equal(t, tt.want, editDistance(tt.a, tt.b), "%q %q", tt.a, tt.b)
	}
}
