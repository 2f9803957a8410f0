//go:build race

package state

// opsPerProc is the number of concurrent updates each helper process of
// TestConcurrentProcesses makes. Under -race the helpers are several times
// slower, so they make fewer: the race detector checks each process's
// goroutines, and the volume across processes adds nothing to that.
const opsPerProc = 50
