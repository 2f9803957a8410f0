package main

import (
	"slices"
	"strings"
)

// misspeltCommand returns the subcommand word was likely meant to be, or
// "" when it is not one of those typos. mcpwrap runs an unknown first word
// as the server to wrap, so `mcpwrap instal` would start a program named
// "instal" and wait silently for a client. A word counts as a typo when no
// program of that name is found (lookPath fails), it names no path, and it
// is one edit (an insertion, deletion, substitution, or swap of neighbours)
// from a subcommand. One edit, not two: a real program missing from a GUI
// app's minimal PATH, such as docker, is two from doctor. A command of two
// letters (ui) is one edit from too many program names (uv, vi) that a GUI
// app's PATH may miss: it is never suggested.
func misspeltCommand(word string, lookPath func(string) (string, error)) string {
	if word == "" || strings.HasPrefix(word, "-") || strings.ContainsAny(word, `/\`) {
		return ""
	}
	for _, c := range append(slices.Clone(commands), "help") {
		if len(c) > 2 && editDistance(strings.ToLower(word), c) == 1 {
			if _, err := lookPath(word); err == nil {
				return ""
			}
			return c
		}
	}
	return ""
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours, each 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
