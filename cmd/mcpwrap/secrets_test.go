package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSecretEnvNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    wrapOptions
		want []string
	}{
		{name: "stdio, no secret", o: wrapOptions{}, want: nil},
		{name: "listen without a token", o: wrapOptions{listen: listenOptions{addr: "127.0.0.1:0"}}, want: nil},
		{name: "the bearer token's variable", o: wrapOptions{listen: listenOptions{addr: "127.0.0.1:0", tokenEnv: "MY_TOKEN"}}, want: []string{"MY_TOKEN"}},
		{name: "the OAuth client secret's variable", o: wrapOptions{oauth: oauthFlags{clientSecretEnv: "MY_SECRET"}}, want: []string{"MY_SECRET"}},
		{name: "both", o: wrapOptions{listen: listenOptions{tokenEnv: "MY_TOKEN"}, oauth: oauthFlags{clientSecretEnv: "MY_SECRET"}}, want: []string{"MY_TOKEN", "MY_SECRET"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, secretEnvNames(tt.o))
		})
	}
}
