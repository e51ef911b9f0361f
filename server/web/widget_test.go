package web

import (
	"bytes"
	"compress/gzip"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The widget's weight budgets, gzipped: everything a page loads for the chat (the relay's
// own widget aside), and what <sitetools-search> adds to a page that has the chat.
const (
	widgetGzipBudget = 30 * 1024
	searchGzipBudget = 12 * 1024
)

var (
	cssName = regexp.MustCompile(`(?:chat|search)-[0-9a-f]{12}\.css`)
	imports = regexp.MustCompile(`(?:from|import)\s*"\./(chunk-[A-Z0-9]+\.js)"`)
)

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

	// chat.js and search.js each name their stylesheet by its hash.
	for _, style := range widgetStyles {
		prefix := strings.TrimSuffix(style.entry, ".css") + "-"
		var names []string
		for name, f := range byName {
			if cssName.MatchString(name) && strings.HasPrefix(name, prefix) {
				names = append(names, name)
				if !f.immutable {
					t.Errorf("%s is content-hashed but not immutable", name)
				}
			}
		}
		entry := strings.TrimSuffix(style.entry, ".css") + ".js"
		if len(names) != 1 || !bytes.Contains(byName[entry].body, []byte(names[0])) {
			t.Fatalf("stylesheets %v; %s must name the one it loads", names, entry)
		}
	}
	for name, f := range byName {
		if strings.HasPrefix(name, "chunk-") != f.immutable && !cssName.MatchString(name) {
			t.Errorf("%s: immutable %v", name, f.immutable)
		}
		if bytes.Contains(f.body, []byte("__SITETOOLS_")) {
			t.Errorf("%s: a stylesheet's name was not filled in", name)
		}
	}

	checkSharing(t, byName)
	checkWeights(t, byName)
}

// checkSharing: the entries share their chunks: a page that loads the chat and the
// bridge runs the bridge once, and the search element loads nothing twice that the chat
// loaded.
func checkSharing(t *testing.T, byName map[string]bundledFile) {
	t.Helper()
	chat, bridge, search := loads(t, byName, "chat.js"), loads(t, byName, "bridge.js"), loads(t, byName, "search.js")
	for _, name := range bridge {
		if strings.HasPrefix(name, "chunk-") && !slices.Contains(chat, name) {
			t.Errorf("bridge.js loads %s, which chat.js does not: the bridge would run twice (chat.js loads %v)", name, chat)
		}
	}
	shared := 0
	for _, name := range search {
		if strings.HasPrefix(name, "chunk-") && slices.Contains(chat, name) {
			shared++
		}
	}
	if shared == 0 {
		t.Errorf("search.js shares no chunk with chat.js: it loads %v, the chat %v", search, chat)
	}
}

// checkWeights: what a page loads for the chat, and what the search element adds to it,
// gzipped at the default level (as a proxy compresses them), within their budgets.
func checkWeights(t *testing.T, byName map[string]bundledFile) {
	t.Helper()
	chat, search := loads(t, byName, "chat.js"), loads(t, byName, "search.js")
	raw, gz := weigh(t, byName, chat)
	t.Logf("the chat widget loads %d files: %d bytes, %d gzipped (budget %d)", len(chat), raw, gz, widgetGzipBudget)
	if gz > widgetGzipBudget {
		t.Errorf("the widget weighs %d bytes gzipped, over its budget of %d", gz, widgetGzipBudget)
	}
	var added []string
	for _, name := range search {
		if !slices.Contains(chat, name) {
			added = append(added, name)
		}
	}
	raw, gz = weigh(t, byName, added)
	t.Logf("the search element adds %v to a page with the chat: %d bytes, %d gzipped (budget %d)", added, raw, gz, searchGzipBudget)
	if gz > searchGzipBudget {
		t.Errorf("the search element adds %d bytes gzipped to a page with the chat, over its budget of %d", gz, searchGzipBudget)
	}
}

// loads is what a page loads for entry: the entry, the chunks it imports, theirs, and
// the stylesheet it names.
func loads(t *testing.T, byName map[string]bundledFile, entry string) []string {
	t.Helper()
	out := []string{}
	todo := []string{entry}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if slices.Contains(out, name) {
			continue
		}
		f, ok := byName[name]
		if !ok {
			t.Fatalf("%s is loaded but not in the bundle", name)
		}
		out = append(out, name)
		for _, m := range imports.FindAllSubmatch(f.body, -1) {
			todo = append(todo, string(m[1]))
		}
		if css := cssName.Find(f.body); css != nil && !slices.Contains(out, string(css)) {
			todo = append(todo, string(css))
		}
	}
	return out
}

// weigh is the size of files, raw and gzipped one by one.
func weigh(t *testing.T, byName map[string]bundledFile, files []string) (raw, gz int) {
	t.Helper()
	for _, name := range files {
		raw += len(byName[name].body)
		gz += gzipSize(t, byName[name].body)
	}
	return raw, gz
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
