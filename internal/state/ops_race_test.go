//go:build race

package state

// opsPerProc is the number of concurrent updates each helper process of
// TestConcurrentProcesses makes. Under -race the helpers are several times
// slower, so they make fewer: the race detector checks each process's
// goroutines, and the volume across processes adds nothing to that. The
// full 8×200 run (about 35–60 s under -race on 2 cores, 6–14 s without)
// is make check's store-procs target.
const opsPerProc = 50
