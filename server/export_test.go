package server

import (
	"net/http"

	"github.com/sitetools/sitetools/server/web"
)

// WidgetFile is a file of the widget bundle, for the contract test.
type WidgetFile struct {
	Name      string
	Body      []byte
	Immutable bool
}

// WidgetFiles are the files the service bundles from web/widget.
func WidgetFiles() ([]WidgetFile, error) {
	b, err := web.WidgetFiles()
	if err != nil {
		return nil, err
	}
	out := make([]WidgetFile, 0, len(b))
	for _, f := range b {
		out = append(out, WidgetFile{Name: f.Name, Body: f.Body, Immutable: f.Immutable})
	}
	return out, nil
}

// MCPFastList offers r to /mcp's precomputed tools/list and reports whether it answered.
func (a *App) MCPFastList(w http.ResponseWriter, r *http.Request) bool {
	_, list := a.mcp.current()
	return list.serve(w, r)
}

// MCPSDK is /mcp's MCP SDK handler, without the precomputed tools/list in front.
func (a *App) MCPSDK() http.Handler {
	h, _ := a.mcp.current()
	return h
}
