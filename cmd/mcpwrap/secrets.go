package main

// secretEnvNames returns the environment variables whose values mcpwrap
// holds as secrets in run o. They are kept from the server's environment
// (and its guardian's), whatever the client's or the config's env says: a
// process mcpwrap runs never sees a secret mcpwrap checks or sends. A
// feature that reads a secret from the environment (such as a token for a
// remote's authorization) adds its variable here.
func secretEnvNames(o wrapOptions) []string {
	var names []string
	for _, name := range []string{o.listen.tokenEnv, o.oauth.clientSecretEnv} {
		if name != "" {
			names = append(names, name)
		}
	}
	return names
}
