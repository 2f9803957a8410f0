package config

import (
	"net/url"
	"slices"
	"strings"
)

// OAuth is how mcpwrap signs in to a remote server that asks for it
// (`oauth`). The zero value registers dynamically, asks for the scopes the
// server names and redirects to the server's default loopback port.
type OAuth struct {
	// ClientID is a client registered beforehand (`client_id`).
	ClientID string
	// ClientSecretEnv names the environment variable holding that
	// client's secret (`client_secret_env`); the secret itself never
	// appears in the config.
	ClientSecretEnv string
	// ClientMetadataURL is the https URL of a client ID metadata document
	// (`client_metadata_url`).
	ClientMetadataURL string
	// Scopes replace the scopes the server asks for (`scopes`, one string
	// separated by spaces).
	Scopes []string
	// RedirectPort is the loopback redirect's port (`redirect_port`); 0
	// means a stable port derived from the server's name.
	RedirectPort int
}

// oauthLayer is the `oauth` block of one level.
type oauthLayer struct {
	clientID, clientSecretEnv, clientMetadataURL *string
	scopes                                       *[]string
	redirectPort                                 *int
}

func (l *oauthLayer) applyTo(o *OAuth) {
	set(&o.ClientID, l.clientID)
	set(&o.ClientSecretEnv, l.clientSecretEnv)
	set(&o.ClientMetadataURL, l.clientMetadataURL)
	if l.scopes != nil {
		o.Scopes = slices.Clone(*l.scopes) // a Server shares nothing with its File
	}
	set(&o.RedirectPort, l.redirectPort)
}

func (p *parser) oauth(n *node, path string, l *oauthLayer) error {
	return p.object(n, path, func(m member, at string) error {
		v := m.value
		s, err := p.str(v, at)
		if m.key == "redirect_port" {
			port, err := p.integer(v, at, 0)
			if err == nil && *port > 65535 {
				err = p.valueError(v, at, "a port is at most 65535", nil)
			}
			l.redirectPort = port
			return err
		}
		if err != nil {
			return err
		}
		switch m.key {
		case "client_id":
			l.clientID = &s
		case "client_secret_env":
			l.clientSecretEnv = &s
		case "client_metadata_url":
			if u, err := url.Parse(s); err != nil || u.Scheme != "https" || u.Path == "" || u.Path == "/" {
				return p.valueError(v, at, "a client ID metadata document URL is an https URL with a path", err)
			}
			l.clientMetadataURL = &s
		case "scopes":
			scopes := strings.Fields(s)
			l.scopes = &scopes
		default:
			return errUnknownKey
		}
		return nil
	})
}
