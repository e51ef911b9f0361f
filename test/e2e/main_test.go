// Package e2e_test runs the real sitetools binary, built by the Dockerfile's own
// `go build` command, as a deployment runs it: on a Unix socket, and as several
// replicas sharing one database.
package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/testkit"
)

// binary is sitetools, built once for the package by TestMain.
var binary string

// buildVersion is the VERSION build argument the binary is built with.
const buildVersion = "e2e-test"

func TestMain(m *testing.M) {
	testkit.MainWithBinary(m, "e2e", &binary, buildLikeDockerfile)
}

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// dockerfileBuildCommand returns the shell command of the Dockerfile's RUN instruction
// that runs `go build`, without the RUN keyword and its --mount flags, and the path
// it writes the binary to (-o).
func dockerfileBuildCommand() (cmd, out string, err error) {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "Dockerfile"))
	if err != nil {
		return "", "", err
	}
	// Instructions, with continuation lines joined.
	joined := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(b), "")
	var runs []string
	for _, line := range strings.Split(joined, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "RUN "); ok && strings.Contains(rest, "go build") {
			runs = append(runs, rest)
		}
	}
	if len(runs) != 1 {
		return "", "", fmt.Errorf("Dockerfile: %d RUN instructions with go build, want 1", len(runs))
	}
	cmd = strings.TrimSpace(regexp.MustCompile(`--mount=\S+\s*`).ReplaceAllString(runs[0], ""))
	m := regexp.MustCompile(`\s-o\s+(\S+)`).FindStringSubmatch(cmd)
	if m == nil {
		return "", "", fmt.Errorf("Dockerfile: go build has no -o: %s", cmd)
	}
	return cmd, m[1], nil
}

// buildLikeDockerfile runs the Dockerfile's build command in the repository's root,
// with the VERSION build argument set and -o pointing at dst.
func buildLikeDockerfile(dst string) error {
	cmd, out, err := dockerfileBuildCommand()
	if err != nil {
		return err
	}
	cmd = strings.Replace(cmd, " -o "+out, " -o "+dst, 1)
	c := exec.Command("sh", "-c", cmd)
	c.Dir = repoRoot()
	c.Env = append(os.Environ(), "VERSION="+buildVersion)
	if b, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", cmd, err, b)
	}
	return nil
}

// waitReady polls /readyz through c until it answers 200, failing if the process exits
// first.
func waitReady(t *testing.T, p *testkit.Proc, c *http.Client) {
	t.Helper()
	testkit.WaitReady(t, c, "http://sitetools/readyz", p.Alive)
}
