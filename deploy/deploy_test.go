// Package deploy_test checks the deployment files offline, without a Docker engine or a
// cluster: the compose file against the compose schema, every Kubernetes manifest
// strictly against its API type, the proxy configurations with nginx and Caddy
// themselves, and the alert rules with Prometheus' expression parser.
package deploy_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// root is the repository's root directory.
func root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Dir(filepath.Dir(file))
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// announcedVariables are named by DESIGN.md and by work landing beside the deployment
// files (the chat's, the site pages'), which may use them before the README's table
// lists them.
var announcedVariables = []string{
	"LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL", "LLM_TOOL_MODE", "LLM_DAILY_TOKEN_BUDGET", "LLM_PRICE_PER_MTOK",
	"CHAT_PERSONA_FILE", "SITE_PAGES_DIR",
}

// runtimeVariables are read by the Go runtime, not by sitetools.
var runtimeVariables = []string{"GOMEMLIMIT"}

// knownVariables are the names of the README's configuration table, plus the announced
// ones and the Go runtime's: a deployment file that sets anything else has a typo.
func knownVariables(t testing.TB) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([A-Z][A-Z0-9_]+)` \\|")
	known := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			known[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !known["DATABASE_URL"] || !known["TRUSTED_PROXIES"] {
		t.Fatalf("README's configuration table not found (got %d names)", len(known))
	}
	for _, n := range append(announcedVariables, runtimeVariables...) {
		known[n] = true
	}
	return known
}

// dockerfileUser is the numeric user of the Dockerfile's final stage.
func dockerfileUser(t testing.TB) string {
	t.Helper()
	user := ""
	for _, line := range strings.Split(string(readFile(t, filepath.Join(root(t), "Dockerfile"))), "\n") {
		if u, ok := strings.CutPrefix(strings.TrimSpace(line), "USER "); ok {
			user = strings.TrimSpace(u)
		}
	}
	if user == "" {
		t.Fatal("Dockerfile has no USER")
	}
	return user
}
