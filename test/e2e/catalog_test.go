package e2e_test

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of TestPublishedCatalog")

// TestPublishedCatalog: what the binary publishes about its tools, as a client reads it
// (GET /api/chat/tools with its ETag, and tools/list over /mcp), is byte for byte the
// golden copy. A change to it is a change to the public contract: rerun with -update and
// say why in the change.
func TestPublishedCatalog(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "public.sock")
	vars := map[string]string{
		"DATABASE_URL":        pgtest.NewURL(t),
		"LISTEN_ADDR":         "unix:" + sock,
		"ADMIN_LISTEN_ADDR":   "off",
		"AVAILABILITY_CONFIG": filepath.Join(repoRoot(), "deploy", "availability.example.yaml"),
	}
	testkit.Run(t, binary, vars, "migrate")
	p := testkit.Start(t, binary, vars, "serve")
	c := testkit.UnixClient(sock)
	waitReady(t, p, c)

	get := func(req *http.Request) ([]byte, http.Header) {
		t.Helper()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %v", req.Method, req.URL.Path, resp.StatusCode, err)
		}
		return body, resp.Header
	}
	req, _ := http.NewRequest(http.MethodGet, "http://sitetools/api/chat/tools", nil)
	catalog, header := get(req)
	req, _ = http.NewRequest(http.MethodPost, "http://sitetools/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	list, _ := get(req)

	for name, got := range map[string][]byte{
		"catalog.json":        catalog,
		"catalog.etag":        []byte(header.Get("ETag") + "\n"),
		"mcp-tools-list.json": list,
	} {
		path := filepath.Join("testdata", name)
		if *updateGolden {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden copy (%d bytes, want %d); if the change is meant, rerun with -update\ngot:  %.300s\nwant: %.300s", name, len(got), len(want), got, want)
		}
	}
}
