package server

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/tools"
)

// listTools handles GET /api/chat/tools: the registry's catalog, precomputed, with a
// strong ETag so that a client revalidates for free.
func (a *App) listTools(c echo.Context) error {
	cat := a.registry.Catalog()
	h := c.Response().Header()
	h.Set("ETag", cat.ETag)
	h.Set("Cache-Control", "public, max-age=60")
	if etagMatches(c.Request().Header.Get("If-None-Match"), cat.ETag) {
		return c.NoContent(http.StatusNotModified)
	}
	// With its length known, the catalog goes out in one piece, not chunked.
	h.Set("Content-Length", strconv.Itoa(len(cat.JSON)))
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, cat.JSON)
}

// callTool handles POST /api/chat/tools: {"name": "...", "arguments": {...}} → an
// MCP-shaped result, or an error in the one error shape.
func (a *App) callTool(c echo.Context) error {
	req := c.Request()
	c.Set(ctxChannel, string(tools.ChannelWebMCP))
	if !isJSON(req.Header.Get("Content-Type")) {
		return tools.Errorf(CodeUnsupportedMediaType, "send the request body as application/json")
	}
	body, err := readBody(req, a.cfg.BodyLimitBytes)
	if err != nil {
		return err
	}
	name, args, err := parseCallBody(body)
	if err != nil {
		return err
	}
	if _, ok := a.registry.Lookup(name); ok {
		c.Set(ctxTool, name) // only names of real tools reach the log
	}
	ctx := tools.WithRequest(req.Context(), tools.Request{
		Channel:        tools.ChannelWebMCP,
		Client:         c.RealIP(),
		IdempotencyKey: req.Header.Get("Idempotency-Key"),
	})
	res, err := a.registry.Call(ctx, name, args)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == echo.MIMEApplicationJSON
}

// readBody reads at most limit bytes; a longer body is refused without reading it all.
func readBody(req *http.Request, limit int64) ([]byte, error) {
	tooLarge := tools.Errorf(CodeBodyTooLarge, "request body is larger than %d bytes", limit)
	if req.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	if err != nil {
		return nil, tools.Errorf(tools.CodeMalformedRequest, "could not read the request body")
	}
	if int64(len(body)) > limit {
		return nil, tooLarge
	}
	return body, nil
}

// parseCallBody checks the envelope strictly: a JSON object with a string "name",
// an optional object "arguments", and nothing else.
func parseCallBody(body []byte) (string, json.RawMessage, error) {
	malformed := func(format string, args ...any) (string, json.RawMessage, error) {
		return "", nil, tools.Errorf(tools.CodeMalformedRequest, format, args...)
	}
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return malformed(`request body is not valid JSON; send {"name": "<tool>", "arguments": {...}}`)
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return malformed(`request body must be a JSON object {"name": "<tool>", "arguments": {...}}`)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return malformed("request body is not valid JSON")
	}
	for k := range fields {
		if k != "name" && k != "arguments" {
			return malformed("unknown field %q: only \"name\" and \"arguments\" are allowed", tools.Truncate(k, 64))
		}
	}
	rawName, ok := fields["name"]
	if !ok {
		return malformed(`"name" is required`)
	}
	var name string
	if err := json.Unmarshal(rawName, &name); err != nil || bytes.Equal(rawName, []byte("null")) {
		return malformed(`"name" must be a string`)
	}
	if name == "" {
		return malformed(`"name" must not be empty`)
	}
	args := fields["arguments"]
	if t := bytes.TrimSpace(args); len(t) > 0 && t[0] != '{' && !bytes.Equal(t, []byte("null")) {
		return malformed(`"arguments" must be a JSON object`)
	}
	return name, args, nil
}

// etagMatches implements If-None-Match: a list of entity tags, weak or strong, or "*".
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
