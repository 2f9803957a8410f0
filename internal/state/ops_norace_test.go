//go:build !race

package state

// opsPerProc is the number of concurrent updates each helper process of
// TestConcurrentProcesses makes (fewer under -race, see ops_race_test.go).
const opsPerProc = 200
