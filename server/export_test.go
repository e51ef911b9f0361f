package server

import (
	"net/http"
)

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
