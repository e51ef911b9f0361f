package postgres

import "testing"

// TestHasIterativeScan: hnsw.iterative_scan is set only where pgvector has it (0.8.0 on).
func TestHasIterativeScan(t *testing.T) {
	for version, want := range map[string]bool{"0.8.0": true, "0.8.1": true, "0.10.0": true, "1.0.0": true, "0.7.4": false, "0.5.1": false, "x": false} {
		if got := hasIterativeScan(version); got != want {
			t.Errorf("hasIterativeScan(%q) = %v, want %v", version, got, want)
		}
	}
}
