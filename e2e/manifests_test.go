package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// k8sObject is what TestManifests reads of a Kubernetes object.
type k8sObject struct {
	Kind     string
	Metadata struct{ Name string }
	Data     map[string]string
	Spec     struct {
		Selector yaml.Node // a Deployment's {matchLabels: ...} or a Service's labels
		Template struct {
			Metadata struct{ Labels map[string]string }
			Spec     struct {
				InitContainers []k8sContainer `yaml:"initContainers"`
				Containers     []k8sContainer
			}
		}
	}
}

type k8sContainer struct {
	Name  string
	Image string
	Args  []string
	Env   []struct {
		Name      string
		Value     string
		ValueFrom *struct {
			SecretKeyRef *struct{ Name, Key string } `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	}
	LivenessProbe   *k8sProbe `yaml:"livenessProbe"`
	ReadinessProbe  *k8sProbe `yaml:"readinessProbe"`
	SecurityContext struct {
		RunAsUser              int  `yaml:"runAsUser"`
		ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
	} `yaml:"securityContext"`
}

type k8sProbe struct {
	HTTPGet *struct{ Path string } `yaml:"httpGet"`
}

// readManifests returns the objects of every file in deploy/k8s, by file.
func readManifests(t *testing.T) map[string][]k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "deploy", "k8s", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string][]k8sObject{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		dec := yaml.NewDecoder(strings.NewReader(string(raw)))
		for {
			var obj k8sObject
			if err := dec.Decode(&obj); err != nil {
				require.ErrorContains(t, err, "EOF", f)
				break
			}
			out[filepath.Base(f)] = append(out[filepath.Base(f)], obj)
		}
	}
	return out
}

// TestManifests checks deploy/k8s against the binary: every mcpwrap flag a manifest passes
// exists; no secret is on a command line (tokens are ${VAR} references mcpwrap expands, the
// store's URL and password come from Secrets through the environment); the image's user, a
// read-only root; the gateway's probes are /healthz and /readyz; every Service selects pods; and
// the balancer's HAProxy configuration is valid (haproxy -c) and pins as the e2e balancer does.
func TestManifests(t *testing.T) {
	t.Parallel()
	help, _ := exec.Command(mcpwrapPath, "--help").CombinedOutput()
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)`).FindAllStringSubmatch(string(help), -1) {
		flags[m[1]] = true
	}
	require.Contains(t, flags, "listen", "mcpwrap --help lists its flags")
	flagName := regexp.MustCompile(`^--?([a-z][a-z-]*)`)
	bearer := regexp.MustCompile(`Bearer\s+([^$\s]\S*)`)
	manifests := readManifests(t)
	require.Contains(t, manifests, "sidecar.yaml")
	require.Contains(t, manifests, "gateway.yaml")
	require.Contains(t, manifests, "balancer.yaml")

	labels := map[string]map[string]string{} // pod labels, by file
	for file, objs := range manifests {
		for _, obj := range objs {
			if obj.Kind != "Deployment" {
				continue
			}
			for k, v := range obj.Spec.Template.Metadata.Labels {
				if labels[file] == nil {
					labels[file] = map[string]string{}
				}
				labels[file][k] = v
			}
			spec := obj.Spec.Template.Spec
			for _, c := range append(spec.InitContainers, spec.Containers...) {
				if !strings.Contains(c.Image, "mcpwrap") {
					continue
				}
				where := file + ": " + obj.Metadata.Name + "/" + c.Name
				for _, arg := range c.Args {
					if m := flagName.FindStringSubmatch(arg); m != nil {
						assert.True(t, flags[m[1]], "%s: --%s is no mcpwrap flag", where, m[1])
					}
					assert.NotContains(t, arg, "postgres://", "%s: the store's URL comes from a Secret", where)
					assert.NotRegexp(t, bearer, arg, "%s: a token literal on the command line", where)
				}
				for _, env := range c.Env {
					if env.Name == "MCPWRAP_STORE" || env.Name == "PGPASSWORD" || strings.HasSuffix(env.Name, "TOKEN") {
						assert.Empty(t, env.Value, "%s: %s is a literal", where, env.Name)
						if assert.NotNil(t, env.ValueFrom, "%s: %s", where, env.Name) {
							assert.NotNil(t, env.ValueFrom.SecretKeyRef, "%s: %s comes from a Secret", where, env.Name)
						}
					}
				}
				assert.Equal(t, 65532, c.SecurityContext.RunAsUser, "%s: the image's user", where)
				assert.True(t, c.SecurityContext.ReadOnlyRootFilesystem, "%s: a read-only root", where)
				if file == "gateway.yaml" {
					require.NotNil(t, c.LivenessProbe, where)
					require.NotNil(t, c.ReadinessProbe, where)
					assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path, where)
					assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, where)
				}
			}
		}
	}
	for file, objs := range manifests {
		for _, obj := range objs {
			if obj.Kind != "Service" {
				continue
			}
			var selector map[string]string
			require.NoError(t, obj.Spec.Selector.Decode(&selector), obj.Metadata.Name)
			require.NotEmpty(t, selector, obj.Metadata.Name)
			for k, v := range selector {
				assert.Equal(t, v, labels[file][k], "%s: Service %s selects pods of %s", file, obj.Metadata.Name, file)
			}
		}
	}

	var cfg string
	for _, obj := range manifests["balancer.yaml"] {
		if c, ok := obj.Data["haproxy.cfg"]; ok {
			cfg = c
		}
	}
	require.NotEmpty(t, cfg, "balancer.yaml's haproxy.cfg")
	for _, line := range []string{
		"balance roundrobin",
		"stick on req.hdr(mcp-session-id)",
		"stick store-response res.hdr(mcp-session-id)",
		"option redispatch 1",
		"option httpchk GET /readyz",
	} {
		assert.Contains(t, cfg, line, "the balancer pins and checks as the e2e's does")
		assert.Contains(t, haproxyConfig, line, "the e2e's balancer pins and checks as the manifest's does")
	}
	assert.NotContains(t, cfg, "retry-on", "retries on conn-failure only: no request sent twice")
	if binary, err := exec.LookPath("haproxy"); err == nil {
		path := filepath.Join(t.TempDir(), "haproxy.cfg")
		require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
		out, err := exec.Command(binary, "-c", "-f", path).CombinedOutput()
		assert.NoError(t, err, "haproxy -c:\n%s", out)
	}
}
