package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sitetools/sitetools/tools"
)

// The discovery documents: how an agent that lands on the site finds /mcp without being
// told. Both are views of the MCP server /mcp runs, rendered from what its SDK answers
// to server/discover and tools/list, so that they cannot say something /mcp does not.
//
//   - The AI catalog, Agentic Resource Discovery 1.0 (ards-project/ard-spec at
//     b76f235a8f461876ad4f1e77abd0eb0eb302b48d, the commit Lighthouse 13.5's ard-schema
//     audit pins), with one entry: the MCP server card, by url.
//   - The MCP server card of the SEP-2127 draft (modelcontextprotocol/
//     experimental-ext-server-card at 8924e08682b4a936e6464b57845ec2ff17dc8776, schema
//     v1), at the draft's reserved <streamable-http-url>/server-card and, for clients of
//     the earlier drafts (SEP-1649), at /.well-known/mcp/server-card.json.
const (
	catalogPath       = "/.well-known/ai-catalog.json"
	cardPath          = "/mcp/server-card"
	wellKnownCardPath = "/.well-known/mcp/server-card.json"

	catalogMediaType = "application/ai-catalog+json"
	cardMediaType    = "application/mcp-server-card+json"
	cardSchema       = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
	// metaPrefix namespaces what the card says beyond the draft's fields, in its _meta
	// (the draft's extension point): the module's reverse-DNS name.
	metaPrefix = "io.github.sitetools/"
)

// discoveryLink is the Link header of every page: Lighthouse's ard-schema audit and
// agents find the catalog by it (the card has no link relation of its own; the catalog
// points at it).
const discoveryLink = `<` + catalogPath + `>; rel="ai-catalog"`

// mcpFacts is what the MCP SDK says about /mcp, taken from its own answers.
type mcpFacts struct {
	name, title, version string
	versions             []string        // the protocol revisions it negotiates, newest first
	capabilities         json.RawMessage // as server/discover has them
	tools                json.RawMessage // the array tools/list answers
	toolNames            []string
	toolTitles           []string // the tools' titles, then the names of those without one
	registryETag         string   // of the registry's catalog these facts are of
}

// probeFacts asks sdk for server/discover and tools/list, under the newest revision it
// negotiates, as a client would.
func probeFacts(sdk http.Handler) (*mcpFacts, error) {
	var disc struct {
		Meta struct {
			ServerInfo struct{ Name, Title, Version string } `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
	}
	if err := probe(sdk, "server/discover", &disc); err != nil {
		return nil, err
	}
	var list struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := probe(sdk, "tools/list", &list); err != nil {
		return nil, err
	}
	var listed []struct{ Name, Title string }
	if err := json.Unmarshal(list.Tools, &listed); err != nil {
		return nil, fmt.Errorf("server: tools/list: %w", err)
	}
	info := disc.Meta.ServerInfo
	if info.Name == "" || len(disc.SupportedVersions) == 0 || len(disc.Capabilities) == 0 {
		return nil, fmt.Errorf("server: server/discover answered without serverInfo, versions or capabilities")
	}
	f := &mcpFacts{name: info.Name, title: info.Title, version: info.Version, versions: disc.SupportedVersions,
		capabilities: disc.Capabilities, tools: list.Tools}
	var untitled []string
	for _, t := range listed {
		f.toolNames = append(f.toolNames, t.Name)
		if t.Title != "" {
			f.toolTitles = append(f.toolTitles, t.Title)
		} else {
			untitled = append(untitled, t.Name)
		}
	}
	// A title reads as what an agent would ask for; a name, less so.
	f.toolTitles = append(f.toolTitles, untitled...)
	return f, nil
}

// probe sends one request of method to sdk and decodes its result into out.
func probe(sdk http.Handler, method string, out any) error {
	rev := mcp.SupportedProtocolVersions()[0]
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"` + rev + `",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"sitetools-discovery","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", rev)
	req.Header.Set("Mcp-Method", method)
	rec := httptest.NewRecorder()
	sdk.ServeHTTP(rec, req)
	var answer struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil || rec.Code != http.StatusOK || len(answer.Result) == 0 {
		return fmt.Errorf("server: %s under %s: %d %s", method, rev, rec.Code, bytes.TrimSpace(rec.Body.Bytes()))
	}
	if err := json.Unmarshal(answer.Result, out); err != nil {
		return fmt.Errorf("server: %s: %w", method, err)
	}
	return nil
}

// serverCard is the MCP server card (draft schema v1). The tools, the capabilities and
// how to connect are in _meta: the draft leaves primitives to tools/list, and a client
// that does not read _meta loses nothing it would get elsewhere.
type serverCard struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Description string         `json:"description"`
	Title       string         `json:"title,omitempty"`
	WebsiteURL  string         `json:"websiteUrl"`
	Remotes     []cardRemote   `json:"remotes"`
	Meta        map[string]any `json:"_meta"`
}

type cardRemote struct {
	Type                      string   `json:"type"`
	URL                       string   `json:"url"`
	SupportedProtocolVersions []string `json:"supportedProtocolVersions"`
}

// cardAccess is what a client needs to know before it connects: nothing to present,
// nothing kept between requests.
type cardAccess struct {
	Authentication string `json:"authentication"`
	Stateless      bool   `json:"stateless"`
	Sessions       bool   `json:"sessions"`
	Cookies        bool   `json:"cookies"`
}

func (f *mcpFacts) card(origin string) serverCard {
	return serverCard{
		Schema:      cardSchema,
		Name:        reverseDNS(originHost(origin)) + "/" + urnPart(f.name),
		Version:     f.version,
		Description: mcpDescription,
		Title:       f.title,
		WebsiteURL:  origin,
		Remotes:     []cardRemote{{Type: "streamable-http", URL: origin + "/mcp", SupportedProtocolVersions: f.versions}},
		Meta: map[string]any{
			metaPrefix + "access":       cardAccess{Authentication: "none", Stateless: true},
			metaPrefix + "capabilities": f.capabilities,
			metaPrefix + "tools":        f.tools,
		},
	}
}

// aiCatalog is an Agentic Resource Discovery 1.0 catalog.
type aiCatalog struct {
	SpecVersion string         `json:"specVersion"`
	Host        catalogHost    `json:"host"`
	Entries     []catalogEntry `json:"entries"`
}

type catalogHost struct {
	DisplayName string `json:"displayName"`
}

type catalogEntry struct {
	Identifier            string   `json:"identifier"`
	DisplayName           string   `json:"displayName"`
	Type                  string   `json:"type"`
	URL                   string   `json:"url"`
	Description           string   `json:"description"`
	Capabilities          []string `json:"capabilities"`
	RepresentativeQueries []string `json:"representativeQueries"`
	Version               string   `json:"version"`
}

func (f *mcpFacts) catalog(origin string) aiCatalog {
	host := originHost(origin)
	return aiCatalog{
		SpecVersion: "1.0",
		Host:        catalogHost{DisplayName: host},
		Entries: []catalogEntry{{
			// urn:air:<publisher>:<namespace>:<name>, as the server-card draft's example.
			Identifier:            "urn:air:" + urnPart(host) + ":mcp:" + urnPart(f.name),
			DisplayName:           cmp.Or(f.title, f.name),
			Type:                  cardMediaType,
			URL:                   origin + cardPath,
			Description:           mcpDescription,
			Capabilities:          append([]string{}, f.toolNames...),
			RepresentativeQueries: representativeQueries(f.toolTitles, host),
			Version:               f.version,
		}},
	}
}

// representativeQueries are the tools' titles, 2 to 5 of them as the catalog's entries
// want (a registry of fewer tools is made up to two with what the server is).
func representativeQueries(titles []string, host string) []string {
	q := titles[:min(len(titles), 5):min(len(titles), 5)]
	for _, more := range []string{"Tools of " + host, "MCP server of " + host} {
		if len(q) < 2 {
			q = append(q, more)
		}
	}
	return q
}

// originHost is the host of origin, lower-cased, without port or IPv6 brackets.
func originHost(origin string) string {
	_, hostport, _ := strings.Cut(origin, "://")
	return hostOnly(hostport)
}

// reverseDNS is host as the card's name wants its namespace: example.com → com.example.
// An address stays as it is.
func reverseDNS(host string) string {
	if net.ParseIP(host) != nil {
		return urnPart(host)
	}
	labels := strings.Split(host, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return urnPart(strings.Join(labels, "."))
}

// urnPart keeps the characters a URN's and a card name's parts allow (letters, digits,
// dot, hyphen) and turns any other (an IPv6 address's colons) into a hyphen.
func urnPart(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, s)
}

// siteOrigin is the origin the documents name: SITE_URL, or the one the request was
// addressed to (its scheme as a trusted proxy says, see requestScheme).
func (a *App) siteOrigin(r *http.Request) string {
	if a.cfg.SiteURL != "" {
		return a.cfg.SiteURL
	}
	host := strings.ToLower(r.Host)
	if host == "" {
		host = "localhost"
	}
	return a.requestScheme(r) + "://" + host
}

// aiCatalogDoc handles GET and HEAD of /.well-known/ai-catalog.json.
func (a *App) aiCatalogDoc(c echo.Context) error {
	return a.serveDiscovery(c, catalogMediaType, func(f *mcpFacts, origin string) any { return f.catalog(origin) })
}

// serverCardDoc handles GET and HEAD of /mcp/server-card and
// /.well-known/mcp/server-card.json.
func (a *App) serverCardDoc(c echo.Context) error {
	return a.serveDiscovery(c, cardMediaType, func(f *mcpFacts, origin string) any { return f.card(origin) })
}

// serveDiscovery renders a discovery document for the request's origin. It is small and
// rendered per request (its origin may be the request's). Its ETag is of its bytes and
// of the registry's catalog: it changes with the origin and whenever the registry does,
// as the tool list's does, even where the document itself does not show the change (the
// catalog has no tool descriptions), so that a client revalidating one document learns
// that the other may have changed.
func (a *App) serveDiscovery(c echo.Context, mediaType string, render func(*mcpFacts, string) any) error {
	facts, err := a.mcp.discoveryFacts()
	if err != nil {
		return tools.Internal(err)
	}
	b, err := json.Marshal(render(facts, a.siteOrigin(c.Request())))
	if err != nil {
		return tools.Internal(err)
	}
	etag := tools.ETag(append([]byte(facts.registryETag), b...))
	h := c.Response().Header()
	h.Set("ETag", etag)
	// The draft's advice: an hour, then revalidated by the ETag.
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("X-Content-Type-Options", "nosniff")
	if etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	h.Set(echo.HeaderContentType, mediaType)
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	if c.Request().Method == http.MethodHead {
		return c.NoContent(http.StatusOK)
	}
	return c.Blob(http.StatusOK, mediaType, b)
}

// openCORS lets a browser on any origin read the discovery documents: they are public,
// read-only metadata, and hold nothing a visitor's credentials could unlock (the
// server-card draft requires these headers). They are set on every answer, so that no
// cache needs to vary by Origin; a preflight is answered here.
func openCORS(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, HEAD")
		h.Set("Access-Control-Allow-Headers", "Content-Type, If-None-Match")
		h.Set("Access-Control-Expose-Headers", "ETag")
		if c.Request().Method == http.MethodOptions {
			h.Set("Access-Control-Max-Age", "86400")
			return c.NoContent(http.StatusNoContent)
		}
		return next(c)
	}
}
