package deploy_test

import (
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// phpBinary finds php; `make test` installs Debian's php-cli (deploy/dev/php.sh).
func phpBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("php")
	if err != nil {
		t.Fatal("php is not installed: run deploy/dev/php.sh (make test does)")
	}
	return path
}

// TestTYPO3Extension: every PHP file of the TYPO3 extension parses (php -l), and its
// DataHandler hook sends what each save, cache clear and flush concerns
// (Tests/hook_check.php plays TYPO3 13's calls with stand-ins): a save whose page
// TSconfig clears every page's cache sends its pages, not the whole site, unless it
// saved a record stored where no page shows it.
func TestTYPO3Extension(t *testing.T) {
	php := phpBinary(t)
	dir := filepath.Join(root(t), "deploy", "typo3")
	var files int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".php") {
			return err
		}
		files++
		if out, err := exec.Command(php, "-l", path).CombinedOutput(); err != nil {
			t.Errorf("php -l %s: %v\n%s", path, err, out)
		}
		return nil
	})
	if err != nil || files < 5 {
		t.Fatalf("%d PHP files under %s (%v)", files, dir, err)
	}
	out, err := exec.Command(php, filepath.Join(dir, "Tests", "hook_check.php")).CombinedOutput()
	t.Logf("hook_check.php:\n%s", out)
	if err != nil || !strings.Contains(string(out), "ok   ") {
		t.Errorf("hook_check.php: %v", err)
	}
}
