package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/evanw/esbuild/pkg/api"
)

// widgetSources are the chat widget, the search element and the WebMCP bridge as
// written: ES modules, their stylesheets, and the browser-local tools' definitions
// (local-tools.json, which the pages' forms are rendered from too). They are bundled once
// per process (see widgetBundle) into what /webmcp/ serves.
//
//go:embed widget/*.js widget/*.css widget/*.json
var widgetSources embed.FS

const widgetDir = "widget"

// The widget's entry points, served under stable names that revalidate (ETag): the
// chat widget (which starts the bridge), the bridge alone, for a site with a chat UI of
// its own, the search element, and the Web Worker in which the chat solves a proof of
// work (a Worker's script must be a file of the page's origin, which the chat names
// relative to itself). Everything they load has its content's hash in its name and is
// cached for a year.
var widgetEntries = []string{"chat.js", "bridge.js", "search.js", "pow-worker.js"}

// widgetStyles are the stylesheets, each bundled into <name>-<hash>.css, by the constant
// that tells its module the bundled name.
var widgetStyles = []struct{ entry, define string }{
	{"chat.css", "__SITETOOLS_CSS__"},
	{"search.css", "__SITETOOLS_SEARCH_CSS__"},
}

// bundledFile is one file of the widget bundle.
type bundledFile struct {
	name      string // file name under /webmcp/
	body      []byte
	immutable bool // content-hashed name: cacheable for good
}

// widgetBundle bundles and minifies the widget's sources with esbuild: each stylesheet
// into <name>-<hash>.css, the modules into chat.js, bridge.js and search.js plus the
// chunks they share (chunk-<hash>.js), so that a page loading several runs the bridge
// once and loads what the chat and the search element share once.
var widgetBundle = sync.OnceValues(func() ([]bundledFile, error) {
	var out []bundledFile
	define := map[string]string{}
	for _, style := range widgetStyles {
		css, err := esbuild(api.BuildOptions{
			EntryPoints: []string{style.entry},
			Loader:      map[string]api.Loader{".css": api.LoaderCSS},
		})
		if err != nil {
			return nil, fmt.Errorf("web: widget stylesheet %s: %w", style.entry, err)
		}
		if len(css) != 1 {
			return nil, fmt.Errorf("web: widget stylesheet %s: %d outputs, want 1", style.entry, len(css))
		}
		sum := sha256.Sum256(css[0].Contents)
		name := strings.TrimSuffix(style.entry, ".css") + "-" + hex.EncodeToString(sum[:])[:12] + ".css"
		literal, _ := json.Marshal(name)
		define[style.define] = string(literal)
		out = append(out, bundledFile{name: name, body: css[0].Contents, immutable: true})
	}

	js, err := esbuild(api.BuildOptions{
		EntryPoints: widgetEntries,
		Splitting:   true,
		Format:      api.FormatESModule,
		EntryNames:  "[name]",
		ChunkNames:  "chunk-[hash]",
		Define:      define,
	})
	if err != nil {
		return nil, fmt.Errorf("web: widget modules: %w", err)
	}
	for _, f := range js {
		name := path.Base(f.Path)
		out = append(out, bundledFile{name: name, body: f.Contents, immutable: strings.HasPrefix(name, "chunk-")})
	}
	return out, nil
})

// esbuild runs one in-memory build over widgetSources.
func esbuild(opts api.BuildOptions) ([]api.OutputFile, error) {
	opts.Bundle = true
	opts.Write = false
	opts.Outdir = "/out"
	opts.MinifyWhitespace = true
	opts.MinifyIdentifiers = true
	opts.MinifySyntax = true
	opts.LegalComments = api.LegalCommentsNone
	opts.Charset = api.CharsetUTF8
	// Browsers with ES modules, private class fields and Object.hasOwn.
	opts.Target = api.ES2022
	opts.LogLevel = api.LogLevelSilent
	opts.Plugins = []api.Plugin{embeddedSources}
	r := api.Build(opts)
	if len(r.Errors) > 0 {
		msgs := make([]string, 0, len(r.Errors))
		for _, m := range r.Errors {
			where := ""
			if m.Location != nil {
				where = fmt.Sprintf("%s:%d: ", m.Location.File, m.Location.Line)
			}
			msgs = append(msgs, where+m.Text)
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	return r.OutputFiles, nil
}

// embeddedSources makes esbuild read the widget's files from the binary: every import
// is a relative path inside web/widget.
var embeddedSources = api.Plugin{
	Name: "embedded",
	Setup: func(b api.PluginBuild) {
		b.OnResolve(api.OnResolveOptions{Filter: `.*`}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
			dir := "."
			if a.Importer != "" {
				dir = path.Dir(a.Importer)
			}
			p := path.Clean(path.Join(dir, a.Path))
			if !strings.HasPrefix(a.Path, "./") && a.Kind != api.ResolveEntryPoint {
				return api.OnResolveResult{}, fmt.Errorf("import %q: only relative imports of web/widget are bundled", a.Path)
			}
			if _, err := fs.Stat(widgetSources, path.Join(widgetDir, p)); err != nil {
				return api.OnResolveResult{}, fmt.Errorf("import %q: %w", a.Path, err)
			}
			return api.OnResolveResult{Path: p, Namespace: "widget"}, nil
		})
		b.OnLoad(api.OnLoadOptions{Filter: `.*`, Namespace: "widget"}, func(a api.OnLoadArgs) (api.OnLoadResult, error) {
			src, err := widgetSources.ReadFile(path.Join(widgetDir, a.Path))
			if err != nil {
				return api.OnLoadResult{}, err
			}
			s := string(src)
			loader := api.LoaderJS
			switch path.Ext(a.Path) {
			case ".css":
				loader = api.LoaderCSS
			case ".json":
				loader = api.LoaderJSON
			}
			return api.OnLoadResult{Contents: &s, Loader: loader}, nil
		})
	},
}

// WidgetFile is one file of the widget bundle, as /webmcp/ serves it.
type WidgetFile struct {
	Name      string
	Body      []byte
	Immutable bool
}

// WidgetFiles are the files bundled from widget/, for the contract test.
func WidgetFiles() ([]WidgetFile, error) {
	b, err := widgetBundle()
	if err != nil {
		return nil, err
	}
	out := make([]WidgetFile, 0, len(b))
	for _, f := range b {
		out = append(out, WidgetFile{Name: f.name, Body: f.body, Immutable: f.immutable})
	}
	return out, nil
}
