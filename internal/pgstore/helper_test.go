package pgstore

// helperEnv names the helper a re-executed test binary runs instead of the
// tests (see TestMain).
const helperEnv = "PGSTORE_TEST_HELPER"

func runHelper(mode string) int { return 2 }
