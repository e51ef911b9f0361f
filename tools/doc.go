// Package tools is the tool registry: what a tool is, how it is called and validated,
// and the errors a caller can see. Every channel (JSON endpoint, MCP, chat) is a view of
// one Registry.
package tools
