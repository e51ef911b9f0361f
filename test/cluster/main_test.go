// Package cluster_test runs sitetools as an operator does: several `sitetools serve`
// processes on one PostgreSQL database behind nginx with the shipped
// deploy/proxy/nginx.conf, each replica on a loopback port of its own, and asserts what
// the cluster does as a whole while its replicas are restarted, killed or stopped.
package cluster_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sitetools/sitetools/internal/testkit"
)

// binary is the sitetools binary: SITETOOLS_BIN, or built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	if bin := os.Getenv("SITETOOLS_BIN"); bin != "" {
		binary = bin
		os.Exit(m.Run())
	}
	testkit.MainWithBinary(m, "cluster", &binary, func(dst string) error {
		build := exec.Command("go", "build", "-trimpath", "-o", dst, ".")
		build.Dir = repoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
		return nil
	})
}

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
