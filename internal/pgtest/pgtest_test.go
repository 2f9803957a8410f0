package pgtest

import (
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

var shared *Cluster

func TestMain(m *testing.M) { os.Exit(Main(m, &shared)) }

// TestCluster: a database of its own answers, over the socket, with the
// password from the password file; the server does not run as root.
func TestCluster(t *testing.T) {
	Need(t, shared)
	dsn, err := shared.CreateDB(t.Context())
	require.NoError(t, err)
	require.NoError(t, shared.Exec(t.Context(), dsn, "CREATE TABLE x (a int)"))
	require.NoError(t, shared.Exec(t.Context(), dsn, "SELECT 1 FROM x"))
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	_, hasPassword := u.User.Password()
	require.False(t, hasPassword, "the URL carries no password")
}
