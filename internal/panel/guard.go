package panel

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"

	"github.com/mcpwrap/mcpwrap/internal/hostcheck"
)

// cookieName is the cookie a browser gets for the launch secret.
const cookieName = "mcpwrap_panel"

// csrfField is the form field that carries the CSRF token.
const csrfField = "csrf"

// keyParam is the query parameter of the launch URL that carries the
// secret.
const keyParam = "key"

// contentSecurityPolicy allows the page's own script, style and images,
// and nothing else: no inline script or style, no frame, no form posted
// elsewhere.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secrets are a launch's three random values: the one in the URL opened in
// the browser, the session cookie it is exchanged for, and the CSRF token
// of every form. Each is 32 random bytes, base64url.
type secrets struct {
	key, session, csrf string
}

func newSecrets() secrets {
	return secrets{key: rand.Text() + rand.Text(), session: rand.Text() + rand.Text(), csrf: rand.Text() + rand.Text()}
}

// equal compares a secret in constant time (of its digest, so that the
// time does not tell the length either).
func equal(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return want != "" && subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// Refusals, as the panel answers them (403 with the reason, or 401).
var (
	errNoSession   = errors.New("open the panel with the URL `mcpwrap ui` printed or opened: this browser has no panel session")
	errBadCSRF     = errors.New("the form's token is missing or wrong: reload the page and try again")
	errCrossOrigin = errors.New("the request comes from another site")
)

// guard runs the checks every request passes, in order: Host and Origin
// (DNS rebinding and cross-origin, hostcheck as httpfront has them), then a
// same-origin Origin on a change, then the session cookie. It returns the
// status to refuse with and why, or 0.
func (p *Panel) guard(r *http.Request) (int, error) {
	if err := hostcheck.Check(r, nil); err != nil {
		return http.StatusForbidden, err
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// hostcheck lets any loopback Origin in: another local site (a dev
		// server on another port) is the same site for SameSite, so a change
		// must come from this very origin.
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
			return http.StatusForbidden, errCrossOrigin
		}
		if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
			return http.StatusForbidden, errCrossOrigin
		}
	}
	if c, err := r.Cookie(cookieName); err == nil && equal(c.Value, p.secrets.session) {
		return 0, nil
	}
	return http.StatusUnauthorized, errNoSession
}

// sameOrigin reports whether origin is http://host, the panel's own.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "http" && u.Host == host && u.Path == "" && u.RawQuery == ""
}

// exchange trades the launch key in the URL for the session cookie and
// sends the browser on to the page without the key in its address bar.
func (p *Panel) exchange(w http.ResponseWriter, r *http.Request) {
	if err := hostcheck.Check(r, nil); err != nil {
		p.refuse(w, r, http.StatusForbidden, err)
		return
	}
	if !equal(r.URL.Query().Get(keyParam), p.secrets.key) {
		p.refuse(w, r, http.StatusUnauthorized, errNoSession)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName,
		Value:    p.secrets.session,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// checkCSRF reports whether a change's form carries the token.
func (p *Panel) checkCSRF(r *http.Request) bool {
	return equal(r.PostFormValue(csrfField), p.secrets.csrf)
}

// securityHeaders are set on every answer.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer a browser posts a
	// form with "Origin: null", which the guard must refuse.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}
