package cli_test

import (
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/cli"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// ingest --reindex --no-switch makes a new model's vectors and holds the switch: status
// shows the rebuild, the live model stays; --drop-rebuild forgets it; --reindex again
// after another held run switches.
func TestIngestHoldsAndDropsARebuild(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.NewURL(t))
	if _, err := run(t, "migrate"); err != nil {
		t.Fatal(err)
	}
	ingest := []string{"ingest", "--dir", "../../deploy/demo/site", "--base-url", "https://northwind.example"}
	if out, err := run(t, ingest...); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	fake := llmtest.NewServer(t, 64)
	t.Setenv("EMBEDDINGS_PROVIDER", "openai")
	t.Setenv("EMBEDDINGS_BASE_URL", fake.BaseURL())
	t.Setenv("EMBEDDINGS_MODEL", "fake-next")
	t.Setenv("EMBEDDINGS_DIMENSIONS", "64")
	held := append(append([]string{}, ingest...), "--reindex", "--no-switch")
	out, err := run(t, held...)
	if err != nil || !strings.Contains(out, "held the switch") {
		t.Fatalf("ingest --reindex --no-switch: %v\n%s", err, out)
	}
	if out, _ := run(t, "usage"); !strings.Contains(out, "index: rebuild for fake-next (64 dimensions)") {
		t.Errorf("usage during a held rebuild:\n%s", out)
	}
	if _, err := run(t, "ingest", "--drop-rebuild", "--reindex"); cli.ExitCode(err) != 2 {
		t.Errorf("--drop-rebuild with --reindex: %v; want a usage error", err)
	}
	if out, err := run(t, "ingest", "--drop-rebuild"); err != nil || !strings.Contains(out, "dropped the rebuild for fake-next") {
		t.Fatalf("--drop-rebuild: %v\n%s", err, out)
	}
	if out, _ := run(t, "usage"); strings.Contains(out, "index: rebuild") {
		t.Errorf("usage after the drop still shows a rebuild:\n%s", out)
	}
	if _, err := run(t, held...); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	out, err = run(t, append(append([]string{}, ingest...), "--reindex")...)
	if err != nil || !strings.Contains(out, "switched to them, resumed") || fake.Calls() != calls {
		t.Fatalf("--reindex after a held one: %v, %d more calls\n%s", err, fake.Calls()-calls, out)
	}
}
