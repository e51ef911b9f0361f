package web

import (
	"bytes"
	"compress/gzip"
	"regexp"
	"strings"
	"testing"
)

// The widget's weight budget: everything a page loads for the chat (the relay's own
// widget aside), gzipped.
const widgetGzipBudget = 30 * 1024

func TestWidgetBundle(t *testing.T) {
	files, err := widgetBundle()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]bundledFile{}
	for _, f := range files {
		byName[f.name] = f
	}
	for _, entry := range widgetEntries {
		f, ok := byName[entry]
		if !ok {
			t.Fatalf("no %s in the bundle", entry)
		}
		if f.immutable {
			t.Errorf("%s has a stable name: it must revalidate", entry)
		}
	}

	// chat.js names its stylesheet by its hash, and the entries share their chunks: a
	// page that loads both runs the bridge once.
	cssName := regexp.MustCompile(`chat-[0-9a-f]{12}\.css`)
	var css []string
	for name, f := range byName {
		if cssName.MatchString(name) {
			css = append(css, name)
			if !f.immutable {
				t.Errorf("%s is content-hashed but not immutable", name)
			}
		}
	}
	if len(css) != 1 || !bytes.Contains(byName["chat.js"].body, []byte(css[0])) {
		t.Fatalf("stylesheets %v; chat.js must name the one it loads", css)
	}
	imports := regexp.MustCompile(`from\s*"\./(chunk-[A-Z0-9]+\.js)"`)
	chatChunks := imports.FindAllSubmatch(byName["chat.js"].body, -1)
	bridgeChunks := imports.FindAllSubmatch(byName["bridge.js"].body, -1)
	if len(chatChunks) == 0 || len(bridgeChunks) == 0 || string(chatChunks[0][1]) != string(bridgeChunks[0][1]) {
		t.Fatalf("chat.js imports %q, bridge.js %q: they must share the bridge's chunk", chatChunks, bridgeChunks)
	}
	for name, f := range byName {
		if strings.HasPrefix(name, "chunk-") != f.immutable && !cssName.MatchString(name) {
			t.Errorf("%s: immutable %v", name, f.immutable)
		}
		if bytes.Contains(f.body, []byte("__SITETOOLS_CSS__")) {
			t.Errorf("%s: the stylesheet's name was not filled in", name)
		}
	}

	// What a page loads for the chat: chat.js, its chunks and its stylesheet, gzipped at
	// the default level (as a proxy compresses them).
	raw, gz := 0, 0
	for name, f := range byName {
		if name == "bridge.js" {
			continue
		}
		raw += len(f.body)
		gz += gzipSize(t, f.body)
	}
	t.Logf("the chat widget loads %d files: %d bytes, %d gzipped (budget %d)", len(byName)-1, raw, gz, widgetGzipBudget)
	if gz > widgetGzipBudget {
		t.Errorf("the widget weighs %d bytes gzipped, over its budget of %d", gz, widgetGzipBudget)
	}
}

func gzipSize(t *testing.T, b []byte) int {
	t.Helper()
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Len()
}
