package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/net/html"

	"github.com/sitetools/sitetools/tools"
)

// The discovery routes and what they serve.
const (
	catalogPath       = "/.well-known/ai-catalog.json"
	cardPath          = "/mcp/server-card"
	wellKnownCardPath = "/.well-known/mcp/server-card.json"
	cardMeta          = "io.github.sitetools/"
)

var discoveryPaths = []string{catalogPath, cardPath, wellKnownCardPath}

// compileSchema compiles the schema at ref (file#pointer) of testdata/discovery, formats
// asserted as Ajv's full formats do in Lighthouse's validator.
func compileSchema(t *testing.T, file, pointer string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/discovery/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := "file:///" + file
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url + pointer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ardURN is the audit's identifier pattern: urn:air:<publisher>:<namespace>:<name>.
var ardURN = regexp.MustCompile(`^urn:air:([a-zA-Z0-9.-]+)(?::([a-zA-Z0-9._:-]+))?:([a-zA-Z0-9._-]+)$`)

// ardTypes are the media types the audit knows; another is a warning.
var ardTypes = []string{"application/ai-catalog+json", "application/agent-card+json", "application/a2a-agent-card+json",
	"application/mcp-server-card+json", "application/agent-skills+zip", "application/agent-skills+gzip",
	`text/markdown; profile="urn:air:agent-skills"`, "application/ai-registry", "application/ai-registry+json"}

// ardProblems is Lighthouse 13.5's ard-schema audit (third-party/ard/ard.js,
// validate_manifest) in Go: the schema, then its own checks. The audit scores 1 only
// without errors and warnings, so both are problems here.
func ardProblems(schema *jsonschema.Schema, raw []byte) []string {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return []string{"malformed JSON: " + err.Error()}
	}
	var problems []string
	if err := schema.Validate(inst); err != nil {
		problems = append(problems, "schema: "+err.Error())
	}
	data, _ := inst.(map[string]any)
	if v := data["specVersion"]; !truthy(v) {
		problems = append(problems, "missing specVersion")
	} else if v != "1.0" {
		problems = append(problems, fmt.Sprintf("warning: specVersion %v", v))
	}
	if _, ok := data["collections"]; ok {
		problems = append(problems, "collections at the root")
	}
	entries, ok := data["entries"].([]any)
	if !ok {
		return append(problems, "entries missing or not an array")
	}
	for i, e := range entries {
		entry, _ := e.(map[string]any)
		problems = append(problems, ardEntryProblems(fmt.Sprintf("entry %d: ", i), entry)...)
	}
	return problems
}

func ardEntryProblems(label string, entry map[string]any) []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, label+fmt.Sprintf(format, args...)) }
	if id, _ := entry["identifier"].(string); !truthy(entry["identifier"]) {
		add("missing identifier")
	} else if !ardURN.MatchString(id) {
		add("identifier %q is not urn:air:<publisher>:<namespace>:<name>", id)
	}
	if !truthy(entry["displayName"]) {
		add("missing displayName")
	}
	if typ, _ := entry["type"].(string); !truthy(entry["type"]) {
		add("missing type")
	} else if !slices.Contains(ardTypes, typ) {
		add("warning: type %q is not a standard discovery type", typ)
	}
	_, hasURL := entry["url"]
	_, hasData := entry["data"]
	if hasURL == hasData {
		add("url and data: %v and %v, want exactly one", hasURL, hasData)
	}
	switch q := entry["representativeQueries"].(type) {
	case nil:
		add("warning: no representativeQueries")
	case []any:
		if len(q) < 2 || len(q) > 5 {
			add("warning: %d representativeQueries, want 2 to 5", len(q))
		}
		for _, s := range q {
			if _, ok := s.(string); !ok {
				add("query %v is not a string", s)
			}
		}
	default:
		add("representativeQueries is not an array")
	}
	if tm, ok := entry["trustManifest"]; ok && tm != nil {
		if m, ok := tm.(map[string]any); !ok {
			add("trustManifest is not an object")
		} else if !truthy(m["identity"]) {
			add("trustManifest without identity")
		}
	}
	return p
}

// truthy is JavaScript's truth, which the audit's checks use.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return v != ""
	case bool:
		return v
	case json.Number:
		f, err := v.Float64()
		return err == nil && f != 0
	}
	return true
}

// TestARDChecks: the port of the audit finds what the audit finds.
func TestARDChecks(t *testing.T) {
	schema := compileSchema(t, "ai-catalog.schema.json", "")
	entry := `"identifier":"urn:air:site.example:mcp:sitetools","displayName":"sitetools","type":"application/mcp-server-card+json"`
	queries := `"representativeQueries":["a","b"]`
	for _, tc := range []struct {
		name, doc string
		want      int // problems
	}{
		{"valid by url", `{"specVersion":"1.0","entries":[{` + entry + `,"url":"https://site.example/mcp/server-card",` + queries + `}]}`, 0},
		{"valid by data", `{"specVersion":"1.0","entries":[{` + entry + `,"data":{},` + queries + `}]}`, 0},
		{"no specVersion", `{"entries":[{` + entry + `,"data":{},` + queries + `}]}`, 2},
		{"both url and data", `{"specVersion":"1.0","entries":[{` + entry + `,"url":"https://a.example/","data":{},` + queries + `}]}`, 2},
		{"one query", `{"specVersion":"1.0","entries":[{` + entry + `,"data":{},"representativeQueries":["a"]}]}`, 2},
		{"no queries", `{"specVersion":"1.0","entries":[{` + entry + `,"data":{}}]}`, 1},
		{"identifier without namespace", `{"specVersion":"1.0","entries":[{"identifier":"urn:air:site","displayName":"x","type":"application/mcp-server-card+json","data":{},` + queries + `}]}`, 2},
		{"relative url", `{"specVersion":"1.0","entries":[{` + entry + `,"url":"/mcp/server-card",` + queries + `}]}`, 1},
		{"unknown type", `{"specVersion":"1.0","entries":[{"identifier":"urn:air:a:b:c","displayName":"x","type":"application/json","data":{},` + queries + `}]}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ardProblems(schema, []byte(tc.doc)); len(got) != tc.want {
				t.Errorf("%d problems, want %d: %q", len(got), tc.want, got)
			}
		})
	}
}

// get fetches path and fails unless it is 200.
func (te *testEnv) get(t *testing.T, path string, header map[string]string) response {
	t.Helper()
	r := te.do(t, http.MethodGet, path, nil, header)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	return r
}

type discoveryDocs struct {
	catalog struct {
		Entries []struct {
			Identifier            string   `json:"identifier"`
			DisplayName           string   `json:"displayName"`
			Type                  string   `json:"type"`
			URL                   string   `json:"url"`
			Capabilities          []string `json:"capabilities"`
			RepresentativeQueries []string `json:"representativeQueries"`
		} `json:"entries"`
	}
	card struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Remotes []struct {
			Type                      string   `json:"type"`
			URL                       string   `json:"url"`
			SupportedProtocolVersions []string `json:"supportedProtocolVersions"`
		} `json:"remotes"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	catalogETag, cardETag string
}

// discovery fetches both documents, checks them against their schemas and the audit, and
// checks that the card is the same at both of its paths.
func (te *testEnv) discovery(t *testing.T) discoveryDocs {
	t.Helper()
	var d discoveryDocs
	cat := te.get(t, catalogPath, nil)
	if p := ardProblems(compileSchema(t, "ai-catalog.schema.json", ""), cat.body); len(p) > 0 {
		t.Errorf("the catalog fails the ard-schema audit: %q\n%s", p, cat.body)
	}
	card := te.get(t, cardPath, nil)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(card.body))
	if err != nil {
		t.Fatal(err)
	}
	if err := compileSchema(t, "server-card.schema.json", "#/$defs/ServerCard").Validate(inst); err != nil {
		t.Errorf("the card fails the server-card schema: %v\n%s", err, card.body)
	}
	if wk := te.get(t, wellKnownCardPath, nil); !bytes.Equal(wk.body, card.body) || wk.header.Get("ETag") != card.header.Get("ETag") {
		t.Errorf("%s and %s differ", wellKnownCardPath, cardPath)
	}
	mustUnmarshal(t, cat.body, &d.catalog)
	mustUnmarshal(t, card.body, &d.card)
	d.catalogETag, d.cardETag = cat.header.Get("ETag"), card.header.Get("ETag")
	return d
}

// mcpToolsList is /mcp's answer to tools/list, and GET /api/chat/tools's list.
func (te *testEnv) toolLists(t *testing.T) (mcpTools, apiTools []map[string]any) {
	t.Helper()
	r := te.do(t, http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
		map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
	var rpc struct {
		Result struct{ Tools []map[string]any }
	}
	mustUnmarshal(t, r.body, &rpc)
	var api struct{ Tools []map[string]any }
	mustUnmarshal(t, te.get(t, "/api/chat/tools", nil).body, &api)
	return rpc.Result.Tools, api.Tools
}

// checkCardTools: the card's tools are /mcp's tools/list, member for member, and have the
// name, title, description and input schema of GET /api/chat/tools.
func checkCardTools(t *testing.T, te *testEnv, d discoveryDocs) {
	t.Helper()
	var cardTools []map[string]any
	mustUnmarshal(t, d.card.Meta[cardMeta+"tools"], &cardTools)
	mcpTools, apiTools := te.toolLists(t)
	if diff := cmp.Diff(mcpTools, cardTools); diff != "" {
		t.Errorf("card tools differ from /mcp tools/list (-mcp +card):\n%s", diff)
	}
	pick := func(list []map[string]any) []map[string]any {
		out := make([]map[string]any, len(list))
		for i, tool := range list {
			out[i] = map[string]any{"name": tool["name"], "title": tool["title"], "description": tool["description"], "inputSchema": tool["inputSchema"]}
		}
		return out
	}
	if diff := cmp.Diff(pick(apiTools), pick(cardTools)); diff != "" {
		t.Errorf("card tools differ from GET /api/chat/tools (-api +card):\n%s", diff)
	}
	names := make([]string, len(apiTools))
	for i, tool := range apiTools {
		names[i] = tool["name"].(string)
	}
	if got := d.catalog.Entries[0].Capabilities; !slices.Equal(got, names) {
		t.Errorf("catalog capabilities %q, want the tools %q", got, names)
	}
}

// TestDiscoveryDocuments: the catalog passes Lighthouse's ard-schema audit and points at
// the card; the card passes the draft's schema, names /mcp at SITE_URL with the revisions
// the SDK negotiates, its stance, and the registry's tools as every channel lists them.
func TestDiscoveryDocuments(t *testing.T) {
	te := newEnv(t, nil)
	d := te.discovery(t)
	if len(d.catalog.Entries) != 1 {
		t.Fatalf("%d catalog entries, want the MCP server alone", len(d.catalog.Entries))
	}
	e := d.catalog.Entries[0]
	if e.Type != "application/mcp-server-card+json" || e.URL != "https://site.example"+cardPath ||
		e.Identifier != "urn:air:site.example:mcp:sitetools" || e.DisplayName != "sitetools" {
		t.Errorf("catalog entry %+v", e)
	}
	if d.card.Name != "example.site/sitetools" || d.card.Version != "devel" {
		t.Errorf("card name %q, version %q", d.card.Name, d.card.Version)
	}
	if len(d.card.Remotes) != 1 || d.card.Remotes[0].Type != "streamable-http" || d.card.Remotes[0].URL != "https://site.example/mcp" ||
		!slices.Equal(d.card.Remotes[0].SupportedProtocolVersions, mcp.SupportedProtocolVersions()) {
		t.Errorf("card remotes %+v", d.card.Remotes)
	}
	for key, want := range map[string]string{
		"access":       `{"authentication":"none","stateless":true,"sessions":false,"cookies":false}`,
		"capabilities": `{"logging":{},"tools":{"listChanged":true}}`,
	} {
		if got := string(d.card.Meta[cardMeta+key]); got != want {
			t.Errorf("card _meta %s: %s, want %s", key, got, want)
		}
	}
	checkCardTools(t, te, d)
}

// TestDiscoveryFollowsRegistry: a tool registered later, or the same tool with another
// description, is in both documents at once, under new ETags.
func TestDiscoveryFollowsRegistry(t *testing.T) {
	extra := func(description string) tools.Tool {
		return tools.Tool{Name: "weather", Title: "Weather at the office", Description: description,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"day":{"type":"string","format":"date"}},"additionalProperties":false}`),
			Annotations: tools.Annotations{ReadOnly: true},
			Handler:     func(context.Context, json.RawMessage) (*tools.Result, error) { return tools.TextResult("sunny"), nil }}
	}
	var afters []discoveryDocs
	for _, description := range []string{"Tells the weather at the office.", "Tells the weather at the office, today or any day."} {
		te := newEnv(t, nil)
		before := te.discovery(t)
		if err := te.App.Registry().Add(extra(description)); err != nil {
			t.Fatal(err)
		}
		after := te.discovery(t)
		checkCardTools(t, te, after)
		if !strings.Contains(string(after.card.Meta[cardMeta+"tools"]), description) {
			t.Errorf("the card does not have the description %q", description)
		}
		if q := after.catalog.Entries[0].RepresentativeQueries; !slices.Contains(q, "Weather at the office") {
			t.Errorf("representative queries %q without the new tool's title", q)
		}
		if before.catalogETag == after.catalogETag || before.cardETag == after.cardETag {
			t.Errorf("an ETag did not change with the new tool: catalog %s → %s, card %s → %s",
				before.catalogETag, after.catalogETag, before.cardETag, after.cardETag)
		}
		afters = append(afters, after)
	}
	if a, b := afters[0], afters[1]; a.catalogETag == b.catalogETag || a.cardETag == b.cardETag {
		t.Errorf("an ETag did not change with the description: catalog %s, card %s", a.catalogETag, a.cardETag)
	}
}

// TestDiscoveryHTTP: each document revalidates by its ETag, answers HEAD, and is open to
// browsers on any origin, preflight included.
func TestDiscoveryHTTP(t *testing.T) {
	te := newEnv(t, nil)
	types := map[string]string{catalogPath: "application/ai-catalog+json", cardPath: "application/mcp-server-card+json",
		wellKnownCardPath: "application/mcp-server-card+json"}
	cors := map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET, HEAD",
		"Access-Control-Allow-Headers": "Content-Type, If-None-Match", "Access-Control-Expose-Headers": "ETag"}
	for _, path := range discoveryPaths {
		t.Run(path, func(t *testing.T) {
			// From another site's page: public metadata, not refused as the API would.
			r := te.get(t, path, map[string]string{"Origin": "https://elsewhere.example"})
			etag := r.header.Get("ETag")
			want := map[string]string{"Content-Type": types[path], "Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"}
			for k, v := range cors {
				want[k] = v
			}
			for k, v := range want {
				if got := r.header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if !strings.HasPrefix(etag, `"`) || r.header.Get("Set-Cookie") != "" {
				t.Errorf("ETag %q, Set-Cookie %q", etag, r.header.Get("Set-Cookie"))
			}
			for _, tc := range []struct {
				method, inm string
				status      int
			}{
				{http.MethodGet, etag, http.StatusNotModified},
				{http.MethodGet, `"other", W/` + etag, http.StatusNotModified},
				{http.MethodGet, `"other"`, http.StatusOK},
				{http.MethodHead, "", http.StatusOK},
				{http.MethodHead, etag, http.StatusNotModified},
			} {
				got := te.do(t, tc.method, path, nil, map[string]string{"If-None-Match": tc.inm})
				if got.status != tc.status || got.header.Get("ETag") != etag {
					t.Errorf("%s If-None-Match %s: %d, ETag %s; want %d, %s", tc.method, tc.inm, got.status, got.header.Get("ETag"), tc.status, etag)
				}
				if tc.method == http.MethodHead && (len(got.body) != 0 || tc.status == 200 && got.header.Get("Content-Length") != fmt.Sprint(len(r.body))) {
					t.Errorf("HEAD: body %q, Content-Length %s", got.body, got.header.Get("Content-Length"))
				}
			}
			pre := te.do(t, http.MethodOptions, path, nil, map[string]string{"Origin": "https://elsewhere.example",
				"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "if-none-match"})
			if pre.status != http.StatusNoContent || pre.header.Get("Access-Control-Allow-Origin") != "*" ||
				pre.header.Get("Access-Control-Allow-Headers") != cors["Access-Control-Allow-Headers"] {
				t.Errorf("preflight: %d %v", pre.status, pre.header)
			}
		})
	}
}

// TestDiscoveryOrigin: without SITE_URL, the documents name the origin the request was
// addressed to, https only when a trusted proxy says so.
func TestDiscoveryOrigin(t *testing.T) {
	for _, tc := range []struct {
		name, trusted, proto, scheme string
	}{
		{"direct", "", "", "http"},
		{"a client's own X-Forwarded-Proto", "", "https", "http"},
		{"behind a trusted proxy", "127.0.0.1/32", "https", "https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newEnv(t, map[string]string{"SITE_URL": "", "TRUSTED_PROXIES": tc.trusted})
			host := strings.TrimPrefix(te.Srv.URL, "http://")
			h := map[string]string{"X-Forwarded-Proto": tc.proto}
			var card struct {
				Name, WebsiteURL string
				Remotes          []struct{ URL string }
			}
			mustUnmarshal(t, te.get(t, cardPath, h).body, &card)
			var cat struct {
				Entries []struct{ Identifier, URL string }
			}
			mustUnmarshal(t, te.get(t, catalogPath, h).body, &cat)
			origin := tc.scheme + "://" + host
			if card.WebsiteURL != origin || card.Remotes[0].URL != origin+"/mcp" || card.Name != "127.0.0.1/sitetools" {
				t.Errorf("card: %+v, want %s", card, origin)
			}
			if e := cat.Entries[0]; e.URL != origin+cardPath || e.Identifier != "urn:air:127.0.0.1:mcp:sitetools" {
				t.Errorf("catalog entry: %+v, want %s", e, origin)
			}
		})
	}
}

// TestDiscoveryLinks: every page the service renders, and its 404 page, carries the
// catalog's Link header and <link rel="ai-catalog">; so does / without pages.
func TestDiscoveryLinks(t *testing.T) {
	const want = `</.well-known/ai-catalog.json>; rel="ai-catalog"`
	te := siteEnv(t, nil)
	for _, path := range []string{"/", "/pricing", "/de/", "/no-such-page"} {
		r := te.do(t, http.MethodGet, path, nil, map[string]string{"Accept": "text/html"})
		if got := r.header.Get("Link"); got != want {
			t.Errorf("%s (%d): Link %q, want %q", path, r.status, got, want)
		}
		links := findAll(parseHTML(t, r.body), func(n *html.Node) bool { return n.Data == "link" && attr(n, "rel") == "ai-catalog" })
		if len(links) != 1 || attr(links[0], "href") != catalogPath {
			t.Errorf("%s: %d <link rel=ai-catalog>", path, len(links))
		}
	}
	bare := newEnv(t, nil)
	if r := bare.do(t, http.MethodGet, "/", nil, nil); r.status != http.StatusNotFound || r.header.Get("Link") != want {
		t.Errorf("/ without pages: %d, Link %q", r.status, r.header.Get("Link"))
	}
}

// discoveryCases are TestContract's cases of the discovery routes: every operation and
// response openapi.yaml lists for them.
func discoveryCases() []contractCase {
	rebind := func(r *http.Request) { r.Host = "rebind.attacker.example" }
	anyETag := with(nil, "If-None-Match", "*")
	var cases []contractCase
	for _, path := range discoveryPaths {
		cases = append(cases,
			contractCase{name: "discovery " + path, method: "GET", path: path, status: 200, check: hasHeader("Access-Control-Allow-Origin", "*")},
			contractCase{name: "discovery " + path + " not modified", method: "GET", path: path, header: anyETag, status: 304, check: noBody},
			contractCase{name: "discovery " + path + " rebinding host", method: "GET", path: path, before: rebind, status: 403, code: "origin_not_allowed"},
			contractCase{name: "discovery head " + path, method: "HEAD", path: path, status: 200, check: noBody},
			contractCase{name: "discovery head " + path + " not modified", method: "HEAD", path: path, header: anyETag, status: 304, check: noBody},
			contractCase{name: "discovery head " + path + " rebinding host", method: "HEAD", path: path, before: rebind, status: 403, check: noBody},
			contractCase{name: "discovery preflight " + path, method: "OPTIONS", path: path,
				header: with(nil, "Origin", evilOrigin, "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "if-none-match"),
				status: 204, check: hasHeader("Access-Control-Allow-Origin", "*")},
		)
	}
	return cases
}
