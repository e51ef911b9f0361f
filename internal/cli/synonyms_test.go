package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// TestServeRefusesABadSynonymsFile: serve checks SEARCH_SYNONYMS_FILE at start-up and
// names every bad line before it listens.
func TestServeRefusesABadSynonymsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "synonyms.txt")
	if err := os.WriteFile(file, []byte("price, cost\nlonely\n[en\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", pgtest.NewURL(t))
	t.Setenv("LISTEN_ADDR", "127.0.0.1:0")
	t.Setenv("ADMIN_LISTEN_ADDR", "off")
	t.Setenv("SEARCH_SYNONYMS_FILE", file)
	_, err := run(t, "serve")
	if err == nil {
		t.Fatal("serve started with a bad synonyms file")
	}
	for _, want := range []string{"SEARCH_SYNONYMS_FILE", "line 2:", "line 3:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
}
