package clientconfig

import (
	"cmp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Single-line files keep the tests readable: entries are rewritten compact.

func TestInstall(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		servers    []string
		want       string
		wantAction Action
		wantDetail string
	}{
		{
			name:       "stdio entry keeps env and unknown keys in place",
			in:         `{"mcpServers":{"fs":{"command":"npx","args":["-y","srv"],"env":{"K":"v"},"disabled":false}}}`,
			want:       `{"mcpServers":{"fs":{"command":"/opt/mcpwrap","args":["--name","fs","--","npx","-y","srv"],"env":{"K":"v"},"disabled":false}}}`,
			wantAction: Wrap,
			wantDetail: "npx -y srv",
		},
		{
			name:       "missing args go just before the command",
			in:         `{"mcpServers":{"bin":{"env":{},"command":"/srv/bin"}}}`,
			want:       `{"mcpServers":{"bin":{"env":{},"args":["--name","bin","--","/srv/bin"],"command":"/opt/mcpwrap"}}}`,
			wantAction: Wrap,
			wantDetail: "/srv/bin",
		},
		{
			name:       "keys and strings keep the bytes they were written with",
			in:         `{"mcpServers":{"caf\u00e9":{"command":"a\/b","args":["<&>"]}}}`,
			want:       `{"mcpServers":{"caf\u00e9":{"command":"/opt/mcpwrap","args":["--name","caf\u00e9","--","a\/b","<&>"]}}}`,
			wantAction: Wrap,
			wantDetail: `a/b <&>`,
		},
		{
			name: "remote entry without headers: the URL moves to a new env after the command",
			in:   `{"mcpServers":{"r":{"type":"sse","url":"https://h/sse","timeout":5}}}`,
			want: `{"mcpServers":{"r":{"type":"stdio","args":["--name","r","--transport","sse","--url","${MCPWRAP_URL_R}"],"command":"/opt/mcpwrap",` +
				`"env":{"MCPWRAP_URL_R":"https://h/sse"},"timeout":5}}}`,
			wantAction: Wrap,
			wantDetail: "https://h/sse over sse; URL moved to env MCPWRAP_URL_R; if it asks for a sign-in: `mcpwrap login r` once",
		},
		{
			name: "URL and header values move to env, next to existing variables of the same names",
			in: `{"mcpServers":{"r":{"headers":{"Authorization":"Bearer s3cret"},"url":"https://u:p@h/mcp?key=k",` +
				`"env":{"MCPWRAP_HDR_R_AUTHORIZATION":"mine","MCPWRAP_URL_R":"mine too"}}}}`,
			want: `{"mcpServers":{"r":{"args":["--name","r","--url","${MCPWRAP_URL_R_2}","--header","Authorization: ${MCPWRAP_HDR_R_AUTHORIZATION_2}"],` +
				`"command":"/opt/mcpwrap","env":{"MCPWRAP_HDR_R_AUTHORIZATION":"mine","MCPWRAP_URL_R":"mine too",` +
				`"MCPWRAP_URL_R_2":"https://u:p@h/mcp?key=k","MCPWRAP_HDR_R_AUTHORIZATION_2":"Bearer s3cret"}}}}`,
			wantAction: Wrap,
			wantDetail: "https://h/mcp?… with headers Authorization; URL moved to env MCPWRAP_URL_R_2, header values to MCPWRAP_HDR_R_AUTHORIZATION_2",
		},
		{
			name: "headers before the url: the new env goes after the command",
			in:   `{"mcpServers":{"r":{"headers":{"K":"v"},"url":"https://h/mcp"}}}`,
			want: `{"mcpServers":{"r":{"args":["--name","r","--url","${MCPWRAP_URL_R}","--header","K: ${MCPWRAP_HDR_R_K}"],"command":"/opt/mcpwrap",` +
				`"env":{"MCPWRAP_URL_R":"https://h/mcp","MCPWRAP_HDR_R_K":"v"}}}}`,
			wantAction: Wrap,
			wantDetail: "https://h/mcp with headers K; URL moved to env MCPWRAP_URL_R, header values to MCPWRAP_HDR_R_K; if it asks for a sign-in: `mcpwrap login r` once",
		},
		{
			name:       "remote entry with an empty env just after the url",
			in:         `{"mcpServers":{"r":{"url":"https://h/mcp","env":{}}}}`,
			want:       `{"mcpServers":{"r":{"url":"https://h/mcp","env":{}}}}`,
			wantAction: Skip,
			wantDetail: `its empty "env" just after "url" could not be restored; remove it`,
		},
		{
			name:       "remote entry with an env that is not an object",
			in:         `{"mcpServers":{"r":{"env":[],"url":"https://h/mcp"}}}`,
			want:       `{"mcpServers":{"r":{"env":[],"url":"https://h/mcp"}}}`,
			wantAction: Skip,
			wantDetail: "env is not an object",
		},
		{
			name:       "already wrapped, with single-dash flags",
			in:         `{"mcpServers":{"w":{"command":"C:\\bin\\MCPWRAP.EXE","args":["-name=w","-url","https://h/mcp"]}}}`,
			want:       `{"mcpServers":{"w":{"command":"C:\\bin\\MCPWRAP.EXE","args":["-name=w","-url","https://h/mcp"]}}}`,
			wantAction: Skip,
			wantDetail: "already wrapped",
		},
		{
			name:       "a server named -- still wraps unambiguously",
			in:         `{"mcpServers":{"--":{"command":"srv"}}}`,
			want:       `{"mcpServers":{"--":{"args":["--name","--","--","srv"],"command":"/opt/mcpwrap"}}}`,
			wantAction: Wrap,
			wantDetail: "srv",
		},
		{
			name:       "selected servers only",
			in:         `{"mcpServers":{"a":{"command":"a"},"b":{"command":"b"}}}`,
			servers:    []string{"b"},
			want:       `{"mcpServers":{"a":{"command":"a"},"b":{"args":["--name","b","--","b"],"command":"/opt/mcpwrap"}}}`,
			wantAction: Wrap,
			wantDetail: "b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Mcpwrap: "/opt/mcpwrap", Servers: tt.servers}
			out, plan, err := Install([]byte(tt.in), opts)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(out))
			require.Len(t, plan, 1)
			assert.Equal(t, tt.wantAction, plan[0].Action)
			assert.Equal(t, tt.wantDetail, plan[0].Detail)

			again, _, err := Install(out, opts)
			require.NoError(t, err)
			assert.Equal(t, string(out), string(again), "install is idempotent")
		})
	}
}

func TestInstallUnchangedFileIsReturnedAsIs(t *testing.T) {
	in := []byte("{\n  \"mcpServers\": {}\n}\n")
	out, plan, err := Install(in, Options{Mcpwrap: "/opt/mcpwrap"})
	require.NoError(t, err)
	assert.Empty(t, plan)
	assert.Same(t, &in[0], &out[0])
}

func TestInstallErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		mcpwrap  string
		wantIs   error
		wantLine int
		wantCol  int
		wantMsg  string
	}{
		{
			name:    "relative mcpwrap path",
			in:      `{}`,
			mcpwrap: "mcpwrap",
			wantIs:  ErrMcpwrapPath,
		},
		{
			name:     "trailing comma",
			in:       "{\n  \"mcpServers\": {\n    \"a\": {},\n  }\n}\n",
			wantLine: 4,
			wantCol:  3,
			wantMsg:  "invalid character '}' looking for beginning of object key string",
		},
		{
			name:     "truncated",
			in:       "{\n  \"mcpServers\": {",
			wantLine: 2,
			wantCol:  17,
			wantMsg:  "unexpected end of JSON input",
		},
		{
			name:     "not an object",
			in:       "\n  [1, 2]",
			wantLine: 2,
			wantCol:  3,
			wantMsg:  "the file is not a JSON object",
		},
		{
			name:     "mcpServers not an object",
			in:       "{\n  \"mcpServers\": [\"fs\"]\n}",
			wantLine: 2,
			wantCol:  17,
			wantMsg:  `"mcpServers" is not an object`,
		},
		{
			name:     "project mcpServers not an object",
			in:       `{"projects":{"/p":{"mcpServers":"x"}}}`,
			wantLine: 1,
			wantCol:  33,
			wantMsg:  `"mcpServers" is not an object`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Install([]byte(tt.in), Options{Mcpwrap: cmp.Or(tt.mcpwrap, "/opt/mcpwrap")})
			require.Error(t, err)
			if tt.wantIs != nil {
				require.ErrorIs(t, err, tt.wantIs)
				return
			}
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.wantLine, pe.Line, "line")
			assert.Equal(t, tt.wantCol, pe.Column, "column")
			assert.Equal(t, tt.wantMsg, pe.Msg)
		})
	}
}

func TestInstallIgnoresWhatIsNotServers(t *testing.T) {
	in := `{"mcpServers":null,"projects":{"/a":[],"/b":{"mcpServers":null},"/c":{"other":{"command":"x"}}},"x":{"mcpServers":{"s":{"command":"x"}}}}`
	out, plan, err := Install([]byte(in), Options{Mcpwrap: "/opt/mcpwrap"})
	require.NoError(t, err)
	assert.Equal(t, in, string(out))
	assert.Empty(t, plan)
}

func TestInstallProjectServers(t *testing.T) {
	in := `{"projects":{"/home/me/app":{"mcpServers":{"s":{"command":"x"}}}}}`
	_, plan, err := Install([]byte(in), Options{Mcpwrap: "/opt/mcpwrap"})
	require.NoError(t, err)
	require.Equal(t, []Change{{Project: "/home/me/app", Server: "s", Action: Wrap, Detail: "x"}}, plan)
	assert.Equal(t, "wrap   s (project /home/me/app): x", plan[0].String())
}

func TestInstallLogDir(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "stdio: --log-file follows --name",
			in:   `{"mcpServers":{"fs":{"command":"npx","args":["-y","srv"]}}}`,
			want: `{"mcpServers":{"fs":{"command":"/opt/mcpwrap","args":["--name","fs","--log-file","/var/mcpwrap/logs/fs.log","--","npx","-y","srv"]}}}`,
		},
		{
			name: "remote: before --transport and --url",
			in:   `{"mcpServers":{"r":{"type":"sse","url":"https://h/sse"}}}`,
			want: `{"mcpServers":{"r":{"type":"stdio","args":["--name","r","--log-file","/var/mcpwrap/logs/r.log","--transport","sse","--url","${MCPWRAP_URL_R}"],` +
				`"command":"/opt/mcpwrap","env":{"MCPWRAP_URL_R":"https://h/sse"}}}}`,
		},
		{
			name: "a name a file cannot hold",
			in:   `{"mcpServers":{"../a b:c/é":{"command":"x"}}}`,
			want: `{"mcpServers":{"../a b:c/é":{"args":["--name","../a b:c/é","--log-file","/var/mcpwrap/logs/.._a_b_c_é.log","--","x"],"command":"/opt/mcpwrap"}}}`,
		},
		{
			name: "a name of dots only",
			in:   `{"mcpServers":{"..":{"command":"x"}}}`,
			want: `{"mcpServers":{"..":{"args":["--name","..","--log-file","/var/mcpwrap/logs/server...log","--","x"],"command":"/opt/mcpwrap"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Mcpwrap: "/opt/mcpwrap", LogDir: "/var/mcpwrap/logs"}
			out, plan, err := Install([]byte(tt.in), opts)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(out))
			require.Len(t, plan, 1)
			assert.Equal(t, Wrap, plan[0].Action)
			assert.NotContains(t, plan[0].Detail, "/var/mcpwrap/logs", "the plan describes the server, not mcpwrap's flags")

			restored, plan, err := Uninstall(out, Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.in, string(restored), "uninstall takes --log-file away with the rest")
			assert.NotContains(t, plan[0].Detail, "dropped")
		})
	}
}
