package deploy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

// TestProxiesRouteDiscovery: through nginx and Caddy, with the site at an upstream of its
// own, the AI catalog and the MCP server card reach sitetools with their methods,
// revalidation and CORS headers, and the rest of /.well-known stays the site's.
func TestProxiesRouteDiscovery(t *testing.T) {
	sitetools, site := namedUpstream(t, "sitetools"), namedUpstream(t, "site")
	eachProxyApart(t, strings.TrimPrefix(sitetools.URL, "http://"), strings.TrimPrefix(site.URL, "http://"), func(t *testing.T, base string) {
		for _, c := range []struct{ method, path, want string }{
			{http.MethodGet, "/.well-known/ai-catalog.json", "sitetools"},
			{http.MethodGet, "/.well-known/mcp/server-card.json", "sitetools"},
			{http.MethodGet, "/mcp/server-card", "sitetools"},
			{http.MethodHead, "/mcp/server-card", "sitetools"},
			{http.MethodOptions, "/.well-known/ai-catalog.json", "sitetools"},
			{http.MethodGet, "/.well-known/security.txt", "site"},
			{http.MethodGet, "/", "site"},
		} {
			checkRouted(t, base, c.method, c.path, c.want)
		}
	})
}

// checkRouted sends method path through the proxy at base and checks that upstream want
// answered it, with its headers, and that a matching If-None-Match comes back 304.
func checkRouted(t *testing.T, base, method, path, want string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, nil)
	req.Header.Set("Origin", "https://elsewhere.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Upstream") != want ||
		method != http.MethodHead && string(b) != fmt.Sprintf("%s %s", method, path) {
		t.Errorf("%s %s: %d from %q, %q; want %s", method, path, resp.StatusCode, resp.Header.Get("X-Upstream"), b, want)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("ETag") != `"v1"` {
		t.Errorf("%s %s: headers %v", method, path, resp.Header)
	}
	if method != http.MethodGet {
		return
	}
	req.Header.Set("If-None-Match", `"v1"`)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified || resp.Header.Get("X-Upstream") != want {
		t.Errorf("%s %s with If-None-Match: %d from %q", method, path, resp.StatusCode, resp.Header.Get("X-Upstream"))
	}
}

// namedUpstream answers every request with its name in X-Upstream, an ETag, open CORS,
// and its method and path; 304 for a matching If-None-Match.
func namedUpstream(t *testing.T, name string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Upstream", name)
		h.Set("ETag", `"v1"`)
		h.Set("Access-Control-Allow-Origin", "*")
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestIngressRoutesDiscovery: the Kubernetes Ingress sends the AI catalog and the MCP
// server card to sitetools (k8sService checks that every path goes to its Service), and
// nothing else of /.well-known.
func TestIngressRoutesDiscovery(t *testing.T) {
	ing := one[networkingv1.Ingress](t, loadManifests(t))
	paths := map[string]string{}
	for _, p := range ing.Spec.Rules[0].HTTP.Paths {
		paths[p.Path] = string(*p.PathType)
	}
	for path, typ := range map[string]string{"/mcp/server-card": "Exact", "/.well-known/ai-catalog.json": "Exact", "/.well-known/mcp": "Prefix"} {
		if paths[path] != typ {
			t.Errorf("Ingress path %s: %q, want %s", path, paths[path], typ)
		}
	}
	for path := range paths {
		if strings.HasPrefix(path, "/.well-known") && path != "/.well-known/ai-catalog.json" && path != "/.well-known/mcp" {
			t.Errorf("Ingress sends %s to sitetools: the rest of /.well-known is the site's", path)
		}
	}
}
