package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools"
)

// Reindexer is the publish hook's queue (internal/app's Syncer): jobs that re-ingest
// some pages of the site, or all of it, on the replica that accepted them.
type Reindexer interface {
	// Origin is the site's origin (scheme://host[:port]): the hook's URLs must be on it,
	// and its paths are resolved against it.
	Origin() string
	// Submit queues a job, or returns the queued job that covers it (coalesced true), or
	// the job of a repeated Idempotency-Key.
	Submit(ctx context.Context, r postgres.SyncRequest) (job postgres.IndexSync, coalesced bool, err error)
	// Job returns a job by id (not_found for an unknown one).
	Job(ctx context.Context, id string) (postgres.IndexSync, error)
}

// The publish hook's bounds.
const (
	maxReindexURLs      = 1000
	maxReindexURLLength = 2048
	reindexBodyLimit    = 4 << 20
)

// reindexRequest is the body of POST /admin/reindex.
type reindexRequest struct {
	URLs []string `json:"urls"`
	All  bool     `json:"all"`
}

// reindexJob is a job as the admin API shows it.
type reindexJob struct {
	ID        string             `json:"id"`
	State     string             `json:"state"`
	Coalesced *bool              `json:"coalesced,omitempty"`
	Created   time.Time          `json:"created"`
	Started   *time.Time         `json:"started"`
	Finished  *time.Time         `json:"finished"`
	URLs      int                `json:"urls"`
	All       bool               `json:"all"`
	Pages     postgres.SyncPages `json:"pages"`
	Error     string             `json:"error,omitempty"`
}

func newReindexJob(j postgres.IndexSync) reindexJob {
	return reindexJob{ID: j.ID, State: j.State, Created: j.Created, Started: j.Started, Finished: j.Finished,
		URLs: len(j.URLs), All: j.All, Pages: j.Pages, Error: j.Error}
}

// submitReindex handles POST /admin/reindex: {"urls": [URLs on the site's origin, or
// paths]} or {"all": true}, answered 202 with the job and its Location. It honours
// Idempotency-Key: the same key and request get the same job, another request 409.
func (a *App) submitReindex(c echo.Context) error {
	if a.reindex == nil {
		return tools.Errorf(tools.CodeNotFound, "the publish hook is off: set INGEST_SITEMAP_URL")
	}
	if !isJSON(c.Request().Header.Get("Content-Type")) {
		return tools.Errorf(CodeUnsupportedMediaType, "send the request as application/json")
	}
	body, err := readBody(c.Request(), reindexBodyLimit)
	if err != nil {
		return err
	}
	var req reindexRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		return tools.Errorf(tools.CodeMalformedRequest, `send {"urls": ["https://site.example/page", "/path"]} or {"all": true}, with no other fields`)
	}
	sr, err := reindexTargets(req, a.reindex.Origin())
	if err != nil {
		return err
	}
	sr.IdempotencyKey = c.Request().Header.Get("Idempotency-Key")
	job, coalesced, err := a.reindex.Submit(c.Request().Context(), sr)
	if err != nil {
		return err
	}
	out := newReindexJob(job)
	out.Coalesced = &coalesced
	c.Response().Header().Set("Location", "/admin/reindex/"+job.ID)
	return c.JSON(http.StatusAccepted, out)
}

// getReindex handles GET /admin/reindex/:id.
func (a *App) getReindex(c echo.Context) error {
	if a.reindex == nil {
		return tools.Errorf(tools.CodeNotFound, "the publish hook is off: set INGEST_SITEMAP_URL")
	}
	job, err := a.reindex.Job(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newReindexJob(job))
}

// reindexTargets checks a hook's request and returns it as the queue takes it: the
// whole site, or its URLs made absolute on origin, without fragments, deduplicated and
// sorted, with the hash of that form (so that the same pages asked for in another order
// are the same request).
func reindexTargets(req reindexRequest, origin string) (postgres.SyncRequest, error) {
	switch {
	case req.All && len(req.URLs) > 0:
		return postgres.SyncRequest{}, tools.Errorf(tools.CodeInvalidArguments, `send either "urls" or "all": true, not both`)
	case req.All:
		h := sha256.Sum256([]byte("all"))
		return postgres.SyncRequest{All: true, RequestHash: h[:]}, nil
	case len(req.URLs) == 0:
		return postgres.SyncRequest{}, tools.Errorf(tools.CodeInvalidArguments, `"urls" is empty: send the pages to re-ingest, or "all": true`)
	case len(req.URLs) > maxReindexURLs:
		return postgres.SyncRequest{}, tools.Errorf(tools.CodeInvalidArguments, `"urls" has %d entries; at most %d (send "all": true for the whole site)`, len(req.URLs), maxReindexURLs)
	}
	urls := make([]string, 0, len(req.URLs))
	var details []tools.Detail
	for i, raw := range req.URLs {
		u, err := siteURL(raw, origin)
		if err != nil {
			details = append(details, tools.Detail{Pointer: fmt.Sprintf("/urls/%d", i), Message: err.Error()})
			continue
		}
		urls = append(urls, u)
	}
	if len(details) > 0 {
		e := tools.Errorf(tools.CodeInvalidArguments, "%s", details[0].Message)
		if len(details) > 1 {
			e.Message = fmt.Sprintf("%s (and %d more)", details[0].Message, len(details)-1)
		}
		e.Details = details
		return postgres.SyncRequest{}, e
	}
	slices.Sort(urls)
	urls = slices.Compact(urls)
	h := sha256.Sum256([]byte(strings.Join(urls, "\n")))
	return postgres.SyncRequest{URLs: urls, RequestHash: h[:]}, nil
}

// siteURL returns raw as an absolute URL on origin: a path is resolved against it, an
// absolute URL must be on it. The error names the entry (cut to 200 characters).
func siteURL(raw, origin string) (string, error) {
	name := raw
	if len(name) > 200 {
		name = name[:200] + "…"
	}
	s := strings.TrimSpace(raw)
	if s == "" || len(s) > maxReindexURLLength {
		return "", fmt.Errorf("%q is not a URL or path of at most %d characters", name, maxReindexURLLength)
	}
	if strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		s = origin + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("%q is neither a path (/pricing) nor an http(s) URL on %s", name, origin)
	}
	scheme, host := normalOrigin(u)
	if ws, wh := normalOrigin(mustParse(origin)); scheme != ws || host != wh {
		return "", fmt.Errorf("%q is not on the site's origin %s", name, origin)
	}
	u.Scheme, u.Host = scheme, host
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), nil
}

// normalOrigin is u's scheme and host[:port] in lower case, without the scheme's
// default port.
func normalOrigin(u *url.URL) (scheme, host string) {
	if u == nil {
		return "", ""
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	switch {
	case port != "":
		host = net.JoinHostPort(host, port)
	case strings.Contains(host, ":"):
		host = "[" + host + "]"
	}
	return scheme, host
}

func mustParse(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	return u
}
