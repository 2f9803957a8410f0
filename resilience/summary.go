package resilience

import (
	"regexp"
	"strings"
	"unicode"
)

// Text that reaches an agent as a Reason or Hint may come from a server: a
// JSON-RPC error's message, an error page a library quoted in its error.
// summary makes it one line a person can read.

// htmlStart finds where an HTML document begins in a text.
var htmlStart = regexp.MustCompile(`(?i)<!doctype|<html[\s>]|<head[\s>]|<body[\s>]`)

// htmlEnd finds where an HTML document ends.
var htmlEnd = regexp.MustCompile(`(?i)</html\s*>`)

// htmlTag is one tag of an HTML fragment left in a text after any
// document was cut off: only the elements error pages use, so that a
// placeholder such as <url> stays.
var htmlTag = regexp.MustCompile(`(?i)</?(?:a|b|i|p|br|hr|h[1-6]|div|span|pre|code|title|center|strong|em|ul|ol|li|table|tr|td|th|small|meta|link|script|style)(?:\s[^<>]*)?/?>`)

// htmlPage stands for an HTML document summary cut from a text.
const htmlPage = "(an HTML page)"

// summary renders s as one line: an HTML document in it (from its
// <!DOCTYPE>, <html>, <head> or <body> to its </html>, or the end) becomes
// "(an HTML page)", the
// tags of a fragment are dropped, and each run of white space or control characters
// (line breaks included) becomes one space.
func summary(s string) string {
	// Spaced first, so that a control character inside a tag (<a\x13>) is
	// seen as the space it becomes: a summary summarised is the same.
	s = oneLine(s)
	if loc := htmlStart.FindStringIndex(s); loc != nil {
		rest := ""
		if end := htmlEnd.FindStringIndex(s[loc[0]:]); end != nil {
			rest = s[loc[0]+end[1]:]
		}
		s = s[:loc[0]] + htmlPage + " " + rest
	}
	return oneLine(htmlTag.ReplaceAllString(s, " "))
}

// oneLine makes each run of white space or control characters in s (line
// breaks included) one space, and trims s.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}

// summarised returns e with its Reason and Hint as one line each (see
// summary): e itself when they are already, else a copy.
func (e *Error) summarised() *Error {
	reason, hint := summary(e.Reason), summary(e.Hint)
	if reason == e.Reason && hint == e.Hint {
		return e
	}
	c := *e
	c.Reason, c.Hint = reason, hint
	return &c
}
