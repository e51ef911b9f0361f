package server

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listAnswers are tools/list answers precomputed from the MCP SDK's own: for each
// protocol revision a client may name (and for none), the status, headers and body the
// SDK gives a plain `{"jsonrpc":"2.0","id":…,"method":"tools/list"}`, split around the
// id. Encoding the list is most of what the SDK spends on tools/list, and the list only
// changes with the registry, so a plain request is answered with these bytes; anything
// else (a cursor, _meta, a batch, an unusual id or header) goes to the SDK as before.
type listAnswers map[string]*listAnswer // by Mcp-Protocol-Version ("": absent)

type listAnswer struct {
	status        int
	header        http.Header
	before, after []byte // the body is before + id + after
}

// listProbeID is the id of the probe requests: it stands nowhere else in an answer.
const listProbeID = `"sitetools-tools-list-probe-7c1e"`

// maxListBody is the largest body the fast path reads: a plain tools/list is far
// smaller, and a larger body goes to the SDK whole.
const maxListBody = 1024

// precomputeList asks sdk for tools/list under every revision it supports and keeps the
// answers that succeeded.
func precomputeList(sdk http.Handler) listAnswers {
	out := listAnswers{}
	for _, rev := range append([]string{""}, mcp.SupportedProtocolVersions()...) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":`+listProbeID+`,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if rev != "" {
			req.Header.Set("Mcp-Protocol-Version", rev)
		}
		rec := httptest.NewRecorder()
		sdk.ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		i := bytes.Index(body, []byte(listProbeID))
		if rec.Code != http.StatusOK || i < 0 || bytes.Count(body, []byte(listProbeID)) != 1 ||
			!bytes.Contains(body, []byte(`"result":{`)) || !bytes.Contains(body, []byte(`"tools":[`)) {
			continue
		}
		h := rec.Header().Clone()
		h.Del("Content-Length")
		out[rev] = &listAnswer{status: rec.Code, header: h, before: body[:i], after: body[i+len(listProbeID):]}
	}
	return out
}

// plainID is an id whose JSON the SDK writes back as it came: an integer of up to 15
// digits or a short string of safe characters.
var plainID = regexp.MustCompile(`^(?:0|-?[1-9][0-9]{0,14}|"[A-Za-z0-9._:-]{1,64}")$`)

// serve answers req from the precomputed bytes and reports true, or reports false having
// written nothing, with req.Body as it was, when req is not a plain tools/list.
func (l listAnswers) serve(w http.ResponseWriter, req *http.Request) bool {
	if len(l) == 0 || req.Method != http.MethodPost || req.Body == nil {
		return false
	}
	ans, ok := l[req.Header.Get("Mcp-Protocol-Version")]
	if !ok || !plainHeaders(req.Header) {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxListBody+1))
	rest := req.Body
	req.Body = readCloser{io.MultiReader(bytes.NewReader(body), rest), rest}
	if err != nil || len(body) > maxListBody {
		return false
	}
	id, ok := plainListID(body)
	if !ok {
		return false
	}
	h := w.Header()
	for k, v := range ans.header {
		h[k] = v
	}
	w.WriteHeader(ans.status)
	_, _ = w.Write(ans.before)
	_, _ = w.Write(id)
	_, _ = w.Write(ans.after)
	return true
}

type readCloser struct {
	io.Reader
	io.Closer
}

// plainHeaders is the SDK's check of Content-Type and Accept, passing only what it
// certainly passes.
func plainHeaders(h http.Header) bool {
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	var jsonOK, streamOK bool
	for _, value := range h.Values("Accept") {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				jsonOK = true
			case "text/event-stream":
				streamOK = true
			}
		}
	}
	return jsonOK && streamOK
}

// plainListID returns the id of a body that is exactly one tools/list request with no
// params (or null or {}), and nothing else.
func plainListID(body []byte) ([]byte, bool) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, false
	}
	for k, v := range msg {
		switch k {
		case "jsonrpc":
			if string(v) != `"2.0"` {
				return nil, false
			}
		case "method":
			if string(v) != `"tools/list"` {
				return nil, false
			}
		case "params":
			if p := string(bytes.Join(bytes.Fields(v), nil)); p != "null" && p != "{}" {
				return nil, false
			}
		case "id":
			if !plainID.Match(v) {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if len(msg["jsonrpc"]) == 0 || len(msg["method"]) == 0 || len(msg["id"]) == 0 {
		return nil, false
	}
	return msg["id"], true
}
